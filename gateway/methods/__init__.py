"""Gateway methods: one module per method group of the core here, the node methods beside the rest of the nodes'
gateway side (``gateway.devices.methods``), plus the method modules each capability declares
(``gateway.composition.capabilities``). Importing a module registers its methods."""

from __future__ import annotations

import importlib
import pkgutil

__all__ = ["load_all"]


_loaded = False

ELSEWHERE = ("gateway.devices.methods", "gateway.people.methods")
"""Core method modules kept in the package of what they serve: ``node.*`` with the node service and its store,
``people.*`` with the people service."""


def load_all() -> None:
    """Import every module in this package once, so their ``@method`` declarations register."""
    global _loaded
    if _loaded:
        return
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    for name in ELSEWHERE:
        importlib.import_module(name)
    from gateway.composition.capabilities import declared

    for name in (m for capability in declared() for m in capability.methods):
        importlib.import_module(name)
    _loaded = True
