"""Where one gateway start's services are built and wired, in this order.

1. The core services (``CORE``): each ``_start_*`` here builds its service with the collaborators it uses,
   passed to its constructor, and sets it as a typed attribute of the ``Gateway``; clean-up goes to
   ``gateway.on_stop``. The bus first (every later event goes through it), the run queue before the sessions
   and the executor that use it, the replica watch after the executor it recovers turns through. This module
   and ``gateway.composition.gateway`` are the only ones that know the whole ``Gateway``; the hosts are records of
   the parts they hand out, built here (``capability_host``, ``platform_host``).
2. The capabilities (``gateway.composition.capabilities``), each through its own ``start(host)`` with a
   ``CapabilityHost``: they provide their services in ``gateway.composition.services``.
3. The platform package (the ``remoteclaw.platforms`` extension point: ``channels``), with a
   ``PlatformHost``, so the gateway never names their modules; last, because their messages need everything
   else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from gateway.composition.capabilities import declared, load
from gateway.composition.entry_points import PLATFORMS
from gateway.composition.hosts import CapabilityHost

if TYPE_CHECKING:
    from gateway.composition.gateway import Gateway
    from gateway.dispatch.callers import Caller
    from gateway.dispatch.context import HandlerParts
    from gateway.platforms import PlatformHost
    from gateway.platforms.interface import ChatPlatforms
    from gateway.platforms.messages import Sent
    from gateway.runs.recovery import Recovery

__all__ = ["CORE", "capability_host", "handler_parts", "platform_host", "start_all"]

log = structlog.get_logger("gateway.composition.wiring")


async def _start_bus(gw: Gateway) -> None:
    """Events between replicas (Redis), first: every later event goes through it."""
    from gateway.bus import connect
    from gateway.composition.gateway import RUN_ENDED

    gw.bus = await connect(gw.instance_id, gw.deliver_local, gw.config)
    gw.bus.on_control(RUN_ENDED, gw.remote_run_ended)  # another replica's run, whose shim may have come here
    gw.on_stop(gw.bus.stop)


async def _start_config_watch(gw: Gateway) -> None:
    """Edits of the config file, applied as the config methods apply theirs; on a shared database, first the
    deployment's one config (``gateway.config.shared``), before any service reads the config."""
    from gateway.config.shared import shared_config_for
    from gateway.config.watch import ConfigWatcher

    shared = shared_config_for(gw.db, gw.config_store, gw.replica_id)
    if shared is not None:
        await shared.join(gw.config_changes)
        gw.config_changes.shared = shared
        shared.start(gw.config_changes, lambda: gw.stopping)
        gw.on_stop(shared.stop)

    watcher = ConfigWatcher(gw.config_store, gw.config_changes, lambda: gw.stopping)
    gw.config_watch = watcher
    watcher.start()
    gw.on_stop(watcher.stop)


async def _start_runs(gw: Gateway) -> None:
    """The run queue, with this replica's session leases; stopped by ``Gateway.stop`` first of all, while the
    channels can still deliver the replies."""
    from gateway.runs import RunQueue
    from gateway.runs.lease import LeaseService

    queue = RunQueue(gw.db, gw.config_store, gw.broadcast, LeaseService(gw.db, gw.replica_id))
    queue.attach_bus(gw.bus)
    gw.runs = queue


async def _start_sessions(gw: Gateway) -> None:
    from gateway.sessions.service import SessionsService

    gw.sessions = SessionsService(gw.db, gw.config_store, gw.hooks, gw.runs)


async def _start_people(gw: Gateway) -> None:
    """Who is talking (``gateway.people``): before the executor and the channels, which ask it for every message;
    the config's owner lists become the owner person on the first start."""
    from gateway.people.service import PeopleService

    gw.people = PeopleService(gw.db, gw.config_store)
    await gw.people.start()


async def _start_access(gw: Gateway) -> None:
    """The one authorization model's doors (``gateway.access``): every method, list and event asks it."""
    from gateway.access.doors import AccessControl
    from gateway.access.http import HttpCredentials

    gw.access = AccessControl(gw.db, gw.sessions, gw.people, gw.runs)
    gw.http_credentials = HttpCredentials(gateway_token=gw.token, run_tokens=gw.run_tokens, people=gw.people,
                                          access=gw.access)


