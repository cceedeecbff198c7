"""The live side of nodes: their sockets on this replica, and ``node.invoke`` carried to them.

A node connects with role ``node`` and a device proof; ``admit`` records it (``gateway.devices.store``) during
the handshake, ``attach``/``detach`` follow its socket. A call goes out as a ``node.invoke.request`` event
and is matched with the node's ``node.invoke.result`` by id; a timeout sends ``node.invoke.cancel``, and a
node that disconnects fails its calls at once instead of leaving them to time out.

With several replicas a node's socket is held by one of them; its row names that replica's process, and a
call made anywhere else travels there as a ``node.invoke`` control message on the Redis bus and comes back
as ``node.invoke.done``. Pairing changes travel the same way (``node.pairing``), so the replica holding the
socket is the one that tells the node and hands it its token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from gateway.devices import policy
from gateway.devices.store import APPROVED, PENDING, REJECTED, Admission, NodeStore
from gateway.dispatch.callers import PAIRING, READ, Caller
from gateway.protocol import Forbidden, InvalidRequest, NotPaired, RpcError, Unavailable
from gateway.server.connection import CLOSE_POLICY, Connection

if TYPE_CHECKING:
    from gateway.bus import EventBus
    from gateway.composition.callable_types import Broadcast
    from gateway.config import ConfigStore
    from gateway.protocol.connect_params import ConnectParams
    from gateway.store import Database
    from gateway.store.idempotency import Durable

__all__ = ["EventHandler", "NodeService", "NodeSession", "ParamCheck"]

ParamCheck = Callable[[Any], None]
EventHandler = Callable[[str, Any], Awaitable[None]]
"""What the gateway does with one kind of node event besides relaying it: ``handler(node_id, payload)``."""

log = structlog.get_logger("gateway.devices")

REMOTE_MARGIN_S = 5.0
"""Extra wait for a call relayed to another replica, beyond the node's own timeout."""

MAX_EVENT_KINDS = 32
"""Distinct ``node.event`` names remembered per node (the latest payload of each)."""

IDEMPOTENCY_METHOD = "node.invoke"


@dataclass
class NodeSession:
    """One node's socket on this replica, and what it told us."""

    node_id: str
    conn: Connection
    caller: Caller
    paired: bool
    platform: str
    display_name: str
    caps: list[str]
    commands: list[str]
    version: str
    connected_at_ms: int
    pending: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    events: dict[str, Any] = field(default_factory=dict)
    inventory: dict[str, Any] = field(default_factory=dict)


