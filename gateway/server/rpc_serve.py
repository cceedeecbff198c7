"""One RPC socket served, from its first byte to its close: held as a stranger until it logs in (``preauth``), the
connect exchange (``handshake`` decides; ``_Handshake`` reads and answers), the welcome (``hello-ok``, presence,
a node's admission), then its requests, answered inline as they are read when they can be (``inline`` methods)
or each in a task of its own, at most ``MAX_IN_FLIGHT`` at once and within the connection's request rate.

``gateway.server.app`` routes an upgrade on an RPC path here (``serve_socket``); ``gateway.server.rpc_socket`` is
the driver underneath and ``gateway.server.connection`` the send side.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

import structlog

from gateway.agents.tokens import RunTokens
from gateway.composition.gateway import Gateway
from gateway.devices.store import APPROVED, REJECTED, Admission
from gateway.dispatch.dispatcher import Caller
from gateway.people.service import SIGNIN_PREFIX, person_key
from gateway.people.signin import person_grant
from gateway.protocol import (
    MAX_PREAUTH_FRAME_BYTES,
    InvalidFrame,
    InvalidRequest,
    NotPaired,
    RequestFrame,
    RpcError,
    Unavailable,
    describe_validation_error,
    error_frame,
    ok_frame,
    parse_request,
)
from gateway.protocol.connect_params import ConnectParams
from gateway.protocol.events import EVENTS
from gateway.server import handshake
from gateway.server.connection import CLOSE_INTERNAL, CLOSE_POLICY, CLOSE_RESTART, CLOSE_TOO_BIG, Connection
from gateway.server.request_rate import RequestRate, rate_limited
from gateway.server.rpc_socket import RpcSocket

__all__ = ["MAX_IN_FLIGHT", "serve_socket"]

log = structlog.get_logger("gateway.server.app")  # the name its log lines have always carried

MAX_IN_FLIGHT = 256
"""Requests one connection may have running at once; past this we stop reading (backpressure)."""
YIELD_EVERY = 64
"""Requests refused for their rate in a row before ``_serve_requests`` lets the loop run others (they take no
task, so nothing else would make it wait)."""

LOOPBACK = ("127.", "::1", "localhost")


def _is_loopback(host: str) -> bool:
    return host.startswith(LOOPBACK) or host.startswith("::ffff:127.")


class _Handshake:
    """Runs the connect exchange for one socket; returns the authenticated caller or None."""

    def __init__(self, gateway: Gateway, conn: Connection) -> None:
        self.gw = gateway
        self.conn = conn
        self.nonce = str(uuid.uuid4())
        self.node_admission: Admission | None = None
        """For a node: what its connect found in the node store (``gateway.devices``)."""
        self.operator_device: str | None = None
        """An approved operator device that signed in (not as an agent run): it is handed a device token."""

    def _refuse(self, frame_id: Any, err: RpcError, close_code: int = CLOSE_POLICY) -> None:
        self.conn.send(error_frame(frame_id, err))
        self.conn.close(close_code, err.message)

    async def run(self) -> tuple[RequestFrame, ConnectParams, Caller] | None:
        conn, gw = self.conn, self.gw
        conn.send({"type": "event", "event": "connect.challenge",
                   "payload": {"nonce": self.nonce, "ts": int(time.time() * 1000)}})
        deadline = time.monotonic() + gw.config.gateway.handshakeTimeoutMs / 1000
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                conn.close(CLOSE_POLICY, "handshake timeout")
                return None
            try:
                async with asyncio.timeout(remaining):  # cheaper than wait_for: no extra task per frame
                    text = await conn.socket.receive_text()
            except TimeoutError:
                conn.close(CLOSE_POLICY, "handshake timeout")
                return None
            if text is None:
                return None
            # A UTF-8 character is at most 4 bytes: only long texts need the exact (copying) count.
            if len(text) > MAX_PREAUTH_FRAME_BYTES // 4 and len(text.encode()) > MAX_PREAUTH_FRAME_BYTES:
                conn.close(CLOSE_TOO_BIG, "frame too large before connect")
                return None
            try:
                frame = parse_request(text)
            except InvalidFrame as err:
                self._refuse(err.frame_id, err)
                return None
            except ValueError:
                log.debug("ignoring non-JSON frame before connect", conn_id=conn.conn_id)
                continue
            if frame.method != "connect":
                self._refuse(frame.id, InvalidRequest("invalid handshake: first request must be connect"))
                return None
            return await self._connect(frame)

    async def _connect(self, frame: RequestFrame) -> tuple[RequestFrame, ConnectParams, Caller] | None:
        """Decide with ``gateway.server.handshake`` (no I/O there); here only the awaits: the throttle's pause, the
        device table, and sending the answer."""
        from pydantic import ValidationError

        conn, gw = self.conn, self.gw
        try:
            params = ConnectParams.model_validate(frame.params or {})
        except ValidationError as exc:
            self._refuse(frame.id, InvalidRequest(f"invalid connect params: {describe_validation_error(exc)}"))
            return None
        try:
            conn.protocol = handshake.negotiate(params)
            given = handshake.given_token(params)
            node_token_valid = None
            if (params.role == "node" and not given and params.auth and params.auth.deviceToken
                    and params.device and gw.nodes is not None):
                node_token_valid = await gw.nodes.token_valid(params.device.id, params.auth.deviceToken)
            grant = gw.run_tokens.grant(given)  # this replica's own runs: no wait
            if grant is None and RunTokens.looks_like(given):  # a node turn another replica runs
                grant = await gw.run_tokens.find(given, conn.remote)
            if grant is None and given is not None and given.startswith(SIGNIN_PREFIX):
                grant = await person_grant(gw.people, given)  # a person's own sign-in (gateway.people)
            try:
                accepted = handshake.authenticate(
                    params, gateway_token=gw.token, run_grant=grant, nonce=self.nonce,
                    looks_like_run_token=RunTokens.looks_like(given) and not RunTokens.looks_like(gw.token),
                    node_token_valid=node_token_valid)
            except handshake.Refusal as refusal:
                # Valid credentials always get in, whatever others did from this address; a failure from a
                # locked address is answered AUTH_RATE_LIMITED, and only after a pause.
                wait = gw.throttle.retry_after(conn.remote)
                locked = handshake.rate_limited(wait)
                if locked is None:
                    raise
                log.info("connect rate limited", conn_id=conn.conn_id, remote=conn.remote,
                         retry_after_s=round(wait, 1))
                await asyncio.sleep(min(wait, 1.0))  # slow the guesser down before answering
                locked.counts_as_failure = refusal.counts_as_failure
                raise locked from None
        except handshake.Refusal as refusal:
            if refusal.counts_as_failure:
                gw.throttle.failure(conn.remote)
            log.info("connect refused", conn_id=conn.conn_id, remote=conn.remote,
                     code=(refusal.error.details or {}).get("code"))
            self._refuse(frame.id, refusal.error, refusal.close_code)
            return None
        if params.role == "node":
            if not await self._admit_node(frame, params, accepted.device_id):
                return None
        elif accepted.device_id is not None and params.device is not None:
            from gateway.devices import operators as devices

            auto = gw.config.gateway.auth.autoApproveLoopbackDevices and _is_loopback(conn.remote)
            status = await devices.record(gw.db, gw.broadcast, params, accepted.device_id, remote=conn.remote,
                                          auto_approve=auto)
            if status != devices.APPROVED:
                message = ("device was rejected by the gateway owner" if status == devices.REJECTED
                           else "device is not paired yet: the gateway owner must approve it")
                self._refuse(frame.id, NotPaired(
                    message,
                    details={"code": "PAIRING_REQUIRED", "deviceId": accepted.device_id, "status": status},
                ))
                return None
            if accepted.run_grant is None:
                self.operator_device = accepted.device_id
        return frame, params, handshake.caller_for(params, accepted, conn_id=conn.conn_id, remote=conn.remote)


    async def _admit_node(self, frame: RequestFrame, params: ConnectParams, device_id: str | None) -> bool:
        """A node needs a device identity (its node id) and must not be rejected; a pending one may connect
        and wait for the owner, but no node method or invocation works for it until approved."""
        gw = self.gw
        if device_id is None or params.device is None:
            self._refuse(frame.id, InvalidRequest(
                "a node must prove a device identity: send connect.device signed with its Ed25519 key",
                details={"code": "DEVICE_IDENTITY_REQUIRED"}))
            return False
        if gw.nodes is None:
            self._refuse(frame.id, Unavailable("nodes are not available on this gateway"))
            return False
        admission = await gw.nodes.admit(params, device_id, self.conn.remote, loopback=_is_loopback(self.conn.remote))
        if admission.status == REJECTED:
            self._refuse(frame.id, NotPaired(
                "node was rejected by the gateway owner (node.pair.approve or node.pair.remove undoes it)",
                details={"code": "PAIRING_REQUIRED", "nodeId": device_id, "status": admission.status,
                         "requestId": admission.node["requestId"]}))
            return False
        self.node_admission = admission
        return True


def _main_key(gw: Gateway, caller: Caller) -> str:
    """Where a client starts: the default agent's main session, or a person's own conversation with their agent."""
    default = gw.config.agents.default
    if caller.person_id is None:
        return f"agent:{default}:main"
    person = gw.people.peek(caller.person_id)
    agent = person.agent_id if person is not None and person.agent_id else gw.sessions.default_agent_id
    return person_key(agent, caller.person_id)


async def _ensure_person_main(gw: Gateway, caller: Caller) -> None:
    """A person's own conversation, made theirs before their page asks for it (OpenClaw's Control UI resolves the
    hello's ``mainSessionKey`` and shows no chat for an unknown one)."""
    assert caller.person_id is not None
    key = _main_key(gw, caller)
    try:
        await gw.sessions.ensure(key, person_id=caller.person_id)
    except InvalidRequest:  # their agent is no longer configured: the page says so when it asks
        return
    gw.people.note_session(key, caller.person_id)