def _tell_sandbox_problems(gw: Gateway) -> None:
    """Log, once at start and off the start's path, what ``doctor`` would say is wrong with the sandbox."""
    from gateway.sandbox.doctor import sandbox_report

    async def tell() -> None:
        for name, status, detail, fix in await asyncio.to_thread(sandbox_report, gw.config):
            if status != "ok":
                log.warning(f"{name}: {detail}", fix=fix)

    gw.spawn(tell(), name="sandbox-report")


async def _start_agents(gw: Gateway) -> None:
    """The executor: it runs the queue's turns and takes the chats' allowed messages."""
    from gateway.agents.executor import AgentExecutor
    from gateway.agents.workspace import runs_folder
    from gateway.sandbox import GatewayRelay, Sandbox, private_paths

    runs_dir = runs_folder(gw.state_dir)
    relay = GatewayRelay(runs_dir / "gateway.sock", lambda: gw.listen)
    gw.on_stop(relay.close)
    sandbox = Sandbox(config=gw.config_store, state_dir=gw.state_dir, relay=relay,
                      private=private_paths(gw.config_store.path, gw.db.url))
    _tell_sandbox_problems(gw)
    executor = AgentExecutor(db=gw.db, config=gw.config_store, state_dir=gw.state_dir, replica_id=gw.replica_id,
                             sessions=gw.sessions, people=gw.people, runs=gw.runs, run_tokens=gw.run_tokens,
                             hooks=gw.hooks,
                             services=gw.services, broadcast=gw.broadcast, platforms=lambda: gw.platforms,
                             listen=lambda: gw.listen, sandbox=sandbox, runs_dir=runs_dir)
    gw.agents = executor
    # The queue runs its turns through the executor, which submits to the queue: the loop is closed here.
    gw.runs.executor = executor.execute
    gw.runs.after_run = executor.after_run


async def _start_inbound(gw: Gateway) -> None:
    """The way in for every chat, shared by all platform packages: the router (an allowed message to its session, a
    chat command or a run), the message log, the inbound journal, the web chat's posts, and the door in front."""
    from gateway.agents.router import InboundRouter
    from gateway.people.signin import signin_base
    from gateway.platforms.door import InboundDoor
    from gateway.platforms.history import MessageLog
    from gateway.platforms.host import PlatformParts
    from gateway.platforms.journal import InboundJournal
    from gateway.webchat.posts import WebchatPosts

    router = InboundRouter(gw.agents, db=gw.db, config=gw.config_store, sessions=gw.sessions, runs=gw.runs,
                           hooks=gw.hooks, services=gw.services, state_dir=gw.state_dir, people=gw.people)
    history = MessageLog(gw.db)

    async def send_text(channel: str, account_id: str | None, to: str, text: str, **kwargs: Any) -> list[Sent]:
        """The door's own answers (pairing codes, refusals), through whichever platforms are attached by then."""
        return [] if gw.platforms is None else await gw.platforms.send_text(channel, account_id, to, text, **kwargs)

    door = InboundDoor(gw.db, lambda: gw.config, history, router, send_text, people=gw.people,
                       signin_base=lambda: signin_base(gw.config, gw.listen))
    gw.platform_parts = PlatformParts(history=history, journal=InboundJournal(gw.db),
                                      webchat=WebchatPosts(gw.db, gw.sessions, gw.broadcast), door=door)


async def _start_replicas(gw: Gateway) -> None:
    """This replica's heartbeat, and adoption of dead replicas' turns. It beats once now, before this replica
    recovers its own turns (``_recover``), so no survivor adopts them meanwhile; then on a timer."""
    from gateway.runs.replicas import ReplicaWatch

    watch = ReplicaWatch(gw.db, gw.replica_id, _recovery(gw), gw.spawn)
    await watch.beat()
    watch.start()
    gw.replicas = watch
    gw.on_stop(watch.stop)


def _recovery(gw: Gateway) -> Recovery:
    from gateway.runs.recovery import Recovery

    # A callable: the chat platforms attach after the core services (the platform package), or never.
    return Recovery(gw.db, gw.config_store, gw.replica_id, gw.runs, gw.agents, lambda: gw.platforms)


async def _start_nodes(gw: Gateway) -> None:
    """Paired nodes and their live sockets; the sockets a previous process of this replica held are forgotten."""
    from gateway.devices.requests import agent_requests
    from gateway.devices.service import NodeService

    service = NodeService(gw.db, gw.config_store, gw.broadcast, gw.bus, gw.replica_id, gw.instance_id,
                          gw.dispatcher.durable)
    service.event_handlers["agent.request"] = agent_requests(gw.sessions, gw.runs)
    await service.start()
    gw.nodes = service
    gw.on_stop(service.stop)


