"""Applying a validated config: write it, then hot-apply live sections or restart in place.

Sections in ``RESTART_SECTIONS`` shape the server itself (port, auth, limits): changing them restarts
the gateway in place (plugins are loaded and unloaded live). Every other section is applied live:
services that care register a listener with ``ConfigChanges.listen`` and are called with the old and
new config. A ``config.changed`` event tells operators what changed.

Both the config methods (which write the file) and the file watcher (which has just read it)
come through ``ConfigChanges.apply``, so a change is applied the same way whoever made it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from gateway.config import Config, secret_values
from gateway.config.model import secret_paths
from gateway.logs import sink

if TYPE_CHECKING:
    from pathlib import Path

    from gateway.config import ConfigStore


class ConfigPublisher(Protocol):
    """Where a change is published before it is written, when replicas share one config
    (``gateway.config.shared.SharedConfig``)."""

    async def publish(self, data: dict[str, Any], *, force: bool = False) -> None: ...

__all__ = ["RESTART_SECTIONS", "ConfigChanges", "ConfigPublisher", "Listener", "changed_sections", "register_secrets"]

log = structlog.get_logger("gateway.config")

RESTART_SECTIONS = frozenset({"gateway", "api"})

Listener = Callable[[Config, Config, frozenset[str]], Awaitable[None]]


def changed_sections(old: Config, new: Config) -> frozenset[str]:
    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    return frozenset(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def register_secrets(data: dict[str, Any], config: Config) -> None:
    """Tell the logger every secret the config holds (file values and env overrides alike)."""
    for value in secret_values(data, secret_paths()):
        sink.add_secret(value)
    for value in secret_values(config.model_dump(mode="json"), secret_paths()):
        sink.add_secret(value)


class ConfigChanges:
    """Applies a validated config, and tells the services that follow it.

    Args:
        store: the config in memory and on disk.
        broadcast: sends ``config.changed`` to operators.
        restart: restarts the gateway in place (``Gateway.request_restart``).
        logs_dir: where the log files are (re-configured when the ``logging`` section changes).
    """

    def __init__(self, store: ConfigStore, broadcast: Callable[..., int], restart: Callable[..., None],
                 logs_dir: Path) -> None:
        self._store = store
        self._broadcast = broadcast
        self._restart = restart
        self._logs_dir = logs_dir
        self._listeners: list[Listener] = []
        self.shared: ConfigPublisher | None = None
        """The deployment's one config on a shared database (``gateway.config.shared``); None on one machine."""

    def listen(self, listener: Listener) -> None:
        """Call ``listener(old, new, changed_sections)`` after every live config change."""
        self._listeners.append(listener)

    async def apply(self, data: dict[str, Any], config: Config, *, source: str, note: str | None = None,
                    delay_ms: int = 0, write: bool = True) -> dict[str, Any]:
        """Make ``config`` current (writing ``data`` to disk when ``write``) and apply it.

        Call with the store's ``lock`` held. Returns what happened: the changed sections and whether a restart
        was scheduled.
        """
        store = self._store
        old = store.config
        if self.shared is not None and source != "replica":
            await self.shared.publish(data)  # first: refused if another replica changed it (nothing written)
        register_secrets(data, config)
        if write:
            await asyncio.to_thread(store.commit, data, config)
        else:
            store.adopt(data, config)
        changed = changed_sections(old, config)
        restart = bool(changed & RESTART_SECTIONS)
        log.info("config changed", source=source, sections=sorted(changed), restart=restart, note=note,
                 hash=store.hash[:12])
        self._broadcast("config.changed", {"hash": store.hash, "sections": sorted(changed), "restart": restart,
                                           "source": source})
        if restart:
            self._restart(f"config change ({', '.join(sorted(changed & RESTART_SECTIONS))})",
                          delay_ms=max(delay_ms, 100))
        elif changed:
            if "logging" in changed:
                lc = config.logging
                sink.configure(self._logs_dir, level=lc.level, console_level=lc.consoleLevel,
                               max_bytes=lc.maxFileBytes, keep=lc.keepFiles)
            for listener in list(self._listeners):
                try:
                    await listener(old, config, changed)
                except Exception:
                    log.exception("config listener failed", listener=getattr(listener, "__qualname__", "?"))
        return {"changed": sorted(changed), "restart": restart}
