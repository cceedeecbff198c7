"""The event bus: operator events reach every replica's sockets, not just the producing one's.

Without Redis (the default) publishing an event is exactly a local broadcast, and nothing else
runs. With ``REMOTECLAW_REDIS_URL`` (or ``gateway.redisUrl``) set, each replica also subscribes
to one Redis pub/sub channel, ``<prefix>:events``; an event published here is delivered to local
sockets at once and handed to a background task that publishes it to Redis; every other replica
receives it and delivers it to its own sockets. Each message names its origin replica, so the
publisher skips its own copy and nobody sees an event twice.

Redis is a convenience, never a dependency of correctness: if it is down at start or goes away
later, the gateway logs it, keeps delivering locally, and reconnects with backoff. Events
published while disconnected are not replayed (they are live progress, and the durable facts
are in the database), but their loss is reported: once Redis is back, each replica that was cut off
sends its own operators one ``events.gap`` event (from when to when it heard nothing from the other
replicas), so they know to re-read what they show (``chat.history``, ``agent.wait``, ``sessions.list``).
The receiving side reports it, because only it knows what it missed: pub/sub delivers nothing to a replica
that has not resubscribed yet. ``status`` counts the outages and the events this replica could not relay
under ``eventBus``. ``on_disconnect`` hooks hear the moment the connection is lost (a node invoke
waiting on another replica fails then, instead of at its timeout).

Some events describe this replica only and stay local: ``presence`` (its own connections) and
``config.changed`` (its own config file). ``tick``, ``health`` and ``shutdown`` never pass through
here at all: they are sent to one connection at a time.

Two small hooks let subsystems coordinate through the same channel. ``add_listener`` sees every event
that arrives from another replica (the run queue uses it to learn that a run held elsewhere ended).
``publish_control`` sends a control message, such as "abort this session's turn", that only the other
replicas' ``on_control`` handlers see; it never reaches an operator socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import orjson
import structlog

from gateway.dispatch.callers import READ
from gateway.extras import install_hint
from gateway.protocol import encode

if TYPE_CHECKING:
    from gateway.config import Config

__all__ = ["LOCAL_EVENTS", "PREFIX_ENV", "URL_ENV", "EventBus", "connect", "redis_url"]

log = structlog.get_logger("gateway.bus")

URL_ENV = "REMOTECLAW_REDIS_URL"
PREFIX_ENV = "REMOTECLAW_REDIS_PREFIX"
DEFAULT_PREFIX = "remoteclaw"

LOCAL_EVENTS = frozenset({"presence", "config.changed", "tick", "health", "shutdown", "connect.challenge"})
"""Events whose payload is about this replica only: never relayed."""

OUTBOX_MAX = 10_000
"""Events waiting to be published; beyond this (Redis far too slow) new ones go out locally only."""

BACKOFF_MIN_S = 0.5
BACKOFF_MAX_S = 30.0

Deliver = Callable[[str, Any, str, bool], int]
Listener = Callable[[str, Any], None]
ControlHandler = Callable[[Any], None]
GAP_EVENT = "events.gap"


def redis_url(config: Config) -> str | None:
    """The Redis URL to use: the environment wins over the config; empty means none."""
    url = os.environ.get(URL_ENV, "").strip() or (getattr(config.gateway, "redisUrl", None) or "").strip()
    return url or None


def safe_url(url: str) -> str:
    """The URL with any password masked, for logs."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable redis url>"
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = parts.username or ""
    return urlunsplit((parts.scheme, f"{user}:***@{host}", parts.path, parts.query, parts.fragment))


