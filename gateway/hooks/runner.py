"""Plugin hooks: named moments where plugins observe the gateway, or decide what happens next.

Two kinds (``HOOKS`` says which is which):
- **observers** (``fire``) are started in the background and never delay the caller: ``after_tool_call``,
  ``agent_end``, ``message_received``, ``message_sent``, ``session_start``, ``session_end``,
  ``gateway_start``, ``gateway_stop``.
- **deciders** (``decide``) are awaited, one handler after another by priority (highest first), each seeing
  what the previous one changed: ``before_tool_call`` may block a call (``{"block": True, "reason": ...}``)
  or rewrite its params (``{"params": {...}}``); ``message_sending`` may rewrite the text
  (``{"content": ...}``) or cancel the message (``{"cancel": True, "reason": ...}``);
  ``before_agent_start`` may add context to the prompt (``{"prependContext": ...}``).

A handler that raises or runs past its timeout is logged and skipped: a broken plugin never stops a
tool call, a message or the gateway. With no handler for a hook, both calls cost one dict lookup.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import structlog

__all__ = ["DECIDE_TIMEOUT_S", "HOOKS", "OBSERVE_TIMEOUT_S", "HookHandler", "HookRunner"]

log = structlog.get_logger("gateway.hooks")

HOOKS: dict[str, Literal["observe", "decide"]] = {
    "before_tool_call": "decide",
    "after_tool_call": "observe",
    "before_agent_start": "decide",
    "agent_end": "observe",
    "message_received": "observe",
    "message_sending": "decide",
    "message_sent": "observe",
    "session_start": "observe",
    "session_end": "observe",
    "gateway_start": "observe",
    "gateway_stop": "observe",
}

DECIDE_TIMEOUT_S = 5.0
"""Default limit for a deciding handler: the caller (a tool call, a message) waits this long at most."""
OBSERVE_TIMEOUT_S = 30.0
"""Default limit for an observer (it runs in the background, but must end)."""

_STOPPERS = {"before_tool_call": "block", "message_sending": "cancel"}


@dataclass(frozen=True, slots=True)
class HookHandler:
    plugin_id: str
    hook: str
    fn: Callable[[dict[str, Any]], Any]
    priority: int = 0
    timeout_s: float | None = None


class HookRunner:
    """Every hook handler of the loaded plugins, and the two ways of running them."""

    def __init__(self) -> None:
        self._handlers: dict[str, list[HookHandler]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def add(self, handler: HookHandler) -> None:
        if handler.hook not in HOOKS:
            raise ValueError(f"unknown hook {handler.hook!r} (known: {', '.join(HOOKS)})")
        handlers = [*self._handlers.get(handler.hook, []), handler]
        handlers.sort(key=lambda h: -h.priority)  # stable: equal priorities keep load order
        self._handlers[handler.hook] = handlers

    def remove_plugin(self, plugin_id: str) -> None:
        for hook, handlers in list(self._handlers.items()):
            kept = [h for h in handlers if h.plugin_id != plugin_id]
            if kept:
                self._handlers[hook] = kept
            else:
                del self._handlers[hook]

    def has(self, hook: str) -> bool:
        return hook in self._handlers

    def names(self) -> list[str]:
        """Hooks that have at least one handler."""
        return sorted(self._handlers)

    # -- running ---------------------------------------------------------------------------------

    async def _run(self, handler: HookHandler, event: dict[str, Any], default_timeout: float) -> Any:
        timeout = handler.timeout_s or default_timeout
        try:
            result = handler.fn(dict(event))
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(result, timeout)
            return result
        except TimeoutError:
            log.warning("plugin hook timed out, skipped", plugin=handler.plugin_id, hook=handler.hook,
                        timeout_s=timeout)
        except Exception:
            log.exception("plugin hook failed, skipped", plugin=handler.plugin_id, hook=handler.hook)
        return None

    def fire(self, hook: str, event: dict[str, Any]) -> None:
        """Start every observer of ``hook`` in the background; returns at once."""
        handlers = self._handlers.get(hook)
        if not handlers:
            return
        for handler in handlers:
            task = asyncio.ensure_future(self._run(handler, event, OBSERVE_TIMEOUT_S))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def decide(self, hook: str, event: dict[str, Any]) -> dict[str, Any]:
        """Run the deciding handlers of ``hook`` in priority order; returns the event as they left it.

        The result holds ``block``/``cancel`` (with ``reason`` and ``plugin``) when a handler stopped the
        action; later handlers then do not run. ``prependContext`` values of several handlers are joined.
        """
        handlers = self._handlers.get(hook)
        if not handlers:
            return event
        current = dict(event)
        stopper = _STOPPERS.get(hook)
        for handler in handlers:
            result = await self._run(handler, current, DECIDE_TIMEOUT_S)
            if not isinstance(result, dict):
                continue
            if stopper and result.get(stopper):
                reason = str(result.get("reason") or f"{stopper}ed by plugin {handler.plugin_id}")
                return {**current, stopper: True, "reason": reason, "plugin": handler.plugin_id}
            for key, value in result.items():
                if key == "prependContext" and isinstance(value, str) and value.strip():
                    before = current.get("prependContext")
                    current[key] = f"{before}\n\n{value}" if before else value
                elif key in current or key in ("params", "content"):
                    current[key] = value
        return current

    async def drain(self, timeout: float) -> None:
        """Give running observers up to ``timeout`` seconds (on stop), then cancel the rest."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
        for task in list(self._tasks):
            task.cancel()
