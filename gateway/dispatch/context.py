"""What a method handler gets besides its params: ``CallContext``, over the parts of one gateway start.

``HandlerParts`` is built once per start by the composition root (``gateway.composition.wiring``), after the
core services: its fields are everything a handler may use, and none of them is the ``Gateway``. The handlers
about the server itself (``health``, ``system.info``, restart) reach it through ``ServerControl``, the few
things they need of it. A ``CallContext`` is made per call. It is the caller, the request, the object the access
model found, and those parts. Its members below are the parts by the names handlers use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from gateway.composition.ports import AUDIT
from gateway.dispatch.callers import READ
from gateway.protocol import Unavailable

if TYPE_CHECKING:
    from gateway.access.doors import AccessControl, Located
    from gateway.agents.executor import AgentExecutor
    from gateway.bus import EventBus
    from gateway.composition.callable_types import Broadcast
    from gateway.composition.services import Key, Services
    from gateway.config import Config, ConfigStore
    from gateway.config.reload import ConfigChanges
    from gateway.devices.service import NodeService
    from gateway.dispatch.callers import Caller
    from gateway.hooks.runner import HookRunner
    from gateway.people.service import PeopleService
    from gateway.platforms.interface import ChatPlatforms
    from gateway.runs import RunQueue
    from gateway.runs.replicas import ReplicaWatch
    from gateway.server.connection import Connection
    from gateway.server.presence import PresenceBoard
    from gateway.sessions.events import SessionSubscriptions
    from gateway.sessions.service import SessionsService
    from gateway.store import Database

__all__ = ["CallContext", "HandlerParts", "ServerControl"]

_S = TypeVar("_S")


class ServerControl(Protocol):
    """What the server's own methods (``status``, ``health``, ``system-presence``, ``system.info``, restart) need
    of the running gateway, which implements it: its identity, its connections and who watches them, what its
    start recovered, and the restart."""

    version: str
    instance_id: str
    replica_id: str
    started_at_ms: int
    state_dir: Path
    connections: dict[str, Connection]
    presence_board: PresenceBoard
    recovered: dict[str, int]
    replicas: ReplicaWatch | None
    bus: EventBus | None

    def health(self) -> dict[str, Any]: ...

    def uptime_ms(self) -> int: ...

    def presence(self) -> list[dict[str, Any]]: ...

    def request_restart(self, reason: str, *, delay_ms: int = 0) -> None: ...


class Dispatch(Protocol):
    """A method called in process (``Dispatcher.call``) with these parts."""

    def __call__(self, name: str, raw_params: Any, caller: Caller, parts: HandlerParts, *,
                 request_id: str = "") -> Awaitable[Any]: ...


@dataclass(frozen=True, slots=True)
class HandlerParts:
    """Everything method handlers may use of one gateway start."""

    access: AccessControl
    db: Database
    config_store: ConfigStore
    config_changes: ConfigChanges
    """Applies a validated config (what ``config.patch``/``set``/``apply`` commit)."""
    state_dir: Path
    logs_dir: Path
    sessions: SessionsService
    people: PeopleService
    runs: RunQueue
    agents: AgentExecutor
    nodes: NodeService | None
    hooks: HookRunner
    subscriptions: SessionSubscriptions
    services: Services
    broadcast: Broadcast
    platforms: Callable[[], ChatPlatforms | None]
    """The chat platforms once attached (None before, or when no platform package runs here)."""
    listen: Callable[[], tuple[str, int]]
    close_connections: Callable[[Callable[[Caller], bool], str], int]
    dispatch: Dispatch
    server: ServerControl


@dataclass(slots=True)
class CallContext:
    """Who calls, and the typed parts the handler uses (``ctx.sessions``, ``ctx.runs``, ``ctx.platforms``, a
    capability's ``ctx.service(CRON)``...), so a handler shows what it depends on."""

    caller: Caller
    parts: HandlerParts
    request_id: str
    method: str
    target: Located | None = None
    """The object the request named, as the access model found and allowed it (``gateway.access``)."""

    @property
    def access(self) -> AccessControl:
        """The authorization model's doors: for a handler answering a list (``visible``) or meeting a second
        object on its way (``check``)."""
        return self.parts.access

    @property
    def platforms(self) -> ChatPlatforms:
        """The chat platforms, or ``Unavailable`` when none is installed or attached on this gateway."""
        platforms = self.parts.platforms()
        if platforms is None:
            raise Unavailable("channels are not available on this gateway")
        return platforms

    def attached_platforms(self) -> ChatPlatforms | None:
        """The chat platforms, or None when none is attached (a handler that answers without them)."""
        return self.parts.platforms()

    @property
    def db(self) -> Database:
        return self.parts.db

    @property
    def config(self) -> Config:
        """The current config (it changes live: read it per use)."""
        return self.parts.config_store.config

    @property
    def config_store(self) -> ConfigStore:
        return self.parts.config_store

    @property
    def config_changes(self) -> ConfigChanges:
        return self.parts.config_changes

    @property
    def state_dir(self) -> Path:
        return self.parts.state_dir

    @property
    def logs_dir(self) -> Path:
        return self.parts.logs_dir

    @property
    def sessions(self) -> SessionsService:
        return self.parts.sessions

    @property
    def people(self) -> PeopleService:
        return self.parts.people

    @property
    def runs(self) -> RunQueue:
        return self.parts.runs

    @property
    def agents(self) -> AgentExecutor:
        return self.parts.agents

    @property
    def nodes(self) -> NodeService | None:
        return self.parts.nodes

    @property
    def hooks(self) -> HookRunner:
        return self.parts.hooks

    @property
    def subscriptions(self) -> SessionSubscriptions:
        return self.parts.subscriptions

    @property
    def services(self) -> Services:
        return self.parts.services

    @property
    def server(self) -> ServerControl:
        """The running gateway, for the server's own methods only (``tests/test_layering.py`` keeps it so)."""
        return self.parts.server

    @property
    def listen(self) -> tuple[str, int]:
        """Where this gateway listens (what a link to it it hands out is made from)."""
        return self.parts.listen()

    def broadcast(self, event: str, payload: Any = None, *, scope: str = READ,
                  drop_if_slow: bool = False) -> int:
        """Send an event to every operator holding ``scope``, on every replica."""
        return self.parts.broadcast(event, payload, scope=scope, drop_if_slow=drop_if_slow)

    def close_connections(self, holds: Callable[[Caller], bool], reason: str) -> int:
        """Close this replica's connections whose caller ``holds`` a credential that no longer counts (a removed
        person, a revoked sign-in, a rejected device); how many."""
        return self.parts.close_connections(holds, reason)

    async def call(self, method: str, params: Any) -> Any:
        """Another method, in process, as this caller (validation, access and hooks as over the wire)."""
        return await self.parts.dispatch(method, params, self.caller, self.parts, request_id=self.request_id)

    def service(self, key: Key[_S]) -> _S:
        """A capability's service (``gateway.composition.services``), or ``Unavailable`` naming it when that
        capability did not start on this gateway."""
        return self.parts.services.get(key)

    async def audit(self, action: str, target: str | None = None, details: dict[str, Any] | None = None) -> None:
        """Write to the audit log that this caller did ``action`` (``gateway.composition.ports.AUDIT``); call it
        once the action succeeded. Never raises; nothing is written when the audit capability did not start."""
        auditor = self.parts.services.find(AUDIT)
        if auditor is not None:
            await auditor.record(self.caller, action, target, details)