class EventBus:
    """Publishes events to local sockets and, when Redis is configured, to the other replicas.

    Args:
        replica_id: this replica's id, stamped on outgoing messages to recognise our own echo.
        deliver: the local broadcast ``(event, payload, scope, drop_if_slow) -> sockets reached``.
        url: Redis URL, or ``None`` for in-process only.
        prefix: channel name prefix, so several deployments (or tests) can share one Redis.
    """

    def __init__(self, replica_id: str, deliver: Deliver, *, url: str | None = None,
                 prefix: str = DEFAULT_PREFIX) -> None:
        self.replica_id = replica_id
        self.deliver = deliver
        self.url = url
        self.channel = f"{prefix}:events"
        self.connected = False
        self.relayed_out = 0
        self.relayed_in = 0
        self.dropped = 0
        self.outages = 0
        self.not_relayed = 0
        """Events published while disconnected (or queued when the connection failed): never seen elsewhere."""
        self.last_gap: dict[str, Any] | None = None
        self._gap_since_ms: int | None = None
        self._gap_count = 0
        self._disconnect_hooks: list[Callable[[], None]] = []
        self._outbox: asyncio.Queue[str] = asyncio.Queue(OUTBOX_MAX)
        self._task: asyncio.Task[None] | None = None
        self._listeners: list[Listener] = []
        self._control: dict[str, ControlHandler] = {}

    # -- hooks for other subsystems ------------------------------------------------------------

    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(event, payload)`` for every event relayed in from another replica."""
        self._listeners.append(fn)

    def on_control(self, kind: str, fn: ControlHandler) -> None:
        """Call ``fn(payload)`` when another replica publishes a control message of ``kind``."""
        self._control[kind] = fn

    def on_disconnect(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` each time the Redis connection is lost (what waits on another replica cannot be answered)."""
        self._disconnect_hooks.append(fn)

    def publish_control(self, kind: str, payload: Any) -> bool:
        """Send a control message to the other replicas; False when it cannot go out (no Redis now)."""
        if not self.connected:
            return False
        try:
            self._outbox.put_nowait(encode({"o": self.replica_id, "c": kind, "p": payload}))
        except (TypeError, asyncio.QueueFull) as exc:
            log.warning("control message not sent", kind=kind, error=str(exc) or type(exc).__name__)
            return False
        return True

    # -- publishing ----------------------------------------------------------------------------

    def publish(self, event: str, payload: Any = None, *, scope: str = READ, drop_if_slow: bool = False) -> int:
        """Queue the event for the other replicas, then deliver it locally; returns local sockets reached.

        Queued first, so the Redis sender is woken before this replica's socket writers: the other replicas
        start their own delivery while this one is still writing, instead of after it.
        """
        if event not in LOCAL_EVENTS:
            if self.connected:
                self._queue_remote(event, payload, scope, drop_if_slow)
            elif self.url:
                self._missed(1)
        return self.deliver(event, payload, scope, drop_if_slow)

    def _missed(self, n: int) -> None:
        """``n`` of this replica's events did not reach the other replicas."""
        self.not_relayed += n
        self._gap_count += n

    def _report_gap(self) -> None:
        """Just reconnected after being cut off: tell this replica's operators what they may have missed."""
        if self._gap_since_ms is None:
            return
        gap = {"replicaId": self.replica_id, "sinceMs": self._gap_since_ms, "untilMs": _now_ms(),
               "notRelayed": self._gap_count}
        self.last_gap = gap
        self._gap_count, self._gap_since_ms = 0, None
        log.warning("Redis is back: events of the other replicas in the gap were missed here, and this "
                    "replica's reached its own clients only", since_ms=gap["sinceMs"], not_relayed=gap["notRelayed"])
        self.deliver(GAP_EVENT, gap, READ, False)

    def _queue_remote(self, event: str, payload: Any, scope: str, drop_if_slow: bool) -> None:
        try:
            body = encode({"o": self.replica_id, "e": event, "p": payload, "s": scope, "d": drop_if_slow})
        except TypeError as exc:
            log.warning("event not relayed: payload is not JSON", bus_event=event, error=str(exc))
            return
        try:
            self._outbox.put_nowait(body)
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped % 1000 == 1:
                log.warning("Redis is not keeping up; events are reaching this replica only",
                            dropped=self.dropped)

    def _receive(self, data: bytes | str) -> None:
        try:
            msg = orjson.loads(data)
            origin = msg["o"]
            kind, event = msg.get("c"), (None if "c" in msg else msg["e"])
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("ignored a malformed message on the event channel", channel=self.channel)
            return
        if origin == self.replica_id:
            return
        if kind is not None:
            self._call(self._control.get(kind), msg.get("p"))
            return
        if event in LOCAL_EVENTS:
            return
        self.relayed_in += 1
        payload = msg.get("p")
        self.deliver(str(event), payload, str(msg.get("s") or READ), bool(msg.get("d")))
        for fn in self._listeners:
            self._call(fn, event, payload)

    @staticmethod
    def _call(fn: Callable[..., None] | None, *args: Any) -> None:
        # A failing hook must not stop the listener loop (and with it every relayed event).
        if fn is None:
            return
        try:
            fn(*args)
        except Exception:
            log.exception("an event bus hook failed")

    # -- the Redis connection ------------------------------------------------------------------

    def start(self) -> None:
        if self.url and self._task is None:
            self._task = asyncio.create_task(self._run(), name="event-bus")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        self.connected = False

    async def _run(self) -> None:
        """Connect, subscribe and relay; on any failure log once, wait, and start over."""
        from redis.asyncio import Redis

        assert self.url is not None
        delay = BACKOFF_MIN_S
        down_logged = False
        while True:
            client = None
            try:
                client = Redis.from_url(self.url, socket_connect_timeout=3, health_check_interval=15)
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                await pubsub.subscribe(self.channel)
                self.connected = True
                log.info("event bus connected to Redis", url=safe_url(self.url), channel=self.channel)
                self._report_gap()
                down_logged, delay = False, BACKOFF_MIN_S
                await self._relay(client, pubsub)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not down_logged:
                    log.warning("Redis unavailable: events reach this replica's clients only until it is back",
                                url=safe_url(self.url), error=str(exc) or type(exc).__name__)
                    down_logged = True
            finally:
                was_connected, self.connected = self.connected, False
                self._drain()
                if was_connected:
                    self.outages += 1
                    self._gap_since_ms = _now_ms()
                    for fn in self._disconnect_hooks:
                        self._call(fn)
                if client is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(client.aclose(), 2)
            await asyncio.sleep(delay * random.uniform(0.8, 1.2))
            delay = min(delay * 2, BACKOFF_MAX_S)

    async def _relay(self, client: Any, pubsub: Any) -> None:
        """Run the inbound listener and the outbound publisher until either fails."""
        async def listen() -> None:
            while True:
                msg = await pubsub.get_message(timeout=5.0)
                if msg is not None and msg.get("type") == "message":
                    self._receive(msg["data"])

        async def send() -> None:
            while True:
                body = await self._outbox.get()
                await client.publish(self.channel, body)
                self.relayed_out += 1

        tasks = [asyncio.create_task(listen()), asyncio.create_task(send())]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                t.result()  # re-raise the failure
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _drain(self) -> None:
        # Events queued for a connection that failed are stale by the time we are back: drop them (counted).
        control = encode({"o": self.replica_id})[:-1] + ',"c":'
        lost = 0
        while not self._outbox.empty():
            lost += not self._outbox.get_nowait().startswith(control)
        self._missed(lost)

    def status(self) -> dict[str, Any]:
        return {"mode": "redis" if self.url else "local", "connected": self.connected, "channel": self.channel,
                "relayedOut": self.relayed_out, "relayedIn": self.relayed_in, "dropped": self.dropped,
                "outages": self.outages, "notRelayed": self.not_relayed, "lastGap": self.last_gap}


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)


