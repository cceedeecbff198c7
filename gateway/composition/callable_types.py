"""The types of the callables a service is given instead of the gateway: to send an event, to start background
work, to call a gateway method in process. Types only, importing nothing of the gateway, so any service can name
them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from gateway.dispatch.callers import Caller

__all__ = ["Broadcast", "MethodCall", "Spawn"]

Spawn = Callable[[Coroutine[Any, Any, None], str], "asyncio.Task[None]"]
"""``spawn(work, name)``: fire-and-forget work of this gateway start (``Gateway.spawn``)."""

class MethodCall(Protocol):
    """A gateway method called in process as ``caller`` (``CapabilityHost.call``)."""

    def __call__(self, method: str, params: Any, caller: Caller, *, request_id: str = "") -> Awaitable[Any]: ...


Broadcast = Callable[..., int]
"""``broadcast(event, payload, *, scope=READ, drop_if_slow=False)``: to every operator holding ``scope``, on every
replica; answers how many of this replica's sockets got it."""
