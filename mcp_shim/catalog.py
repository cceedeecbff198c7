"""Which tools a run gets: tiers (owner or not), profiles, and plugin tools.

Answering ``tools/list`` needs only this module and the tool tables, so it imports nothing heavy
(no asyncio, no websockets): the list is ready a few milliseconds after the process starts.

Tiers: the 20 baseline tools (session, message, heartbeat, approvals) are for every run; the 34 owner tools
(cron, gateway, nodes, canvas, browser, tts, a2a) only when ``REMOTECLAW_SENDER_IS_OWNER=true``.
Profiles then narrow the set further (see ``PROFILE_GROUPS``).
"""

from __future__ import annotations

import sys

from mcp_shim.context import Context
from mcp_shim.tools import BASELINE_GROUPS, BUILTIN, OWNER_GROUPS, Tool
from mcp_shim.tools.plugin import from_manifest

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

__all__ = ["PROFILE_GROUPS", "Catalog"]

_ALL = frozenset((*BASELINE_GROUPS, *OWNER_GROUPS, "plugin"))
_DYNAMIC = ("plugin", "desktop")
"""Groups whose tools come from the gateway (the tools file or a fetch), replaced as a whole when it changes."""

PROFILE_GROUPS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # profile: (groups whose every tool is in, groups whose read-only tools are in)
    # ``approvals`` is in every profile: Claude Code's permission prompts go through approval_prompt.
    "minimal": (frozenset({"heartbeat", "approvals"}), frozenset({"session"})),
    "messaging": (frozenset({"session", "message", "heartbeat", "approvals", "plugin"}), frozenset()),
    "coding": (frozenset({"session", "heartbeat", "approvals", "nodes", "canvas", "browser", "desktop", "a2a",
                          "plugin"}),
               frozenset({"gateway", "cron"})),
    "full": (_ALL, frozenset()),
}


class Catalog:
    """All tools this shim knows, and the ones this run may see and call."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.tools: dict[str, Tool] = {t.name: t for t in BUILTIN}
        self.warnings: list[str] = []
        self.plugins_from_gateway = ctx.plugin_tools_file is None
        self.await_before = False
        """A plugin can block or rewrite calls: wait for the before-hook's answer (else it is fire and forget)."""
        self._listing: list[dict[str, Any]] | None = None
        if ctx.plugin_tools_file:
            self._load_manifest(ctx.plugin_tools_file)

    def _load_manifest(self, path: str) -> None:
        import json

        try:
            with open(path, "rb") as fh:
                data = json.loads(fh.read())
        except (OSError, ValueError) as exc:
            self._warn(f"cannot read REMOTECLAW_PLUGIN_TOOLS_FILE {path}: {exc}")
            return
        self.set_plugins(data)

    def _warn(self, text: str) -> None:
        self.warnings.append(text)
        print(f"remoteclaw-mcp: {text}", file=sys.stderr)

    def set_plugins(self, data: Any) -> bool:
        """Replace the plugin tools with those in ``{tools: [...]}`` and the desktop tools with those in
        ``{desktop: [...]}`` (``tools.desktop``); returns whether the list changed."""
        from mcp_shim.tools.desktop import from_listing

        builtin = {name: t for name, t in self.tools.items() if t.group not in _DYNAMIC}
        tools, warnings = from_manifest(data, set(builtin))
        desktop, more = from_listing(data.get("desktop") if isinstance(data, dict) else None,
                                     set(builtin) | {t.name for t in tools})
        for warning in [*warnings, *more]:
            self._warn(warning)
        tools += desktop
        new = {**builtin, **{t.name: t for t in tools}}
        old_dynamic = sorted((t.name, t.description) for t in self.tools.values() if t.group in _DYNAMIC)
        changed = old_dynamic != sorted((t.name, t.description) for t in tools)
        self.tools = new  # one assignment: the stdin thread always sees a whole table
        hooks = data.get("hooks") if isinstance(data, dict) else None
        self.await_before = isinstance(hooks, list) and "before_tool_call" in hooks
        self._listing = None
        return changed

    def refusal(self, tool: Tool) -> str | None:
        """Why this run may not use ``tool``, or ``None`` when it may."""
        if (tool.owner_only or tool.group in OWNER_GROUPS) and not self.ctx.sender_is_owner:
            return "this tool is only for the bot's owner, and this run is not on the owner's behalf"
        whole, read_only = PROFILE_GROUPS[self.ctx.tool_profile]
        if tool.group in whole or (tool.group in read_only and tool.read_only):
            return None
        return f"this tool is not in the '{self.ctx.tool_profile}' tool profile of this run"

    def visible(self) -> list[Tool]:
        return [t for t in self.tools.values() if self.refusal(t) is None]

    def listing(self) -> list[dict[str, Any]]:
        """The ``tools/list`` result's ``tools`` (built once, until the plugin tools change)."""
        listing = self._listing
        if listing is None:
            listing = self._listing = [t.listing() for t in self.visible()]
        return listing

    def scopes(self) -> list[str]:
        """Least privilege: read+write for every run; admin and pairing only for the owner."""
        scopes = ["operator.read", "operator.write"]
        if self.ctx.sender_is_owner:
            scopes += ["operator.admin", "operator.pairing"]
        return scopes
