"""The hosts: what a package plugged into the gateway is shown of it, instead of the whole ``Gateway``.

``GatewayHost`` is what every host offers: the live config, the state folder, HTTP routes, config-change
listeners and clean-up. ``CapabilityHost`` (this module) is given to each capability's ``start(host)``
(``gateway.composition.capabilities``): it adds the database, events, background tasks, the core services, in-process
method calls and the other capabilities' services; the capability takes what its service needs and passes it
to the service's constructor. ``PlatformHost`` (``gateway.platforms.host``) is given to a chat platform
package.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from gateway.access.doors import AccessControl
    from gateway.access.http import HttpCredentials
    from gateway.agents.executor import AgentExecutor
    from gateway.bus import EventBus
    from gateway.composition.callable_types import Broadcast
    from gateway.composition.event_taps import EventTap
    from gateway.composition.gateway import Gateway
    from gateway.composition.services import Services
    from gateway.config import Config, ConfigStore
    from gateway.config.reload import Listener
    from gateway.devices.service import NodeService
    from gateway.dispatch.callers import Caller
    from gateway.hooks.runner import HookRunner
    from gateway.people.service import PeopleService
    from gateway.platforms.interface import ChatPlatforms
    from gateway.runs import RunQueue
    from gateway.runs.replicas import ReplicaWatch
    from gateway.sessions.service import SessionsService
    from gateway.store import Database

__all__ = ["CapabilityHost", "GatewayHost"]


class GatewayHost:
    """What every host offers of one running gateway."""

    def __init__(self, gateway: Gateway) -> None:
        self._gw = gateway

    @property
    def config(self) -> Config:
        """The current config (read it per use: it changes live)."""
        return self._gw.config

    @property
    def state_dir(self) -> Path:
        return self._gw.state_dir

    def add_route(self, route: BaseRoute) -> None:
        """Serve an HTTP route (a page, a webhook) on the gateway's port."""
        self._gw.http_routes.append(route)

    def on_config_change(self, listener: Listener) -> None:
        """Call ``listener(old, new, changed_sections)`` after every live config change."""
        self._gw.config_changes.listen(listener)

    def on_stop(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Clean-up when this gateway stops (last registered runs first)."""
        self._gw.on_stop(hook)

    @property
    def access(self) -> AccessControl:
        """The one authorization model's doors (``gateway.access``): a capability's finders, lists, routes."""
        return self._gw.access

    def http_credentials(self) -> HttpCredentials:
        """How an HTTP route turns a request's credential into a caller (``gateway.access.http``)."""
        return self._gw.http_credentials

    async def may_read_session(self, request: Request, session_key: str, *, query: bool = False) -> int:
        """An HTTP route's decision on a conversation's thing: 200, 401 (no live credential) or 403
        (``gateway.access.http``)."""
        return await self._gw.http_credentials.may_read_session(request, session_key, query=query)


class CapabilityHost(GatewayHost):
    """The gateway as a capability sees it (built by ``gateway.composition.wiring`` for each capability's ``start``)."""

    # -- facts -------------------------------------------------------------------------------------

    @property
    def db(self) -> Database:
        return self._gw.db

    @property
    def config_store(self) -> ConfigStore:
        """The live config (``.config``: read it per use, it changes) and its file."""
        return self._gw.config_store

    @property
    def replica_id(self) -> str:
        return self._gw.replica_id

    @property
    def token(self) -> str:
        """The gateway's own token (what a same-host helper such as the browser's file route signs with)."""
        return self._gw.token

    def listen(self) -> tuple[str, int]:
        """Where the server listens (known once it is bound)."""
        return self._gw.listen

    # -- the core's services ------------------------------------------------------------------------

    @property
    def services(self) -> Services:
        """The capabilities' services by type: ``provide`` yours, ``find``/``get`` another's."""
        return self._gw.services

    @property
    def sessions(self) -> SessionsService:
        return self._gw.sessions

    @property
    def runs(self) -> RunQueue:
        return self._gw.runs

    @property
    def agents(self) -> AgentExecutor:
        return self._gw.agents

    @property
    def nodes(self) -> NodeService | None:
        return self._gw.nodes

    @property
    def replicas(self) -> ReplicaWatch | None:
        return self._gw.replicas

    @property
    def hooks(self) -> HookRunner:
        return self._gw.hooks

    @property
    def people(self) -> PeopleService:
        """Who is on the gateway (``gateway.people``): persons, roles, identities."""
        return self._gw.people

    async def call(self, method: str, params: Any, caller: Caller, *, request_id: str = "") -> Any:
        """Call a gateway method in process as ``caller`` (validation, scopes and hooks as over the wire)."""
        return await self._gw.dispatcher.call(method, params, caller, self._gw, request_id=request_id)

    @property
    def bus(self) -> EventBus | None:
        return self._gw.bus

    def platforms(self) -> ChatPlatforms | None:
        """The chat platforms, once attached (after the capabilities start: call this per use)."""
        return self._gw.platforms

    # -- wiring ------------------------------------------------------------------------------------

    @property
    def broadcast(self) -> Broadcast:
        return self._gw.broadcast

    def tap_session(self, session_key: str) -> EventTap:
        """This replica's events about ``session_key`` from now on (``gateway.composition.event_taps``): what an
        HTTP door that runs a turn reads of it while it runs. Close the tap when done."""
        return self._gw.taps.open(session_key)

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Fire-and-forget work of this gateway start, kept referenced until done and cancelled at stop."""
        return self._gw.spawn(work, name)

    def restart_reason(self) -> str | None:
        """Why this gateway is restarting in place, if it is."""
        return self._gw.restart_reason
