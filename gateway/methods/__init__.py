"""Gateway methods: one module per method group of the core here, plus the method modules each capability declares
(``gateway.capabilities``). Importing a module registers its methods."""

from __future__ import annotations

import importlib
import pkgutil

__all__ = ["load_all"]


_loaded = False


def load_all() -> None:
    """Import every module in this package once, so their ``@method`` declarations register."""
    global _loaded
    if _loaded:
        return
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    from gateway.capabilities import declared

    for name in (m for capability in declared() for m in capability.methods):
        importlib.import_module(name)
    _loaded = True
