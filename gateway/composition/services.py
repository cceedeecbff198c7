"""The capabilities' services of one gateway start, found by a typed key.

The core never names a capability package (``tests/test_layering.py``): the voice, cron, approvals, plugins,
remote MCP... services are built by their own package's ``start(host)`` (``gateway.composition.capabilities``) and
provided here under a ``Key``. A capability's own handlers find its service by the key its package defines
(``ctx.service(CRON)``); the core finds what it needs of a capability by a key of ``gateway.composition.ports``, typed
with the protocol the core defines and the capability implements (``VOICE``: speak a reply, hear a voice note).
"""

from __future__ import annotations

from typing import Generic, TypeVar, cast

from gateway.protocol import Unavailable

__all__ = ["Key", "Services"]

T = TypeVar("T")


class Key(Generic[T]):
    """Names one service and its type; ``what`` is how an error calls it when it is missing."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __repr__(self) -> str:
        return f"Key({self.what!r})"


class Services:
    """One service per key; ``find`` answers None for a capability that did not start here."""

    def __init__(self) -> None:
        self._by_key: dict[Key[object], object] = {}

    def provide(self, key: Key[T], service: T) -> None:
        if key in self._by_key:
            raise ValueError(f"{key.what} provided twice")
        self._by_key[cast("Key[object]", key)] = service

    def find(self, key: Key[T]) -> T | None:
        return cast("T | None", self._by_key.get(cast("Key[object]", key)))

    def get(self, key: Key[T]) -> T:
        """The service, or ``Unavailable`` naming it when its capability did not start on this gateway."""
        found = self.find(key)
        if found is None:
            raise Unavailable(f"{key.what} is not available on this gateway")
        return found
