"""Gateway methods: the gateway's own surface here, each core concept's methods in its own package
(``ELSEWHERE``), plus the method modules each capability declares (``gateway.composition.capabilities``).
Importing a module registers its methods.

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

ELSEWHERE = ("gateway.sessions.methods", "gateway.sessions.views", "gateway.sessions.subscriptions",
             "gateway.runs.chat_methods", "gateway.runs.chat_startup", "gateway.runs.agent_methods",
             "gateway.usage.methods", "gateway.projects.methods", "gateway.projects.handoff_methods",
             "gateway.platforms.message_methods", "gateway.platforms.sender_pairing_methods",
             "gateway.devices.methods", "gateway.devices.pairing_methods", "gateway.people.methods",
             "gateway.hooks.methods", "gateway.logs.methods")
"""Core method modules kept in the package of the concept they serve (its service and store beside them):
sessions, runs (``chat.*``, ``agent``), usage, projects, the platforms' messages and sender pairing, nodes and
device pairing, people, plugin hooks, the log. What stays in this package is the gateway's own surface (health,
config, host, update)."""

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
