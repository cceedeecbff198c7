"""Gateway methods, one module per method group. Importing a module registers its methods."""

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
    _loaded = True
