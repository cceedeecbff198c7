"""Extension points: named things the gateway finds at run time instead of naming them in its code.

Channel types, agent runtimes, the platform package started with the gateway and CLI sub-commands are each an
``Extensions`` registry filled from an entry-point group of the installed distributions
(``[project.entry-points."remoteclaw.channels"]`` in ``pyproject.toml``), so the gateway names no
module of ``channels/``, ``nodes/`` or ``plugins/``, and a plugin package adds a channel or a runtime
the same way the built-in ones are added. ``register`` adds one in process (plugins, tests).

Entries are ``"module:attribute"`` strings until first use: a channel whose library is not installed
or not configured is never imported, so it costs neither start time nor memory.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

__all__ = ["CHANNELS", "CLI_COMMANDS", "PLATFORMS", "RUNTIMES", "Extensions"]

T = TypeVar("T")


@cache
def _installed(group: str) -> dict[str, str]:
    """Entry points of ``group`` as ``name -> "module:attr"`` (read once per process)."""
    return {ep.name: ep.value for ep in entry_points(group=group)}


def _load(ref: str) -> Any:
    module_name, _, attr = ref.partition(":")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class Extensions(Generic[T]):
    """One extension point: entry-point group ``group`` plus what was registered in process.

    Args:
        group: the entry-point group name, e.g. ``remoteclaw.channels``.
        what: how the docs and errors call one entry ("channel type").
    """

    def __init__(self, group: str, what: str) -> None:
        self.group = group
        self.what = what
        self._added: dict[str, str | T] = {}
        self._loaded: dict[str, T] = {}

    def _refs(self) -> dict[str, str | T]:
        return {**_installed(self.group), **self._added}

    def names(self) -> list[str]:
        """Every known name, installed or registered, sorted."""
        return sorted(self._refs())

    def __contains__(self, name: object) -> bool:
        return name in self._refs()

    def register(self, name: str, obj: str | T) -> None:
        """Add (or replace) one entry: the object itself, or ``"module:attr"`` to import on first use."""
        self._added[name] = obj
        self._loaded.pop(name, None)

    def unregister(self, name: str) -> None:
        """Remove an entry added with ``register`` (a plugin being unloaded)."""
        self._added.pop(name, None)
        self._loaded.pop(name, None)

    def load(self, name: str) -> T:
        """The entry called ``name``, imported on first use.

        Raises:
            KeyError: no entry has that name.
            ImportError: its module (or a library it needs) is not installed.
        """
        if name in self._loaded:
            return self._loaded[name]
        ref = self._refs()[name]
        obj: T = _load(ref) if isinstance(ref, str) else ref
        self._loaded[name] = obj
        return obj

    def unknown(self, name: str) -> str:
        """A message for a name that is not there, listing those that are."""
        return f"unknown {self.what}: {name} (known: {', '.join(self.names()) or 'none'})"


CHANNELS: Extensions[Any] = Extensions("remoteclaw.channels", "channel type")
"""Channel name -> its ``ChannelKind`` (``channels.telegram:KIND``), or a ``Channel`` subclass a plugin or test adds."""
RUNTIMES: Extensions[Any] = Extensions("remoteclaw.runtimes", "agent runtime")
"""Runtime name -> ``Runtime`` subclass (``gateway.agents.runtimes.claude:ClaudeRuntime``)."""
PLATFORMS: Extensions[Any] = Extensions("remoteclaw.platforms", "platform package")
"""Name -> ``async def start(host: PlatformHost)`` of the package that connects the gateway to chats (``channels``)."""
CLI_COMMANDS: Extensions[Any] = Extensions("remoteclaw.cli", "command")
"""Name -> ``register(subparsers)`` adding a ``remoteclaw`` sub-command."""
