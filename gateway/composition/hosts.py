"""The hosts: what a package plugged into the gateway is given, instead of the whole ``Gateway``.

Each host is a frozen record of the parts it hands out, built by the composition root
(``gateway.composition.wiring``), which is the one module that knows the whole ``Gateway``. A host holds no
reference to the gateway, so what a package can reach is exactly the fields below. ``GatewayHost`` is what every
host offers: the live config, the state folder, HTTP routes, the authorization model's doors, config-change
listeners and clean-up. ``CapabilityHost`` is given to each capability's ``start(host)``
(``gateway.composition.capabilities``). It adds the database, events, background tasks, the core services,
in-process method calls and the other capabilities' services. The capability takes what its service needs and
passes it to the service's constructor. ``PlatformHost`` (``gateway.platforms.host``) is given to a chat
platform package.

Where a part changes while the gateway runs (the listening address once bound, the chat platforms once attached,
the restart reason), the host holds a function that reads it, called per use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from gateway.access.doors import AccessControl
    from gateway.access.http import HttpCredentials
    from gateway.agents.executor import AgentExecutor
    from gateway.bus import EventBus
    from gateway.composition.callable_types import Broadcast
    from gateway.composition.event_taps import EventTap
    from gateway.composition.services import Services
    from gateway.config import Config, ConfigStore
    from gateway.config.reload import ConfigChanges, Listener
    from gateway.devices.service import NodeService
    from gateway.dispatch.callers import Caller
    from gateway.hooks.runner import HookRunner
    from gateway.people.service import PeopleService
    from gateway.platforms.interface import ChatPlatforms
    from gateway.runs import RunQueue
    from gateway.runs.replicas import ReplicaWatch
    from gateway.sessions.service import SessionsService
    from gateway.store import Database

__all__ = ["CapabilityHost", "GatewayHost", "InProcessCall", "StopHook"]

StopHook = Callable[[], Awaitable[None]]


class InProcessCall(Protocol):
    """A gateway method called in process as ``caller`` (validation, scopes and hooks as over the wire)."""

    def __call__(self, method: str, params: Any, caller: Caller, *, request_id: str = "") -> Awaitable[Any]: ...


@dataclass(frozen=True, slots=True)
class GatewayHost:
    """What every host offers of one running gateway."""

    config_store: ConfigStore
    """The live config (``.config``: read it per use, it changes) and its file."""
    state_dir: Path
    access: AccessControl
    """The one authorization model's doors (``gateway.access``): a capability's finders, lists, routes."""
    http_credentials: HttpCredentials
    """How an HTTP route turns a request's credential into a caller (``gateway.access.http``)."""
    routes: list[BaseRoute]
    """The gateway's HTTP routes, served on its port once every package has started (``add_route``)."""
    config_changes: ConfigChanges
    on_stop: Callable[[StopHook], None]
    """Clean-up when this gateway stops (last registered runs first)."""

    @property
    def config(self) -> Config:
        """The current config (read it per use: it changes live)."""
        return self.config_store.config

    def add_route(self, route: BaseRoute) -> None:
        """Serve an HTTP route (a page, a webhook) on the gateway's port."""
        self.routes.append(route)

    def on_config_change(self, listener: Listener) -> None:
        """Call ``listener(old, new, changed_sections)`` after every live config change."""
        self.config_changes.listen(listener)

    async def may_read_session(self, request: Request, session_key: str, *, query: bool = False) -> int:
        """An HTTP route's decision on a conversation's thing: 200, 401 (no live credential) or 403
        (``gateway.access.http``)."""
        return await self.http_credentials.may_read_session(request, session_key, query=query)


@dataclass(frozen=True, slots=True)
class CapabilityHost(GatewayHost):
    """The gateway as a capability sees it (built by ``gateway.composition.wiring`` for each capability's ``start``)."""

    db: Database
    replica_id: str
    token: str
    """The gateway's own token (what a same-host helper such as the browser's file route signs with)."""
    services: Services
    """The capabilities' services by type: ``provide`` yours, ``find``/``get`` another's."""
    sessions: SessionsService
    runs: RunQueue
    agents: AgentExecutor
    nodes: NodeService | None
    replicas: ReplicaWatch | None
    hooks: HookRunner
    people: PeopleService
    """Who is on the gateway (``gateway.people``): persons, roles, identities."""
    bus: EventBus | None
    broadcast: Broadcast
    call: InProcessCall
    listen: Callable[[], tuple[str, int]]
    """Where the server listens (known once it is bound)."""
    platforms: Callable[[], ChatPlatforms | None]
    """The chat platforms, once attached (after the capabilities start: call this per use)."""
    tap_session: Callable[[str], EventTap]
    """This replica's events about a session from now on (``gateway.composition.event_taps``): what an HTTP door
    that runs a turn reads of it while it runs. Close the tap when done."""
    spawn: Callable[[Coroutine[Any, Any, None], str], asyncio.Task[None]]
    """Fire-and-forget work of this gateway start, kept referenced until done and cancelled at stop."""
    restart_reason: Callable[[], str | None]
    """Why this gateway is restarting in place, if it is."""
