"""Capabilities: optional parts of the gateway that each live in one package and are named here once.

A capability package (``gateway/voice``, ``gateway/cron``...) declares what it adds in its ``__init__.py`` as one
``Capability``: the ``start(host)`` that builds its service from the collaborators it uses and provides it
(``host.services``), and its method modules. The gateway starts them in the order of ``CAPABILITIES``, after the
core services (``gateway.wiring``), and imports their methods with the core's. A capability's ``remoteclaw``
sub-command is a ``remoteclaw.cli`` entry point like every other package's (so the CLI imports no capability
package to build its parser). Adding a capability is its package, one line here, its config section (one line
in ``gateway/config/model.py``), its migration (``migrations/versions``) and, if it has a sub-command, one entry
point.

``CapabilityHost`` is the part of a running gateway a capability may use: the database, the live config, events,
routes, clean-up, background tasks, the core services and the other capabilities' services. Like the platform
packages' ``PlatformHost``, it keeps the whole ``Gateway`` out of reach, so a capability's dependencies are
what its constructor takes.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from gateway.agents.executor import AgentExecutor
    from gateway.bus import EventBus
    from gateway.config import Config, ConfigStore
    from gateway.config.reload import Listener
    from gateway.core import Gateway
    from gateway.devices.service import NodeService
    from gateway.hooks import HookRunner
    from gateway.platforms.interface import ChatPlatforms
    from gateway.rpc import Caller
    from gateway.runs import RunQueue
    from gateway.runs.replicas import ReplicaWatch
    from gateway.services import Services
    from gateway.sessions import SessionsService
    from gateway.store import Database

__all__ = ["CAPABILITIES", "Broadcast", "Capability", "CapabilityHost", "MethodCall", "Spawn", "declared", "load"]

CAPABILITIES: tuple[str, ...] = (
    "gateway.approvals",
    "gateway.cron",
    "gateway.plugins",
    "gateway.canvas",
    "gateway.browser",
    "gateway.voice",
    "gateway.mcp_http",
)
"""Capability packages, in start order (approvals before cron: a cron run may ask; plugins before the canvas and
browser routes; ``/mcp`` last, when every method is registered)."""


@dataclass(frozen=True, slots=True)
class Capability:
    """What one capability adds. ``start`` is ``"module:function"``, imported when the gateway starts."""

    name: str
    start: str | None = None
    """``async def start(host: CapabilityHost) -> None``: build the service, provide it, register clean-up."""
    methods: tuple[str, ...] = ()
    """Modules whose ``@method`` declarations register the capability's gateway methods."""


def declared() -> Iterator[Capability]:
    """Every capability's declaration, in start order."""
    for package in CAPABILITIES:
        yield importlib.import_module(package).CAPABILITY


def load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


Spawn = Callable[[Coroutine[Any, Any, None], str], "asyncio.Task[None]"]
"""``spawn(work, name)``: fire-and-forget work of this gateway start (``CapabilityHost.spawn``)."""

class MethodCall(Protocol):
    """A gateway method called in process as ``caller`` (``CapabilityHost.call``)."""

    def __call__(self, method: str, params: Any, caller: Caller, *, request_id: str = "") -> Awaitable[Any]: ...


Broadcast = Callable[..., int]
"""``broadcast(event, payload, *, scope=READ, drop_if_slow=False)``: to every operator holding ``scope``, on every
replica; answers how many of this replica's sockets got it."""


class CapabilityHost:
    """The gateway as a capability sees it (built by ``gateway.wiring`` for each capability's ``start``)."""

    def __init__(self, gateway: Gateway) -> None:
        self._gw = gateway

    # -- facts -------------------------------------------------------------------------------------

    @property
    def db(self) -> Database:
        return self._gw.db

    @property
    def config_store(self) -> ConfigStore:
        """The live config (``.config``: read it per use, it changes) and its file."""
        return self._gw.config_store

    @property
    def config(self) -> Config:
        return self._gw.config

    @property
    def state_dir(self) -> Path:
        return self._gw.state_dir

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

    def add_route(self, route: BaseRoute) -> None:
        """Serve an HTTP route on the gateway's port."""
        self._gw.http_routes.append(route)

    def on_config_change(self, listener: Listener) -> None:
        """Call ``listener(old, new, changed_sections)`` after every live config change."""
        self._gw.config_listeners.append(listener)

    def on_stop(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Clean-up when this gateway stops (last registered runs first)."""
        self._gw.on_stop(hook)

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Fire-and-forget work of this gateway start, kept referenced until done and cancelled at stop."""
        return self._gw.spawn(work, name)

    def restart_reason(self) -> str | None:
        """Why this gateway is restarting in place, if it is."""
        return self._gw.restart_reason