async def _check_url(url: str) -> str | None:
    """The URL if redis-py can use it; otherwise log why (once) and return None: events stay local."""
    try:
        from redis.asyncio import Redis
    except ImportError:
        log.error(f"{URL_ENV} is set, but sharing events between replicas needs the optional part 'redis': "
                  f"{install_hint('redis')}; events stay on this replica")
        return None
    try:
        client = Redis.from_url(url)  # parses only; no connection yet
    except ValueError as exc:
        log.error(f"{URL_ENV} / gateway.redisUrl is not a usable Redis URL (redis://host:6379/0); "
                  "events stay on this replica", url=safe_url(url), error=str(exc))
        return None
    await client.aclose()
    return url


async def connect(instance_id: str, deliver_local: Deliver, config: Config) -> EventBus:
    """The bus of one gateway start, linked to Redis when ``REMOTECLAW_REDIS_URL`` / ``gateway.redisUrl`` names
    one (checked first: a bad URL is said once and the gateway runs alone)."""
    url = redis_url(config)
    prefix = os.environ.get(PREFIX_ENV, "").strip() or DEFAULT_PREFIX
    bus = EventBus(instance_id, deliver_local, url=url, prefix=prefix)
    if url:
        bus.url = await _check_url(url)
    bus.start()
    return bus
