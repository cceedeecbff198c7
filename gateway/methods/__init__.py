"""Gateway methods, one module per method group of the core, plus the ``methods`` module of each capability
subpackage (``CAPABILITY_METHODS``). Importing a module registers its methods."""

from __future__ import annotations

import importlib
import pkgutil

__all__ = ["load_all"]

CAPABILITY_METHODS: list[str] = [
    "gateway.mcp_http.methods",
    "gateway.cron.methods",
    "gateway.approvals.methods",
    "gateway.approvals.policy",
    "gateway.plugins.methods",
    "gateway.devices.methods",
    "gateway.browser.methods",
    "gateway.browser.serve",
    "gateway.voice.methods",
]
"""Method modules that live in a capability's own subpackage (``gateway/<capability>/methods.py``)."""

_loaded = False


def load_all() -> None:
    """Import every module in this package once, so their ``@method`` declarations register."""
    global _loaded
    if _loaded:
        return
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    for name in CAPABILITY_METHODS:
        importlib.import_module(name)
    _loaded = True
