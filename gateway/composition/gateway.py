"""The running gateway: the services method handlers use, and its lifecycle.

A ``Gateway`` lives for one start of the server. A restart in place (``gateway.restart``
or a config change that cannot be hot-applied) builds a fresh one on the same listening
socket, so clients see a ``shutdown`` event, a close 1012, and can reconnect at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from gateway import __version__, paths
from gateway.access.doors import event_session
from gateway.agents.tokens import RunGrant, RunTokens, SharedGrants
from gateway.composition.event_taps import EventTaps
from gateway.composition.ports import RUN_WATCHERS
from gateway.composition.services import Services
from gateway.config import Config, ConfigStore
from gateway.config.reload import ConfigChanges
from gateway.dispatch.dispatcher import READ, Dispatcher, IdempotencyCache, grants, registry
from gateway.hooks.runner import HookRunner
from gateway.protocol import event_head
from gateway.server.auth import AuthThrottle
from gateway.server.connection import CLOSE_POLICY, CLOSE_RESTART, Connection
from gateway.server.fanout import FanOut
from gateway.server.heap_trim import ReleaseAfterCrowd
from gateway.server.preauth import PreAuthSockets
from gateway.server.presence import PresenceBoard
from gateway.server.send_budget import OutboundBudget
from gateway.sessions.events import SessionSubscriptions
from gateway.store import Database, database_url
from gateway.store.idempotency import MISSING, DurableOutcomes

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from gateway.access.doors import AccessControl
    from gateway.access.http import HttpCredentials
    from gateway.agents.executor import AgentExecutor
    from gateway.bus import EventBus
    from gateway.composition.ports import RunWatcher
    from gateway.config.watch import ConfigWatcher
    from gateway.devices.service import NodeService
    from gateway.dispatch.callers import Caller
    from gateway.dispatch.context import HandlerParts
    from gateway.people.service import PeopleService
    from gateway.platforms.host import PlatformParts
    from gateway.platforms.interface import ChatPlatforms
    from gateway.runs import RunQueue
    from gateway.runs.replicas import ReplicaWatch
    from gateway.sessions.service import SessionsService

__all__ = ["Gateway"]

log = structlog.get_logger("gateway.composition.gateway")

RUN_ENDED = "run.ended"
"""The control message a replica publishes when a run whose token it shared ends (``gateway.bus``)."""
FOREIGN_SWEEP_S = 5.0
"""How often sockets opened with another replica's run token are checked against the shared rows."""
PRUNE_EVERY_ROUNDS = 60
"""Expired shared run tokens are deleted every this many sweeps (5 minutes)."""

READY_CACHE_S = 1.0
"""How long ``/readyz`` reuses its last database check."""

StopHook = Callable[[], Awaitable[None]]