def _hello(gw: Gateway, conn: Connection, caller: Caller) -> dict[str, Any]:
    cfg = gw.config
    return handshake.hello_ok(
        protocol=conn.protocol,
        caller=caller,
        # OpenClaw's HelloOk is a closed object: this start of the gateway is its bootId; the replica id and
        # the gateway's own health figures are in the ``status`` and ``health`` results instead.
        server={"version": gw.version, "connId": conn.conn_id, "bootId": gw.instance_id},
        methods=gw.dispatcher.registry.names(),
        events=list(EVENTS),
        snapshot={
            "presence": gw.presence_board.snapshot_for(conn.conn_id, cfg.gateway.helloPresenceLimit),
            "health": {"ok": True, "ts": int(time.time() * 1000), "defaultAgentId": cfg.agents.default},
            "stateVersion": gw.presence_board.state_version(),
            "uptimeMs": gw.uptime_ms(),
            "sessionDefaults": {
                "defaultAgentId": cfg.agents.default,
                "mainKey": "main",
                # a person signed in with their own credential starts in their own conversation (gateway.people)
                "mainSessionKey": _main_key(gw, caller),
                "scope": cfg.session.dmScope,
            },
        },
        policy={
            "maxPayload": cfg.gateway.maxPayload,
            "maxBufferedBytes": cfg.gateway.maxBufferedBytes,
            "tickIntervalMs": cfg.gateway.tickIntervalMs,
        },
    )