def _fingerprint(node_id: str, command: str, params: Any) -> str:
    body = orjson.dumps([node_id, command, params], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(body).hexdigest()


def _unknown(ref: str) -> InvalidRequest:
    return InvalidRequest(f"unknown node: {ref} (node.list shows the nodes)", details={"code": "UNKNOWN_NODE",
                                                                                      "nodeId": ref})


class NodeService:
    """Nodes as the methods use them: pairing, listing, and invoking commands."""

    def __init__(self, db: Database, config: ConfigStore, broadcast: Broadcast, bus: EventBus | None,
                 replica_id: str, instance_id: str, durable: Durable | None) -> None:
        self._config = config
        self._broadcast = broadcast
        self._bus = bus
        self._replica_id = replica_id
        self._instance_id = instance_id
        """This start of the gateway: the node sockets it holds are recorded under it."""
        self._durable = durable
        """``node.invoke`` answers kept for idempotent retries (the dispatcher's durable outcomes)."""
        self.store = NodeStore(db)
        self.sessions: dict[str, NodeSession] = {}
        self._by_conn: dict[str, NodeSession] = {}
        self._remote: dict[str, asyncio.Future[Any]] = {}
        self._inflight: dict[str, tuple[str, asyncio.Future[Any]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.param_checks: dict[str, ParamCheck] = {}
        """Per command, a check of ``node.invoke`` params made before the call leaves the gateway (a
        capability registers its own: the canvas checks every A2UI line). It raises ``InvalidRequest``."""
        self.event_handlers: dict[str, EventHandler] = {}
        """Per node event name, what the gateway does with it besides relaying it to operators."""
        self.on_connect: list[Callable[[str], None]] = []
        """Called with a paired node's id when it connects here (messages kept for it run then)."""
        self._serving: dict[str, asyncio.Task[Any]] = {}
        """Calls relayed here from other replicas, by call id: a caller that stops waiting cancels its call."""

    # -- connect and disconnect ----------------------------------------------------------------

    async def admit(self, params: ConnectParams, device_id: str, remote: str, *, loopback: bool) -> Admission:
        """Record a node's connect (before hello-ok); the caller refuses a rejected node."""
        assert params.device is not None
        cfg = self._config.config.nodes
        client = params.client
        admission = await self.store.admit(
            device_id=device_id, public_key=params.device.publicKey, client_id=client.id,
            display_name=client.displayName, platform=client.platform or "", version=client.version or "",
            caps=list(params.caps or []), commands=list(params.commands or []), remote=remote,
            replica=self._replica_id, instance=self._instance_id,
            auto_approve=cfg.autoApproveLoopback and loopback)
        if admission.new_request:
            self._broadcast("node.pair.requested", _request_view(admission.node), scope=PAIRING)
            pruned = await self.store.prune_pending(cfg.maxPendingRequests)
            if pruned:
                log.warning("dropped the oldest pending node pairing requests", dropped=pruned)
        return admission

    async def token_valid(self, node_id: str, token: str) -> bool:
        return await self.store.token_valid(node_id.lower(), token)

    async def hello_token(self, admission: Admission) -> str | None:
        """A node token for the hello-ok of an approved node that does not hold one yet."""
        if admission.status != APPROVED or admission.node["hasToken"]:
            return None
        return await self.store.issue_token(admission.node["nodeId"])

    def attach(self, conn: Connection, caller: Caller, admission: Admission) -> None:
        node = admission.node
        old = self.sessions.get(node["nodeId"])
        if old is not None and old.conn is not conn:  # the same node reconnected: the old socket is stale
            old.conn.close(CLOSE_POLICY, "replaced by a newer connection of this node")
            self._drop(old, "the node reconnected on another socket")
        session = NodeSession(
            node_id=node["nodeId"], conn=conn, caller=caller, paired=admission.status == APPROVED,
            platform=node["platform"], display_name=node["displayName"], caps=node["caps"],
            commands=node["commands"], version=node["version"], connected_at_ms=conn.connected_at_ms)
        self.sessions[session.node_id] = session
        self._by_conn[conn.conn_id] = session
        log.info("node connected", node_id=session.node_id, name=session.display_name, paired=session.paired,
                 remote=conn.remote)
        self._presence(session, connected=True)
        if session.paired:
            self._connected(session.node_id)

    def _connected(self, node_id: str) -> None:
        for hook in self.on_connect:
            try:
                hook(node_id)
            except Exception:
                log.exception("node connect hook failed", node_id=node_id)

    async def detach(self, conn: Connection) -> None:
        session = self._by_conn.pop(conn.conn_id, None)
        if session is None:
            return
        if self.sessions.get(session.node_id) is session:
            del self.sessions[session.node_id]
            try:  # recorded before the callers hear of it, so a retry sees the node offline
                await self.store.disconnected(session.node_id, self._instance_id)
            except Exception:
                log.exception("could not record a node's disconnect", node_id=session.node_id)
            self._drop(session, "the node disconnected")
            log.info("node disconnected", node_id=session.node_id)
            self._presence(session, connected=False)

    def _drop(self, session: NodeSession, why: str) -> None:
        """Fail the session's calls in flight: the caller hears at once, not at its timeout."""
        for call_id, fut in list(session.pending.items()):
            if not fut.done():
                fut.set_exception(Unavailable(
                    f"node {session.display_name} disconnected before answering ({why})",
                    details={"code": "NODE_DISCONNECTED", "nodeId": session.node_id, "invokeId": call_id},
                    retryable=True))
        session.pending.clear()

    def _presence(self, session: NodeSession, *, connected: bool) -> None:
        self._broadcast("node.presence", {
            "nodeId": session.node_id, "displayName": session.display_name, "platform": session.platform,
            "connected": connected, "paired": session.paired, "ts": int(time.time() * 1000)}, drop_if_slow=True)

    def session_for(self, caller: Caller) -> NodeSession:
        """The node session behind a node connection's call."""
        session = self._by_conn.get(caller.conn_id)
        if session is None:
            raise Unavailable("this node connection is not registered (reconnect)", retryable=True)
        return session

    @staticmethod
    def require_paired(session: NodeSession) -> None:
        if not session.paired:
            raise NotPaired("this node is not paired yet: the gateway owner must approve its pairing request",
                            details={"code": "PAIRING_REQUIRED", "nodeId": session.node_id})

    # -- what nodes send ---------------------------------------------------------------------

    def result(self, session: NodeSession, invoke_id: str, answer: dict[str, Any]) -> bool:
        """A ``node.invoke.result``; False when no call waits for it (late, or never sent)."""
        fut = session.pending.pop(invoke_id, None)
        if fut is None or fut.done():
            return False
        fut.set_result(answer)
        return True

    def event(self, session: NodeSession, event: str, payload: Any) -> None:
        if event not in session.events and len(session.events) >= MAX_EVENT_KINDS:
            session.events.pop(next(iter(session.events)))
        session.events[event] = payload
        self._broadcast("node.event", {"nodeId": session.node_id, "event": event, "payload": payload,
                                         "ts": int(time.time() * 1000)}, scope=READ, drop_if_slow=True)
        handler = self.event_handlers.get(event)
        if handler is not None:
            self._spawn(self._handle_event(handler, session, event, payload))

    async def _handle_event(self, handler: EventHandler, session: NodeSession, event: str, payload: Any) -> None:
        try:
            await handler(session.node_id, payload)
        except Exception:
            log.exception("node event handler failed", node=session.node_id, event_name=event)

    # -- listing -------------------------------------------------------------------------------

    async def list(self) -> list[dict[str, Any]]:
        """Every paired, pending or rejected node, with whether (and where) it is connected now."""
        return [self._live(node) for node in await self.store.list()]

    def live_view(self, node: dict[str, Any]) -> dict[str, Any]:
        """A stored node as it is now: connected (here or on another replica), its commands and the allowed ones."""
        return self._live(node)

    def _live(self, node: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions.get(node["nodeId"])
        instance = node.get("instance")
        # A row naming this very process without a live session here is one whose socket just closed.
        elsewhere = instance is not None and instance != self._instance_id
        node = {**node, "connected": session is not None or elsewhere}
        if session is not None:
            node.update(connectedAtMs=session.connected_at_ms, caps=session.caps, commands=session.commands,
                        connectedHere=True)
        cfg = self._config.config.nodes
        node["allowedCommands"] = [c for c in node["commands"] if policy.allowed(
            c, node["platform"], allow=cfg.allowCommands, deny=cfg.denyCommands)]
        node.pop("instance", None)
        return node

    async def describe(self, ref: str) -> dict[str, Any]:
        node = await self.store.find(ref)
        if node is None:
            raise _unknown(ref)
        out = self._live(node)
        session = self.sessions.get(node["nodeId"])
        if session is not None:
            out["events"] = dict(session.events)
            out["inventory"] = dict(session.inventory)
        return out

    # -- pairing -------------------------------------------------------------------------------

    async def pairing_list(self) -> dict[str, Any]:
        nodes = await self.list()
        return {"pending": [_request_view(n) for n in nodes if n["status"] == PENDING],
                "paired": [n for n in nodes if n["status"] == APPROVED],
                "rejected": [n for n in nodes if n["status"] == REJECTED]}

    async def resolve(self, request_id: str, status: str) -> dict[str, Any]:
        node = await self.store.by_request(request_id)
        if node is None:
            raise InvalidRequest(f"unknown pairing request: {request_id} (node.pair.list shows the pending ones)",
                                 details={"code": "UNKNOWN_REQUEST", "requestId": request_id})
        node = await self.store.resolve(node["nodeId"], status)
        assert node is not None
        decision = "approved" if status == APPROVED else "rejected"
        self._broadcast("node.pair.resolved", {"requestId": node["requestId"], "nodeId": node["nodeId"],
                                                 "decision": decision, "ts": int(time.time() * 1000)}, scope=PAIRING)
        await self._pairing_changed(node["nodeId"], status, node["requestId"])
        log.info("node pairing resolved", node_id=node["nodeId"], decision=decision)
        return self._live(node)

    async def remove(self, ref: str) -> dict[str, Any]:
        node = await self.store.find(ref)
        if node is None:
            raise _unknown(ref)
        await self.store.remove(node["nodeId"])
        await self._pairing_changed(node["nodeId"], "removed", node["requestId"])
        self._broadcast("node.pair.resolved", {"requestId": node["requestId"], "nodeId": node["nodeId"],
                                                 "decision": "removed", "ts": int(time.time() * 1000)}, scope=PAIRING)
        return {"nodeId": node["nodeId"], "removed": True}

    async def rename(self, ref: str, name: str) -> dict[str, Any]:
        node = await self.store.find(ref)
        if node is None:
            raise _unknown(ref)
        renamed = await self.store.rename(node["nodeId"], name)
        assert renamed is not None
        session = self.sessions.get(node["nodeId"])
        if session is not None:
            session.display_name = name
        return self._live(renamed)

    async def _pairing_changed(self, node_id: str, status: str, request_id: str | None) -> None:
        """Apply a pairing change to the node's socket, here or (through the bus) on the replica holding it."""
        if node_id in self.sessions:
            await self._apply_pairing(node_id, status, request_id)
        elif self._bus is not None:
            self._bus.publish_control("node.pairing", {"nodeId": node_id, "status": status,
                                                         "requestId": request_id})

    async def _apply_pairing(self, node_id: str, status: str, request_id: str | None) -> None:
        session = self.sessions.get(node_id)
        if session is None:
            return
        if status != APPROVED:
            session.paired = False
            session.conn.close(CLOSE_POLICY, "node pairing rejected" if status == REJECTED else "node removed")
            return
        session.paired = True
        self._connected(node_id)
        token = await self.store.issue_token(node_id)
        # The node's own copy carries its token; operators got theirs without it.
        session.conn.send_event("node.pair.resolved", {"requestId": request_id, "nodeId": node_id,
                                                       "decision": "approved", "ts": int(time.time() * 1000),
                                                       "token": token})

    # -- invoking ------------------------------------------------------------------------------

    async def invoke(self, ref: str, command: str, params: Any, *, timeout_ms: int | None,
                     idempotency_key: str, remember: bool = True) -> dict[str, Any]:
        """Run ``command`` on a node and return its answer; each way it can fail has its own error code.

        ``remember``: keep the answer in the database for a repeated key; False for a stream of small calls, each
        its own key (a node turn's stdin), and for one that holds a file's bytes (``agent.file``), which must not be
        stored."""
        found = await self.store.find(ref)
        if found is None:
            raise _unknown(ref)
        instance = found.get("instance")
        node = self._live(found)
        node_id = node["nodeId"]
        if node["status"] != APPROVED:
            raise NotPaired(f"node {node['displayName']} is not paired (status {node['status']}): approve its "
                            f"request {node['requestId']} with node.pair.approve first",
                            details={"code": "NODE_NOT_PAIRED", "nodeId": node_id, "requestId": node["requestId"]})
        if command not in node["commands"]:
            raise InvalidRequest(f"node {node['displayName']} does not offer {command}"
                                 f"{self._why_missing(node_id, command)}; it offers: "
                                 f"{', '.join(node['commands']) or 'nothing'}",
                                 details={"code": "COMMAND_NOT_DECLARED", "nodeId": node_id, "command": command})
        if command not in node["allowedCommands"]:
            raise Forbidden(f"{command} is not allowed on {node['platform'] or 'this'} nodes by the gateway's "
                            f"policy (add it to nodes.allowCommands)",
                            details={"code": "COMMAND_NOT_ALLOWED", "nodeId": node_id, "command": command})
        if not node["connected"]:
            raise Unavailable(f"node {node['displayName']} is not connected",
                              details={"code": "NODE_NOT_CONNECTED", "nodeId": node_id}, retryable=True)
        check = self.param_checks.get(command)
        if check is not None:
            check(params)
        timeout_ms = timeout_ms or self._config.config.nodes.invokeTimeoutMs
        fingerprint = _fingerprint(node_id, command, params)
        return await self._once(idempotency_key, fingerprint, lambda: self._route(
            node, instance, command, params, timeout_ms, idempotency_key), remember=remember)

    def _why_missing(self, node_id: str, command: str) -> str:
        """The reason a node gave for not offering a command (``capabilities.unavailable``), if it gave one."""
        session = self.sessions.get(node_id)
        said = session.events.get("capabilities.unavailable") if session is not None else None
        if not isinstance(said, dict) or not isinstance(said.get("commands"), list):
            return ""
        if any(isinstance(p, str) and fnmatchcase(command, p) for p in said["commands"]):
            return f" ({str(said.get('reason'))[:300]})"
        return ""

    async def _once(self, key: str, fingerprint: str, call: Any, *, remember: bool = True) -> dict[str, Any]:
        """Run a call once per idempotency key: a repeat gets the first answer marked ``replayed``; the same
        key for a different call is refused (it would otherwise silently return the wrong answer)."""
        def check(stored_fp: str) -> None:
            if stored_fp != fingerprint:
                raise InvalidRequest("idempotencyKey was already used for a different node.invoke call",
                                     details={"code": "IDEMPOTENCY_KEY_REUSED"})

        running = self._inflight.get(key)
        if running is not None:
            check(running[0])
            return {**await asyncio.shield(running[1]), "replayed": True}
        durable = self._durable if remember else None
        if durable is not None:
            stored = await durable.get(IDEMPOTENCY_METHOD, key)
            if isinstance(stored, dict) and "fingerprint" in stored:
                check(stored["fingerprint"])
                return {**stored["result"], "replayed": True}
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._inflight[key] = (fingerprint, fut)
        try:
            result = await call()
        except BaseException as exc:
            fut.set_exception(exc if isinstance(exc, Exception) else Unavailable("call cancelled"))
            fut.exception()
            raise
        finally:
            self._inflight.pop(key, None)
        fut.set_result(result)
        if durable is not None:
            try:
                await durable.put(IDEMPOTENCY_METHOD, key, {"fingerprint": fingerprint, "result": result})
            except Exception:
                log.exception("could not remember a node.invoke answer")
        return result

    async def _route(self, node: dict[str, Any], instance: str | None, command: str, params: Any,
                     timeout_ms: int, key: str) -> dict[str, Any]:
        session = self.sessions.get(node["nodeId"])
        if session is not None:
            return await self._local(session, command, params, timeout_ms, key)
        bus = self._bus
        if bus is None or not bus.connected or not instance:
            raise Unavailable(f"node {node['displayName']} is connected to another replica, which cannot be "
                              "reached now (the event bus is down)",
                              details={"code": "NODE_NOT_REACHABLE", "nodeId": node["nodeId"]}, retryable=True)
        call_id = uuid.uuid4().hex
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._remote[call_id] = fut
        try:
            bus.publish_control("node.invoke", {
                "callId": call_id, "replyTo": self._instance_id, "target": instance, "nodeId": node["nodeId"],
                "command": command, "params": params, "timeoutMs": timeout_ms, "idempotencyKey": key})
            try:
                answer = await asyncio.wait_for(fut, timeout_ms / 1000 + REMOTE_MARGIN_S)
            except asyncio.CancelledError:  # the caller stopped (an agent turn's /stop): so does the call there
                bus.publish_control("node.invoke.abandon", {"callId": call_id, "target": instance})
                raise
            except TimeoutError:
                raise Unavailable(f"node {node['displayName']} (on another replica) did not answer {command} "
                                  f"within {timeout_ms} ms", retryable=True,
                                  details={"code": "NODE_INVOKE_TIMEOUT", "nodeId": node["nodeId"]}) from None
        finally:
            self._remote.pop(call_id, None)
        if not answer.get("ok"):
            raise RpcError.from_shape(answer.get("error") or {})
        result: dict[str, Any] = answer["result"]
        return result

    async def _local(self, session: NodeSession, command: str, params: Any, timeout_ms: int,
                     key: str) -> dict[str, Any]:
        invoke_id = uuid.uuid4().hex
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        session.pending[invoke_id] = fut
        request: dict[str, Any] = {"id": invoke_id, "nodeId": session.node_id, "command": command,
                                   "timeoutMs": timeout_ms, "idempotencyKey": key}
        if params is not None:  # OpenClaw's NodeInvokeRequestEvent: a string, or absent
            request["paramsJSON"] = orjson.dumps(params).decode()
        started = time.perf_counter()
        if not session.conn.send_event("node.invoke.request", request):
            session.pending.pop(invoke_id, None)
            raise Unavailable(f"node {session.display_name} is not connected",
                              details={"code": "NODE_NOT_CONNECTED", "nodeId": session.node_id}, retryable=True)
        try:
            answer = await asyncio.wait_for(fut, timeout_ms / 1000)
        except asyncio.CancelledError:  # the caller stopped waiting (an agent turn's /stop): the node stops too
            session.pending.pop(invoke_id, None)
            session.conn.send_event("node.invoke.cancel", {"invokeId": invoke_id, "nodeId": session.node_id})
            raise
        except TimeoutError:
            session.pending.pop(invoke_id, None)
            session.conn.send_event("node.invoke.cancel", {"invokeId": invoke_id, "nodeId": session.node_id})
            raise Unavailable(f"node {session.display_name} did not answer {command} within {timeout_ms} ms",
                              details={"code": "NODE_INVOKE_TIMEOUT", "nodeId": session.node_id,
                                       "invokeId": invoke_id}, retryable=True) from None
        took_ms = round((time.perf_counter() - started) * 1000, 1)
        if not answer.get("ok"):
            error = answer.get("error") or {}
            message = str(error.get("message") or "the node reported a failure")
            kind = {"INVALID_REQUEST": InvalidRequest, "FORBIDDEN": Forbidden}.get(str(error.get("code")), Unavailable)
            raise kind(f"node {session.display_name} refused {command}: {message}", retryable=False,
                       details={"code": "NODE_ERROR", "nodeId": session.node_id, "nodeError": error})
        payload = answer.get("payload")
        if payload is None and isinstance(answer.get("payloadJSON"), str):
            try:
                payload = orjson.loads(answer["payloadJSON"])
            except orjson.JSONDecodeError:
                payload = answer["payloadJSON"]
        return {"ok": True, "nodeId": session.node_id, "command": command, "payload": payload, "tookMs": took_ms}

    # -- across replicas -----------------------------------------------------------------------

    def on_remote_invoke(self, msg: Any) -> None:
        if not isinstance(msg, dict) or msg.get("target") != self._instance_id:
            return
        call_id = str(msg.get("callId"))
        task = asyncio.create_task(self._serve_remote(msg))
        self._serving[call_id] = task
        self._tasks.add(task)
        def done(t: asyncio.Task[Any]) -> None:
            self._tasks.discard(t)
            self._serving.pop(call_id, None)

        task.add_done_callback(done)

    def on_remote_abandon(self, msg: Any) -> None:
        """The replica that relayed a call stopped waiting for it: cancel it here (the node is told)."""
        if isinstance(msg, dict) and msg.get("target") == self._instance_id:
            task = self._serving.get(str(msg.get("callId")))
            if task is not None:
                task.cancel()

    async def _serve_remote(self, msg: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"callId": msg.get("callId"), "to": msg.get("replyTo")}
        session = self.sessions.get(str(msg.get("nodeId")))
        try:
            if session is None:
                raise Unavailable("the node disconnected from the replica that held it",
                                  details={"code": "NODE_NOT_CONNECTED", "nodeId": msg.get("nodeId")}, retryable=True)
            reply["result"] = await self._local(session, str(msg["command"]), msg.get("params"),
                                                int(msg.get("timeoutMs") or 30_000), str(msg.get("idempotencyKey")))
            reply["ok"] = True
        except RpcError as err:
            reply.update(ok=False, error=err.shape())
        except asyncio.CancelledError:
            return  # abandoned by its caller: nobody reads an answer
        except Exception:
            log.exception("relayed node.invoke failed")
            reply.update(ok=False, error=Unavailable("relayed node.invoke failed: internal error").shape())
        if self._bus is not None:
            self._bus.publish_control("node.invoke.done", reply)

    def on_remote_done(self, msg: Any) -> None:
        if not isinstance(msg, dict) or msg.get("to") != self._instance_id:
            return
        fut = self._remote.get(str(msg.get("callId")))
        if fut is not None and not fut.done():
            fut.set_result(msg)

    def on_bus_lost(self) -> None:
        """Redis went away: an invoke waiting on another replica's answer cannot get it; say so now, not at its
        timeout (the node may well have run the command: the caller retries with the same idempotencyKey)."""
        lost = Unavailable("the replica holding the node can no longer be reached (the event bus to it went down "
                           "mid-invoke); retry with the same idempotencyKey", retryable=True,
                           details={"code": "NODE_NOT_REACHABLE"}).shape()
        for fut in self._remote.values():
            if not fut.done():
                fut.set_result({"ok": False, "error": lost})

    def on_remote_pairing(self, msg: Any) -> None:
        if isinstance(msg, dict) and msg.get("nodeId") in self.sessions:
            self._spawn(self._apply_pairing(str(msg["nodeId"]), str(msg.get("status")), msg.get("requestId")))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def start(self) -> None:
        """Forget the node sockets a previous process of this replica held (a crash left them marked connected),
        and take the calls and pairing changes other replicas relay for the nodes connected here."""
        cleared = await self.store.forget_replica(self._replica_id)
        if cleared:
            log.info("cleared node connections of this replica's previous process", nodes=cleared)
        if self._bus is not None:
            self._bus.on_control("node.invoke", self.on_remote_invoke)
            self._bus.on_control("node.invoke.done", self.on_remote_done)
            self._bus.on_control("node.invoke.abandon", self.on_remote_abandon)
            self._bus.on_control("node.pairing", self.on_remote_pairing)
            self._bus.on_disconnect(self.on_bus_lost)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _request_view(node: dict[str, Any]) -> dict[str, Any]:
    """A pending request as OpenClaw's clients list it (``requestId``, ``nodeId``, what it declared)."""
    return {"requestId": node["requestId"], "nodeId": node["nodeId"], "displayName": node["displayName"],
            "platform": node["platform"], "version": node["version"], "remoteIp": node["remoteIp"],
            "caps": node["caps"], "commands": node["commands"], "ts": node["requestedAtMs"],
            "status": node["status"]}