class Gateway:
    """Holds config, storage, live connections, the dispatcher and the services of one server start.

    The core's services are typed attributes set by ``gateway.composition.wiring`` when the gateway starts (each built
    there with what it uses; none reaches back through this object); ``bus`` and ``platforms`` stay None when no Redis
    is configured or no chat platform is installed. The capabilities' services are in ``services``, by key: this
    class names none of them. Only the composition root sees a ``Gateway`` (``tests/test_layering.py``).
    """

    sessions: SessionsService
    """Session keys, agents, the sessions table (``gateway.sessions.service``)."""
    runs: RunQueue
    """The run queue (``gateway.runs``)."""
    agents: AgentExecutor
    """Runs agent turns and delivers their replies (``gateway.agents``)."""
    people: PeopleService
    """Who is talking and what is theirs (``gateway.people``)."""
    access: AccessControl
    """The one authorization model's doors (``gateway.access``)."""
    http_credentials: HttpCredentials
    """An HTTP request's credential as a caller, for the routes that serve a conversation's things."""
    platform_parts: PlatformParts
    handler_parts: HandlerParts
    """What method handlers may use (``gateway.dispatch.context``), built once the core services are."""
    """What every platform package shares: the inbound door and router, the message log, the journal, web chat posts."""

    def __init__(self, *, state_dir: Path, config_store: ConfigStore, token: str) -> None:
        self.state_dir = state_dir
        self.config_store = config_store
        self.token = token
        self.version = __version__
        self.instance_id = uuid.uuid4().hex[:12]
        self.replica_id = paths.replica_id(state_dir)
        """This replica's lasting name (kept in the state dir): what its session leases are held as."""
        self.started_at_ms = int(time.time() * 1000)
        self._started_mono = time.monotonic()
        gw = config_store.config.gateway
        rl = gw.auth.rateLimit
        self.throttle = AuthThrottle(
            max_failures=rl.maxFailures, window_s=rl.windowMs / 1000, lockout_s=rl.lockoutMs / 1000
        )
        self.db = Database(database_url(state_dir))
        self.preauth = PreAuthSockets(gw.maxUnauthenticated, gw.maxUnauthenticatedPerAddress)
        """Sockets still in their handshake (capped: ``gateway.server.preauth``)."""
        self.preauth_sweep: asyncio.TimerHandle | None = None
        """When a cap is exceeded by strangers too young to drop: the timer that looks again."""
        self.outbound = OutboundBudget(gw.maxBufferedBytesTotal)
        """Bytes queued for all clients together, and who to cut off past it (``gateway.server.send_budget``)."""
        self.presence_board = PresenceBoard(list_limit=lambda: self.config.gateway.helloPresenceLimit,
                                            send=lambda head, conns: self.fanout.send(head, conns, drop_if_slow=True))
        """Who is connected, and the deltas sent to the clients that watch (``gateway.server.presence``)."""
        self.memory = ReleaseAfterCrowd()
        """Returns freed memory to the system once a crowd of clients has left (``gateway.server.heap_trim``)."""
        self.dispatcher = Dispatcher(registry, IdempotencyCache(), DurableOutcomes(self.db), missing=MISSING)
        self.connections: dict[str, Connection] = {}
        self.subscriptions = SessionSubscriptions()
        """Which connections asked for ``sessions.changed`` and ``session.message``
        (``gateway.sessions.events``)."""
        self.taps = EventTaps(event_session)
        """In-process taps on one session's events, for the HTTP doors that run turns (``event_taps``)."""
        self.run_tokens = RunTokens(SharedGrants(self.db, self.replica_id))
        """Tokens of the agent runs in flight (checked by the handshake); a run's end closes its sockets. A node
        turn's token is shared with the other replicas, whose sockets opened with it close at its end too."""
        self.run_tokens.on_revoke(self._run_ended)
        self.run_tokens.on_unshare(self._run_unshared)
        self._foreign_sweep: asyncio.Task[None] | None = None
        self.bus: EventBus | None = None
        """Events between replicas, when Redis is configured (``gateway.bus``)."""
        self.platforms: ChatPlatforms | None = None
        """The chat platforms, once a platform package attached itself (``gateway.platforms``)."""
        self.config_watch: ConfigWatcher | None = None
        self.config_changes = ConfigChanges(config_store, self.broadcast, self.request_restart, self.logs_dir)
        """Applies a validated config and tells the services that follow it (``gateway.config.reload``)."""
        self.http_routes: list[BaseRoute] = []
        """Routes the capabilities and platform packages add to the HTTP app (webhooks)."""
        self.confined_connections = 0
        """Connections of people who see only their own things: while there are none, events skip the filter."""
        self.listen: tuple[str, int] = ("127.0.0.1", 0)
        """Where the server listens (set by ``gateway.server.serve`` once bound)."""
        self.replicas: ReplicaWatch | None = None
        """This replica's heartbeat, and adoption of dead replicas' turns (``gateway.runs.replicas``)."""
        self.services = Services()
        """The capabilities' services, by type (``gateway.composition.capabilities``): the core names none of them."""
        self.hooks = HookRunner()
        """Plugin hooks (``gateway.hooks``): empty, and free to call, until a plugin adds one."""
        self.nodes: NodeService | None = None
        """Paired nodes and their live sockets (``gateway.devices``)."""
        self.recovered: dict[str, int] = {}
        """What start-up recovery did with the previous process's unfinished turns (``gateway.runs.recovery``)."""
        self.background: set[asyncio.Task[None]] = set()
        """Fire-and-forget work of this start (kept referenced until done)."""
        self.fanout = FanOut(self.spawn)
        """Broadcasts to many sockets, a slice at a time (``gateway.server.fanout``)."""
        self.restart_reason: str | None = None
        self.stopping = False
        self._db_checked_at = -READY_CACHE_S
        self._db_problem: str | None = None
        self._tick_task: asyncio.Task[None] | None = None
        self._stop_hooks: list[StopHook] = []
        self._exit: Callable[[], None] = lambda: None

    @property
    def config(self) -> Config:
        return self.config_store.config

    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

    def uptime_ms(self) -> int:
        return int((time.monotonic() - self._started_mono) * 1000)

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self, exit_server: Callable[[], None]) -> None:
        """Migrate the database and start background work. ``exit_server`` stops the HTTP server."""
        self._exit = exit_server
        await self.db.migrate()
        await self._take_back_leases()
        assert self.run_tokens.shared is not None
        await self.run_tokens.shared.drop_own()  # the runs of this replica's previous process are over
        from gateway.methods import defer_all

        defer_all()  # each method module is imported at its first call
        from gateway.composition import wiring

        await wiring.start_all(self)
        self._tick_task = asyncio.create_task(self._tick_loop(), name="gateway-tick")
        self._foreign_sweep = asyncio.create_task(self._sweep_foreign_runs(), name="run-token-sweep")
        log.info("gateway started", version=self.version, pid=os.getpid(), db=self.db.url.split("://")[0])

    async def _take_back_leases(self) -> None:
        """Leases held under this replica's name belong to a process of ours that is gone (a crash, a kill):
        nothing of this process runs yet, so they are released now, not after they expire."""
        from gateway.store.leases import LeaseRepo

        async with self.db.session() as s:
            released = await LeaseRepo.release_holder(s, self.replica_id)
        if released:
            log.info("took back the session leases of this replica's previous process", leases=released)

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Fire-and-forget work of this start: kept referenced until done, cancelled when the gateway stops."""
        task = asyncio.create_task(work, name=name)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        return task

    def on_stop(self, hook: StopHook) -> None:
        """Register cleanup to run when this gateway stops (last registered runs first)."""
        self._stop_hooks.append(hook)

    async def stop(self) -> None:
        if self._tick_task:
            self._tick_task.cancel()
        if self._foreign_sweep:
            self._foreign_sweep.cancel()
        self.presence_board.close()
        self.memory.close()
        if self.preauth_sweep is not None:
            self.preauth_sweep.cancel()
        for task in list(self.background):
            task.cancel()
        runs = getattr(self, "runs", None)  # a start that failed early may not have built it
        if runs is not None:  # drain first, while the chat platforms can still deliver the replies
            try:
                await runs.stop()
            except Exception:
                log.exception("draining the run queue failed")
        for hook in reversed(self._stop_hooks):
            try:
                await hook()
            except Exception:
                log.exception("stop hook failed")
        await self.db.close()

    def request_restart(self, reason: str, *, delay_ms: int = 0) -> None:
        """Drain and come back up in place (same process, same socket)."""
        if self.stopping:
            return
        self.restart_reason = reason
        asyncio.get_running_loop().call_later(
            delay_ms / 1000, lambda: asyncio.ensure_future(self.shutdown(reason, restart=True))
        )

    async def shutdown(self, reason: str, *, restart: bool) -> None:
        """Tell every client why, close them with 1012, then stop the server."""
        if self.stopping:
            return
        self.stopping = True
        log.info("gateway shutting down", reason=reason, restart=restart)
        payload: dict[str, Any] = {"reason": reason}
        if restart:
            payload["restartExpectedMs"] = 1500
        for conn in list(self.connections.values()):
            conn.send_event("shutdown", payload)
            conn.close(CLOSE_RESTART, "service restart" if restart else "gateway stopping")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                asyncio.gather(*(c.wait_closed() for c in list(self.connections.values()))), 3
            )
        self._exit()

    # -- connections and events ----------------------------------------------------------------

    def add_connection(self, conn: Connection) -> None:
        """Deliver events to ``conn`` from now on (its ``hello-ok`` is queued: nothing may come before it)."""
        self.connections[conn.conn_id] = conn
        if _confined(conn):
            self.confined_connections += 1
        if conn.caller is not None and conn.conn_id not in self.presence_board:
            self.presence_board.join(conn, conn.caller)
        self.memory.changed(len(self.connections))

    def remove_connection(self, conn: Connection) -> None:
        self.subscriptions.drop(conn.conn_id)
        if self.connections.pop(conn.conn_id, None) is not None:
            self.memory.changed(len(self.connections))
            if _confined(conn):
                self.confined_connections -= 1
        self.presence_board.leave(conn.conn_id)

    def close_connections(self, holds: Callable[[Caller], bool], reason: str) -> int:
        """Close (1008, ``reason``) this replica's connections whose caller ``holds`` a credential that no longer
        counts: a revoked sign-in, a removed person, an ended run's token. Closed at once, a socket reads no more
        requests (``gateway.server.app``); returns how many."""
        closed = 0
        for conn in list(self.connections.values()):
            if conn.caller is not None and not conn.closed and holds(conn.caller):
                conn.close(CLOSE_POLICY, reason)
                closed += 1
        return closed

    def _run_ended(self, grant: RunGrant) -> None:
        """A run's token was revoked (the run ended): whatever connected with it is closed."""
        run_id = grant.run_id
        if run_id is not None:
            self.close_connections(lambda caller: caller.extra.get("runId") == run_id, "agent run ended")

    def _run_unshared(self, grant: RunGrant) -> None:
        """A shared run token was revoked: its row goes, then the other replicas hear it (``RUN_ENDED``) and
        close their sockets opened with it; one that misses the message finds the row gone (the sweep)."""
        run_id = grant.run_id
        if run_id is None:
            return
        shared = self.run_tokens.shared

        async def unshare() -> None:
            try:
                if shared is not None:
                    await shared.drop_run(run_id)
            except Exception as exc:  # the row then expires; the message below still closes the sockets
                log.warning("an ended run's shared token could not be deleted", run_id=run_id, error=str(exc))
            if self.bus is not None:
                self.bus.publish_control(RUN_ENDED, {"runId": run_id, "sessionKey": grant.session_key})

        self.spawn(unshare(), f"run-unshare-{run_id}")

    def remote_run_ended(self, payload: Any) -> None:
        """Another replica's run ended (``RUN_ENDED``): the sockets its shim opened here close, and what it asked
        here that is still pending is withdrawn."""
        if not isinstance(payload, dict) or not isinstance(payload.get("runId"), str):
            return
        run_id, session_key = payload["runId"], payload.get("sessionKey")
        self.close_connections(lambda caller: caller.extra.get("runId") == run_id, "agent run ended")
        watchers = self.services.find(RUN_WATCHERS)
        if isinstance(session_key, str) and watchers is not None:
            self.spawn(self._withdraw(watchers, session_key), f"run-withdraw-{run_id}")

    @staticmethod
    async def _withdraw(watchers: RunWatcher, session_key: str) -> None:
        await watchers.run_ended(session_key)

    async def _sweep_foreign_runs(self) -> None:
        """Sockets opened here with another replica's run token close once its row is gone (the run ended, its
        replica died and restarted, or it expired), even if the ``RUN_ENDED`` message was missed; expired rows
        are pruned now and then."""
        shared = self.run_tokens.shared
        assert shared is not None
        rounds = 0
        while True:
            await asyncio.sleep(FOREIGN_SWEEP_S)
            rounds += 1
            try:
                mine = self.run_tokens.runs()
                foreign = {run_id for conn in self.connections.values() if conn.caller is not None
                           and isinstance(run_id := conn.caller.extra.get("runId"), str) and run_id not in mine}
                if foreign:
                    live = await shared.live_runs(foreign)
                    for run_id in foreign - live:
                        self.remote_run_ended({"runId": run_id})
                if rounds % PRUNE_EVERY_ROUNDS == 0:
                    await shared.prune()
            except Exception:
                log.exception("sweeping the sockets of other replicas' runs failed")

    def broadcast(self, event: str, payload: Any = None, *, scope: str = READ, drop_if_slow: bool = False) -> int:
        """Send an event to every operator holding ``scope``, on every replica (``gateway.bus``).

        Returns how many of this replica's sockets got it.
        """
        if self.bus is not None:
            return self.bus.publish(event, payload, scope=scope, drop_if_slow=drop_if_slow)
        return self.deliver_local(event, payload, scope, drop_if_slow)

    def deliver_local(self, event: str, payload: Any = None, scope: str = READ, drop_if_slow: bool = False) -> int:
        """Send an event to this replica's authenticated operators holding ``scope``; returns how many got it."""
        if self.taps:
            self.taps.offer(event, payload)
        only = self.subscriptions.targets(event, payload)  # session events go to their subscribers only
        receivers = [conn for conn in self.connections.values()
                     if (caller := conn.caller) is not None and caller.role == "operator"
                     and grants(caller.scopes, scope) and (only is None or conn.conn_id in only)]
        if self.confined_connections and receivers:  # a confined caller (a person, a run): only what it may read
            access = self.access
            receivers = [conn for conn in receivers if not _confined(conn)
                         or access.receives(conn.caller, event, payload)]  # type: ignore[arg-type]
        # the frame, encoded once for every socket (only its seq differs); sliced when there are many
        sent = self.fanout.send(event_head(event, payload), receivers, drop_if_slow=drop_if_slow) if receivers else 0
        for derived, body in self.subscriptions.derive(event, payload):
            self.deliver_local(derived, body, scope)
        return sent

    def presence(self) -> list[dict[str, Any]]:
        """Every connection of this replica as an OpenClaw ``PresenceEntry`` (``gateway.server.presence``)."""
        return self.presence_board.snapshot()

    def health(self) -> dict[str, Any]:
        return {
            "ok": True,
            "version": self.version,
            "uptimeMs": self.uptime_ms(),
            "connections": len(self.connections),
            "database": "sqlite" if self.db.is_sqlite else "postgresql",
        }

    async def readiness(self) -> dict[str, Any]:
        """Whether this replica should be sent new clients (``/readyz``): not draining, its database answering,
        and Redis connected when one is configured. ``/healthz`` says only that the process is alive.

        The database is asked at most once per ``READY_CACHE_S`` (health checks and balancers poll this door
        without a token), with a short timeout, so a database that hangs answers "not ready" within seconds.
        """
        now = time.monotonic()
        if now - self._db_checked_at >= READY_CACHE_S:
            self._db_checked_at = now
            try:
                await self.db.ping(timeout=2.0)
                self._db_problem = None
            except Exception as exc:
                self._db_problem = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        reasons: list[str] = []
        if self.stopping:
            reasons.append("draining: the gateway is stopping or restarting")
        if self._db_problem is not None:
            reasons.append(f"database unreachable: {self._db_problem}")
        bus = self.bus
        if bus is not None and bus.url and not bus.connected:
            reasons.append("Redis unreachable: events would not reach the other replicas")
        return {"ready": not reasons, "reasons": reasons, "version": self.version, "replicaId": self.replica_id,
                "database": "sqlite" if self.db.is_sqlite else "postgresql",
                "eventBus": "local" if bus is None or not bus.url else ("connected" if bus.connected else "down")}

    async def _tick_loop(self) -> None:
        interval = self.config.gateway.tickIntervalMs / 1000
        while True:
            await asyncio.sleep(interval)
            receivers = [conn for conn in self.connections.values() if conn.caller is not None]
            if receivers:
                self.fanout.send(event_head("tick", {"ts": int(time.time() * 1000)}), receivers, drop_if_slow=True)


def _confined(conn: Connection) -> bool:
    """A caller that sees only some sessions (a person's own, a non-owner run's): its events are decided one by
    one by the access model; everyone else's are not (the owner sees all, at no cost per event)."""
    caller = conn.caller
    return caller is not None and caller.confined_to is not None