def _inline_answers(gw: Gateway, conn: Connection, caller: Caller, rate: RequestRate) -> Callable[[str], bool]:
    """What answers this connection's requests for ``inline`` methods as their frames are read
    (``gateway.server.rpc_socket``), and any request over the connection's rate (refused here, where it is
    cheapest); anything else, including a malformed frame, is left to ``_serve_requests``, which counts it."""
    registry = gw.dispatcher.registry

    def answer(text: str) -> bool:
        if conn.closed:
            return False
        try:
            frame = parse_request(text)
            if frame.method == "connect":
                return False
            if wait := rate.wait():
                conn.send(error_frame(frame.id, rate_limited(wait, rate)))
                return True
            spec = registry.get(frame.method)
            if spec is None or not spec.inline:
                return False
            rate.take()
            response = gw.dispatcher.answer_now(frame, caller, gw.handler_parts)
        except ValueError:  # InvalidFrame too: _serve_requests answers it
            return False
        except Exception:
            log.exception("inline answer failed", conn_id=conn.conn_id)
            return False
        if response is None:
            return False
        conn.send(response)
        return True

    return answer


async def _serve_requests(gw: Gateway, conn: Connection, caller: Caller, rate: RequestRate) -> None:
    limit = asyncio.Semaphore(MAX_IN_FLIGHT)
    unyielded = 0

    async def handle(frame: RequestFrame) -> None:
        try:
            if conn.closed:  # read before its credential ended (a run's token revoked, a sign-in): not served
                return
            conn.send(await gw.dispatcher.dispatch(frame, caller, gw.handler_parts))
        except Exception:  # a bug outside the handler: the caller still gets an answer, never silence
            log.exception("request failed outside its handler", method=frame.method, request_id=frame.id)
            conn.send(error_frame(frame.id, Unavailable(f"{frame.method} failed: internal error")))
        finally:
            limit.release()

    while not conn.closed:
        text = await conn.socket.receive_text()
        if text is None:
            return
        try:
            frame = parse_request(text)
        except InvalidFrame as err:
            conn.send(error_frame(err.frame_id, err))
            continue
        except ValueError:
            log.debug("ignoring non-JSON frame", conn_id=conn.conn_id)
            continue
        if frame.method == "connect":
            conn.send(error_frame(frame.id, InvalidRequest("already connected: connect is only valid once")))
            continue
        if wait := rate.take():  # refused without a task; a queue of them must not hold the loop either
            conn.send(error_frame(frame.id, rate_limited(wait, rate)))
            unyielded += 1
            if unyielded >= YIELD_EVERY:
                unyielded = 0
                await asyncio.sleep(0)
            continue
        unyielded = 0
        await limit.acquire()
        task = asyncio.create_task(handle(frame))
        conn.tasks.add(task)
        task.add_done_callback(conn.tasks.discard)


