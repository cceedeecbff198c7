"""Gateway methods: one module per method group of the core here, the node methods beside the rest of the nodes'
gateway side (``gateway.devices.methods``), plus the method modules each capability declares
(``gateway.composition.capabilities``). Importing a module registers its methods.

A start imports none of them: ``defer_all`` gives the registry every method's name and module from
``index.json``, and a module is imported at the first call of one of its methods (``Registry.defer``). The index
is written by ``python -m gateway.dispatch.method_index`` and a test keeps it equal to what the modules declare.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import orjson

__all__ = ["INDEX_FILE", "defer_all", "load_all", "modules"]


_loaded = False

ELSEWHERE = ("gateway.devices.methods", "gateway.people.methods")
"""Core method modules kept in the package of what they serve: ``node.*`` with the node service and its store,
``people.*`` with the people service."""

INDEX_FILE = Path(__file__).with_name("index.json")
"""Module -> the method ``names`` and ``aliases`` it declares (``gateway.dispatch.method_index``)."""


def modules() -> list[str]:
    """Every method module of the core and the capabilities, in import order."""
    from gateway.composition.capabilities import declared

    return [*(f"{__name__}.{info.name}" for info in pkgutil.iter_modules(__path__)), *ELSEWHERE,
            *(m for capability in declared() for m in capability.methods)]


def load_all() -> None:
    """Import every method module once, so their ``@method`` declarations register."""
    global _loaded
    if _loaded:
        return
    for name in modules():
        importlib.import_module(name)
    _loaded = True


def defer_all() -> None:
    """Register every method by name, its module imported at first use (all of them when the index is missing)."""
    from gateway.dispatch.registry import registry

    try:
        index = orjson.loads(INDEX_FILE.read_bytes())
    except FileNotFoundError:
        load_all()
        return
    registry.defer(index, load_all)
