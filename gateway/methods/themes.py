"""``themes.list``: the Control UI's colour themes, for its Appearance settings.

The themes are the Control UI's own (built into its files); a gateway only remembers which one its
owner picked. We keep no such preference yet, so the answer is the built-in list with OpenClaw's default
(``claw``, following the system's light or dark mode) selected; ``themes.set`` is not implemented.
"""

from __future__ import annotations

from typing import Any, Final

from gateway.access import Access
from gateway.dispatch.dispatcher import READ, CallContext, NoParams, method

BUILTIN_THEMES: Final = (("claw", "Claw"), ("knot", "Knot"), ("dash", "Dash"), ("absolutely", "Absolutely"),
                         ("tide", "Tide"), ("beacon", "Beacon"), ("phosphor", "Phosphor"), ("crt", "CRT"),
                         ("manuscript", "Manuscript"), ("rose", "Rosé"), ("miami", "Miami"))
"""The theme ids the Control UI 2026.9.6 ships (its ``index.html`` lists the same)."""


def _theme(theme_id: str, name: str) -> dict[str, Any]:
    return {"id": theme_id, "name": name, "description": f"The Control UI's built-in {name} theme.",
            "source": "builtin", "modes": ["light", "dark"]}


@method("themes.list", access=Access("gateway", "read"), scope=READ)
async def themes_list(_p: NoParams, _ctx: CallContext) -> dict[str, Any]:
    """The built-in themes, the default one selected for the whole gateway."""
    themes = [_theme(i, n) for i, n in BUILTIN_THEMES]
    return {"current": {"id": "claw", "mode": "system", "scope": "gateway", "overrides": {}},
            "theme": themes[0], "themes": themes}
