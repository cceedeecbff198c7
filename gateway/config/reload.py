"""Applying a validated config: write it, then hot-apply live sections or restart in place.

Sections in ``RESTART_SECTIONS`` shape the server itself (port, auth, limits): changing them restarts
the gateway in place (plugins are loaded and unloaded live). Every other section is applied live:
subsystems that care register a listener with ``add_listener`` and are called with the old and
new config. A ``config.changed`` event tells operators what changed.

Both the config methods (which write the file) and the file watcher (which has just read it)
come through ``apply_committed``, so a change is applied the same way whoever made it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from gateway import logs
from gateway.config import Config, secret_values
from gateway.config.model import secret_paths

if TYPE_CHECKING:
    from gateway.core import Gateway

__all__ = ["RESTART_SECTIONS", "add_listener", "apply_committed", "changed_sections", "register_secrets"]

log = structlog.get_logger("gateway.config")

RESTART_SECTIONS = frozenset({"gateway"})

Listener = Callable[[Config, Config, frozenset[str]], Awaitable[None]]


def add_listener(gw: Gateway, listener: Listener) -> None:
    """Call ``listener(old, new, changed)`` after every live config change."""
    gw.config_listeners.append(listener)


def changed_sections(old: Config, new: Config) -> frozenset[str]:
    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    return frozenset(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def register_secrets(data: dict[str, Any], config: Config) -> None:
    """Tell the logger every secret the config holds (file values and env overrides alike)."""
    for value in secret_values(data, secret_paths()):
        logs.add_secret(value)
    for value in secret_values(config.model_dump(mode="json"), secret_paths()):
        logs.add_secret(value)


async def apply_committed(gw: Gateway, data: dict[str, Any], config: Config, *, source: str,
                          note: str | None = None, delay_ms: int = 0, write: bool = True) -> dict[str, Any]:
    """Make ``config`` current (writing ``data`` to disk when ``write``) and apply it.

    Call with ``gw.config_store.lock`` held. Returns what happened: the changed sections and
    whether a restart was scheduled.
    """
    store = gw.config_store
    old = store.config
    register_secrets(data, config)
    if write:
        await asyncio.to_thread(store.commit, data, config)
    else:
        store.adopt(data, config)
    changed = changed_sections(old, config)
    restart = bool(changed & RESTART_SECTIONS)
    log.info("config changed", source=source, sections=sorted(changed), restart=restart, note=note,
             hash=store.hash[:12])
    gw.broadcast("config.changed", {"hash": store.hash, "sections": sorted(changed), "restart": restart,
                                    "source": source})
    if restart:
        gw.request_restart(f"config change ({', '.join(sorted(changed & RESTART_SECTIONS))})",
                           delay_ms=max(delay_ms, 100))
    elif changed:
        if "logging" in changed:
            lc = config.logging
            logs.configure(gw.logs_dir, level=lc.level, console_level=lc.consoleLevel,
                           max_bytes=lc.maxFileBytes, keep=lc.keepFiles)
        for listener in list(gw.config_listeners):
            try:
                await listener(old, config, changed)
            except Exception:
                log.exception("config listener failed", listener=getattr(listener, "__qualname__", "?"))
    return {"changed": sorted(changed), "restart": restart}