CORE: list[Callable[[Gateway], Awaitable[None]]] = [
    _start_bus,
    _start_config_watch,
    _start_runs,
    _start_sessions,
    _start_people,
    _start_access,
    _start_agents,
    _start_inbound,
    _start_replicas,
    _start_nodes,
]
"""The core services, in start order."""


def _host_parts(gw: Gateway) -> dict[str, Any]:
    """What every host is given (``GatewayHost``'s fields)."""
    return {"config_store": gw.config_store, "state_dir": gw.state_dir, "access": gw.access,
            "http_credentials": gw.http_credentials, "routes": gw.http_routes, "config_changes": gw.config_changes,
            "on_stop": gw.on_stop}


def capability_host(gw: Gateway) -> CapabilityHost:
    """The capabilities' host: the core services as built above, and functions for what changes as it runs."""

    async def call(method: str, params: Any, caller: Caller, *, request_id: str = "") -> Any:
        return await gw.dispatcher.call(method, params, caller, gw.handler_parts, request_id=request_id)

    return CapabilityHost(
        **_host_parts(gw), db=gw.db, replica_id=gw.replica_id, token=gw.token, services=gw.services,
        sessions=gw.sessions, runs=gw.runs, agents=gw.agents, nodes=gw.nodes, replicas=gw.replicas, hooks=gw.hooks,
        people=gw.people, bus=gw.bus, broadcast=gw.broadcast, call=call, listen=lambda: gw.listen,
        platforms=lambda: gw.platforms, tap_session=gw.taps.open, spawn=gw.spawn,
        restart_reason=lambda: gw.restart_reason)


def handler_parts(gw: Gateway) -> HandlerParts:
    """What every method handler may use (``gateway.dispatch.context``): the core services built above."""
    from gateway.dispatch.context import HandlerParts

    return HandlerParts(
        access=gw.access, db=gw.db, config_store=gw.config_store, config_changes=gw.config_changes,
        state_dir=gw.state_dir, logs_dir=gw.logs_dir, sessions=gw.sessions, people=gw.people, runs=gw.runs,
        agents=gw.agents, nodes=gw.nodes, hooks=gw.hooks, subscriptions=gw.subscriptions, services=gw.services,
        broadcast=gw.broadcast, platforms=lambda: gw.platforms, listen=lambda: gw.listen,
        close_connections=gw.close_connections, dispatch=gw.dispatcher.call, server=gw)


def platform_host(gw: Gateway) -> PlatformHost:
    """A platform package's host: the shared inbound parts, and how it attaches its ``ChatPlatforms``."""
    from gateway.platforms import PlatformHost
    from gateway.platforms.hooked import HookedPlatforms

    def attach(platforms: ChatPlatforms) -> None:
        gw.platforms = HookedPlatforms(platforms, gw.hooks)

    parts = gw.platform_parts
    return PlatformHost(**_host_parts(gw), db=gw.db, history=parts.history, journal=parts.journal,
                        webchat=parts.webchat, door=parts.door, attach=attach, listen=lambda: gw.listen)


async def start_all(gateway: Gateway) -> None:
    for start_core in CORE:
        await start_core(gateway)
    gateway.handler_parts = handler_parts(gateway)  # before any method call: the capabilities' starts make some
    host = capability_host(gateway)
    for capability in declared():
        if capability.start is not None:
            await load(capability.start)(host)
    for name in PLATFORMS.names():
        try:
            start = PLATFORMS.load(name)
        except ImportError as exc:  # its package is not installed here: the gateway runs without it
            log.warning("platform package not available", package=name, error=str(exc))
            continue
        await start(platform_host(gateway))
    await _recover(gateway)
    gateway.hooks.fire("gateway_start", {"version": gateway.version, "replicaId": gateway.replica_id})


async def _recover(gateway: Gateway) -> None:
    """Turns this replica's previous process left unfinished go back into the queue before anything new
    arrives (their order kept); the chats hear about interrupted ones once their accounts are up."""
    recovery = _recovery(gateway)
    gateway.recovered, notices = await recovery.recover()
    gateway.spawn(recovery.send_notices(notices), "recovery-notices")  # and the unsent replies