def _drop_waiting(gw: Gateway, stale: list[Connection]) -> None:
    """Close the strangers ``PreAuthSockets`` gave up on; while a cap is still exceeded, look again later."""
    for conn in stale:
        conn.close(CLOSE_POLICY, "too many connections waiting to log in")
    delay = gw.preauth.overdue_in()
    if delay is None or gw.preauth_sweep is not None:
        return

    def sweep() -> None:
        gw.preauth_sweep = None
        _drop_waiting(gw, gw.preauth.sweep())

    gw.preauth_sweep = asyncio.get_running_loop().call_later(delay, sweep)


async def serve_socket(gateway: Gateway, socket: RpcSocket) -> None:
    """One RPC socket's life: waiting as a stranger, the connect exchange, the welcome, then its requests until it
    closes; whatever happens, it leaves the gateway's lists and its socket is let go."""
    conn = Connection(socket, uuid.uuid4().hex[:16], socket.remote,
                      max_buffered=gateway.config.gateway.maxBufferedBytes, budget=gateway.outbound)
    conn.start_writer()
    if gateway.stopping:
        conn.close(CLOSE_RESTART, "gateway restarting")
        await conn.wait_closed()
        await conn.abort()
        return
    _drop_waiting(gateway, gateway.preauth.admit(conn.conn_id, socket.remote, conn, socket.peer_spoke))
    handshake = _Handshake(gateway, conn)
    try:
        try:
            outcome = await handshake.run()
        finally:
            gateway.preauth.release(conn.conn_id, socket.remote)
        if outcome is None:
            await conn.wait_closed()
            return
        socket.lift_frame_limit()  # frames up to gateway.maxPayload from now on
        frame, _params, caller = outcome
        await _welcome(gateway, conn, caller, handshake, frame.id)
        limits = gateway.config.gateway.requestRate
        rate = RequestRate(limits.perSecond, limits.burst)  # one bucket for both paths (request_rate)
        socket.answer_inline(_inline_answers(gateway, conn, caller, rate))
        try:
            await _serve_requests(gateway, conn, caller, rate)
        finally:
            socket.answer_inline(None)
    except Exception:
        log.exception("connection failed", conn_id=conn.conn_id)
        conn.close(CLOSE_INTERNAL, "internal error")
    finally:
        gateway.remove_connection(conn)
        if gateway.nodes is not None and handshake.node_admission is not None:
            await gateway.nodes.detach(conn)
        if conn.closed:
            await conn.wait_closed(1.0)
        await conn.abort()


async def _welcome(gateway: Gateway, conn: Connection, caller: Caller, handshake: _Handshake, request_id: str) -> None:
    """After a successful connect: the caller's own conversation, presence, ``hello-ok`` (with the device or node
    token to come back with), and the connection listed where broadcasts find it."""
    conn.caller = caller
    conn.connected_at_ms = int(time.time() * 1000)
    if caller.person_id is not None:  # their own conversation exists from the start: a page resolves it
        await _ensure_person_main(gateway, caller)
    gateway.presence_board.join(conn, caller)  # listed in its own snapshot, as OpenClaw does
    hello = _hello(gateway, conn, caller)
    if handshake.operator_device is not None:  # a reload signs in with it (OpenClaw's Control UI keeps it)
        from gateway.server.auth import operator_device_token

        hello["auth"]["deviceToken"] = operator_device_token(gateway.token, handshake.operator_device)
    admission = handshake.node_admission
    if admission is not None and gateway.nodes is not None:
        node_token = await gateway.nodes.hello_token(admission)
        if node_token:
            hello["auth"]["deviceToken"] = node_token  # connect with it from now on, without the gateway token
        hello["auth"]["nodeId"] = admission.node["nodeId"]
        hello["auth"]["paired"] = admission.status == APPROVED
        if admission.status != APPROVED:
            hello["auth"]["requestId"] = admission.node["requestId"]
        gateway.nodes.attach(conn, caller, admission)  # before hello-ok: its first call must find it
    conn.send(ok_frame(request_id, hello))
    gateway.add_connection(conn)
    conn.send_event("health", gateway.health())
    log.debug("client connected", conn_id=conn.conn_id, client=caller.client_id, role=caller.role,
              remote=conn.remote)


