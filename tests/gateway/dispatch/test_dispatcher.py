"""The method registry and dispatcher: unit tests of the pieces, then the real gateway over a socket."""

from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from gateway.access import Access
from gateway.access.doors import AccessControl
from gateway.dispatch.dispatcher import (
    ADMIN,
    NODE,
    READ,
    Caller,
    Dispatcher,
    IdempotencyCache,
    MethodSpec,
    Params,
    Registry,
    registry,
)
from gateway.methods import load_all
from gateway.protocol import InvalidRequest, RequestFrame, Unavailable
from tests.support.devices import DeviceKey
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, connect_params, masked_frame, operator

pytestmark = pytest.mark.openclaw_frames  # every frame received is checked against OpenClaw's schema

# -- IdempotencyCache ----------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_concurrent_duplicate_waits_for_the_first() -> None:
    cache = IdempotencyCache()
    gate = asyncio.Event()
    calls = 0

    async def slow() -> dict[str, int]:
        nonlocal calls
        calls += 1
        await gate.wait()
        return {"n": calls}

    first = asyncio.create_task(cache.run(("m", "k"), slow))
    second = asyncio.create_task(cache.run(("m", "k"), slow))
    await asyncio.sleep(0.01)
    assert not first.done() and not second.done()
    gate.set()
    assert await first == await second == {"n": 1}
    assert calls == 1
    # Different key or different method: runs again.
    assert await cache.run(("m", "other"), slow) == {"n": 2}
    assert await cache.run(("m2", "k"), slow) == {"n": 3}


async def test_a_cancelled_waiter_does_not_cancel_the_first() -> None:
    cache = IdempotencyCache()
    gate = asyncio.Event()

    async def slow() -> str:
        await gate.wait()
        return "done"

    first = asyncio.create_task(cache.run(("m", "k"), slow))
    waiter = asyncio.create_task(cache.run(("m", "k"), slow))
    await asyncio.sleep(0.01)
    waiter.cancel()
    gate.set()
    assert await first == "done"
    assert waiter.cancelled()


async def test_refusals_are_remembered_but_crashes_are_not() -> None:
    cache = IdempotencyCache()
    calls = 0

    async def refuse() -> None:
        nonlocal calls
        calls += 1
        raise InvalidRequest(f"no #{calls}")

    for _ in range(3):
        with pytest.raises(InvalidRequest, match="no #1"):
            await cache.run(("m", "k"), refuse)
    assert calls == 1

    async def crash() -> None:
        nonlocal calls
        calls += 1
        raise ValueError("boom")

    for _ in range(2):
        with pytest.raises(ValueError):
            await cache.run(("m", "crash"), crash)
    assert calls == 3 and ("m", "crash") not in cache


async def test_a_cancelled_first_call_is_forgotten_and_its_waiters_told() -> None:
    cache = IdempotencyCache()

    async def forever() -> None:
        await asyncio.Event().wait()

    first = asyncio.create_task(cache.run(("m", "k"), forever))
    await asyncio.sleep(0.01)
    waiter = asyncio.create_task(cache.run(("m", "k"), forever))
    await asyncio.sleep(0.01)
    first.cancel()
    with pytest.raises(Unavailable, match="cancelled"):
        await waiter
    assert ("m", "k") not in cache

    async def ok() -> str:
        return "ok"

    assert await cache.run(("m", "k"), ok) == "ok"


async def test_ttl_expires_entries() -> None:
    clock = _Clock()
    cache = IdempotencyCache(ttl_s=60, clock=clock)
    counter = iter(range(100))

    async def call() -> int:
        return next(counter)

    assert await cache.run(("m", "k"), call) == 0
    clock.now += 59
    assert await cache.run(("m", "k"), call) == 0
    clock.now += 2
    assert await cache.run(("m", "k"), call) == 1
    # Expired entries are swept when new ones arrive.
    clock.now += 61
    assert await cache.run(("m", "other"), call) == 2
    assert ("m", "k") not in cache and len(cache) == 1


async def test_size_is_bounded_oldest_out() -> None:
    cache = IdempotencyCache(max_entries=3)
    counter = iter(range(100))

    async def call() -> int:
        return next(counter)

    for i in range(10):
        await cache.run(("m", str(i)), call)
        assert len(cache) <= 3
    assert ("m", "9") in cache and ("m", "0") not in cache
    assert await cache.run(("m", "9"), call) == 9  # still remembered
    assert await cache.run(("m", "0"), call) == 10  # forgotten: runs again


# -- registry and authorization ------------------------------------------------------------------


def test_every_method_is_classified_with_a_params_model() -> None:
    load_all()
    known = {"operator.read", "operator.write", "operator.admin", "operator.approvals", "operator.pairing",
             "operator.questions", NODE}
    for spec in registry.specs():
        assert spec.scope in known, spec.name
        assert issubclass(spec.params, BaseModel), spec.name
        if spec.idempotent:
            assert "idempotencyKey" in spec.params.model_fields, spec.name
    approve = registry.get("device.pair.approve")
    assert approve is not None and approve.idempotent and approve.scope == "operator.pairing"
    assert registry.get("device:pair:approve") is approve


def _caller(role: str = "operator", scopes: tuple[str, ...] = (READ,)) -> Caller:
    return Caller(conn_id="c", role=role, scopes=frozenset(scopes), client_id="t", client_mode="test", remote="x")


async def _noop(_p: Any, _ctx: Any) -> None:
    return None


@pytest.mark.parametrize(
    ("spec_scope", "role", "scopes", "code"),
    [
        (READ, "operator", (READ,), None),
        (READ, "operator", ("operator.write",), None),
        (ADMIN, "operator", ("operator.write",), "MISSING_SCOPE"),
        ("operator.pairing", "operator", (ADMIN,), None),
        ("operator.approvals", "operator", (READ,), "MISSING_SCOPE"),
        (READ, "node", (), "ROLE_FORBIDDEN"),
        (NODE, "operator", (ADMIN,), "ROLE_REQUIRED"),
        (NODE, "node", (), None),
    ],
)
def test_authorize(spec_scope: str, role: str, scopes: tuple[str, ...], code: str | None) -> None:
    spec = MethodSpec(name="x", params=Params, scope=spec_scope, handler=_noop, access=(Access("gateway", "read"),))
    if code is None:
        Dispatcher._authorize(spec, _caller(role, scopes))
        return
    with pytest.raises(Exception) as info:
        Dispatcher._authorize(spec, _caller(role, scopes))
    assert getattr(info.value, "details", {})["code"] == code


# -- inline answers (Dispatcher.answer_now) ------------------------------------------------------


class _Say(Params):
    text: str = "hi"


class _NoPeople:
    """Nobody on record: every caller here holds the gateway token."""

    def role_of(self, person_id: str) -> None:
        return None

    def person_of_chat(self, channel: str, chat_id: str) -> None:
        return None

    def owner_of(self, session_key: str) -> None:
        return None


_GW: Any = SimpleNamespace(access=AccessControl(None, None, _NoPeople(), None))  # type: ignore[arg-type]


def _inline_dispatcher() -> tuple[Dispatcher, list[str]]:
    """A registry of its own: an inline method, one that is not, and an inline one that awaits after all."""
    reg = Registry()
    ran: list[str] = []

    @reg.method("echo", access=Access("gateway", "read"), params=_Say, scope=READ, inline=True)
    async def echo(p: _Say, _ctx: Any) -> dict[str, str]:
        ran.append("echo")
        return {"said": p.text}

    @reg.method("later", access=Access("gateway", "read"), scope=READ)
    async def later(_p: Any, _ctx: Any) -> None:
        ran.append("later")

    @reg.method("waits", access=Access("gateway", "read"), scope=READ, inline=True)
    async def waits(_p: Any, _ctx: Any) -> str:
        ran.append("waits")
        await asyncio.sleep(0)
        return "late"

    @reg.method("boom", access=Access("gateway", "read"), scope=READ, inline=True)
    async def boom(_p: Any, _ctx: Any) -> None:
        raise RuntimeError("a bug")

    return Dispatcher(reg, IdempotencyCache()), ran


def test_an_inline_method_is_answered_at_once_with_the_same_checks() -> None:
    dispatcher, ran = _inline_dispatcher()
    gw: Any = _GW
    assert dispatcher.answer_now(RequestFrame("1", "echo", {"text": "yo"}), _caller(), gw) == {
        "type": "res", "id": "1", "ok": True, "payload": {"said": "yo"}}
    bad = dispatcher.answer_now(RequestFrame("2", "echo", {"text": 5}), _caller(), gw)
    assert bad is not None and bad["error"]["message"] == "invalid echo params: at /text: must be string"
    node = dispatcher.answer_now(RequestFrame("3", "echo", None), _caller("node", ()), gw)
    assert node is not None and node["error"]["details"]["code"] == "ROLE_FORBIDDEN"
    crashed = dispatcher.answer_now(RequestFrame("4", "boom", None), _caller(), gw)
    assert crashed is not None and crashed["error"] == {
        "code": "UNAVAILABLE", "message": "boom failed: internal error", "retryable": True}
    assert ran == ["echo"]  # refused calls never reached the handler


def test_other_methods_and_an_inline_one_that_awaits_are_left_to_dispatch() -> None:
    dispatcher, ran = _inline_dispatcher()
    assert dispatcher.answer_now(RequestFrame("1", "later", None), _caller(), _GW) is None  # type: ignore[arg-type]
    assert dispatcher.answer_now(RequestFrame("2", "nope", None), _caller(), _GW) is None  # type: ignore[arg-type]
    assert dispatcher.answer_now(RequestFrame("3", "waits", None), _caller(), _GW) is None  # type: ignore[arg-type]
    assert ran == ["waits"]  # started, then closed: dispatch runs it again, in full
    frame = asyncio.run(dispatcher.dispatch(RequestFrame("3", "waits", None), _caller(), _GW))  # type: ignore[arg-type]
    assert frame["payload"] == "late"


def test_an_inline_method_cannot_be_idempotent() -> None:
    with pytest.raises(ValueError, match="inline method cannot be idempotent"):
        Registry().method("x", access=Access("gateway", "read"), inline=True, idempotent=True)


# -- over the wire --------------------------------------------------------------------------------


async def _raw_session(gw: GatewayProcess, **kw: Any) -> RawClient:
    """Connected, but with no reader task: the test reads every frame itself."""
    client = await RawClient.open(gw.url)
    await client.send_raw({"type": "req", "id": "c1", "method": "connect", "params": connect_params(gw.token, **kw)})
    while (frame := await client.recv())["type"] != "res":
        pass
    assert frame["ok"], frame
    return client


async def _next_res(client: RawClient) -> dict[str, Any]:
    while (frame := await client.recv())["type"] != "res":
        pass
    return frame


async def test_hello_lists_the_registry(gateway: GatewayProcess) -> None:
    load_all()
    client = await operator(gateway.url, gateway.token or "")
    assert client.hello is not None
    methods = client.hello["features"]["methods"]
    assert methods == sorted(methods)
    # The built-in registry, plus the methods of the plugins loaded by default (the memory plugin).
    assert set(methods) - set(registry.names()) == {"memory.forget", "memory.list", "memory.search", "memory.stats"}
    assert set(registry.names()) <= set(methods)
    await client.close()


async def test_unknown_method_bad_params_and_missing_scope(gateway: GatewayProcess) -> None:
    reader = await operator(gateway.url, gateway.token or "", scopes=["operator.read"])
    frame = await reader.req("no.such.method")
    assert frame["error"] == {"code": "INVALID_REQUEST", "message": "unknown method: no.such.method"}
    frame = await reader.req("logs.tail", {"limit": "ten"})
    assert frame["error"]["code"] == "INVALID_REQUEST"
    assert frame["error"]["message"] == "invalid logs.tail params: at /limit: must be integer"
    frame = await reader.req("logs.tail", {"limit": 5, "colour": "red"})
    assert frame["error"]["message"] == "invalid logs.tail params: at root: unexpected property 'colour'"
    frame = await reader.req("logs.tail", [1, 2])
    assert frame["error"]["message"] == "invalid logs.tail params: at root: must be object"
    frame = await reader.req("gateway.restart")
    assert frame["error"]["code"] == "FORBIDDEN"
    assert frame["error"]["message"] == "missing scope: operator.admin"
    assert frame["error"]["details"] == {"code": "MISSING_SCOPE", "missingScope": "operator.admin"}
    frame = await reader.req("device.pair.list")
    assert frame["error"]["details"]["missingScope"] == "operator.pairing"
    assert (await reader.call("health"))["ok"] is True
    await reader.close()


async def test_params_are_strict_in_type(admin: RawClient) -> None:
    """No lax coercion anywhere (one mechanism in the dispatcher): a string is not a boolean, a float or a
    numeric string not an integer; the refusal names the field."""
    frame = await admin.req("heartbeat.report", {"sessionKey": "agent:main:main", "anythingDone": "yes"})
    assert frame["error"]["code"] == "INVALID_REQUEST"
    assert frame["error"]["message"] == "invalid heartbeat.report params: at /anythingDone: must be boolean"
    frame = await admin.req("heartbeat.report", {"sessionKey": "agent:main:main", "anythingDone": 1})
    assert frame["error"]["message"] == "invalid heartbeat.report params: at /anythingDone: must be boolean"
    for limit in (2.0, "2", True):
        frame = await admin.req("logs.tail", {"limit": limit})
        assert frame["error"]["message"] == "invalid logs.tail params: at /limit: must be integer", limit
    done = await admin.call("heartbeat.report", {"sessionKey": "agent:main:main", "anythingDone": True})
    assert done["anythingDone"] is True


async def test_write_implies_read_and_admin_implies_all(gateway: GatewayProcess) -> None:
    writer = await operator(gateway.url, gateway.token or "", scopes=["operator.write"])
    assert (await writer.call("health"))["ok"] is True
    await writer.close()
    admin = await operator(gateway.url, gateway.token or "", scopes=["operator.admin"])
    assert "pending" in await admin.call("device.pair.list")
    assert (await admin.call("health"))["ok"] is True
    await admin.close()


async def test_non_string_ids_are_refused_and_echoed(gateway: GatewayProcess) -> None:
    """As OpenClaw does: the frame's own id comes back (so a client can correlate), or "invalid"."""
    client = await _raw_session(gateway)
    await client.send_raw({"type": "req", "id": 7, "method": "health"})
    frame = await _next_res(client)
    assert frame == {"type": "res", "id": 7, "ok": False, "error": {
        "code": "INVALID_REQUEST", "message": "invalid request frame: at /id: must be string"}}
    await client.send_raw({"type": "req", "id": {"a": 1}, "method": "health"})
    frame = await _next_res(client)
    assert frame["id"] == "invalid" and frame["error"]["message"].endswith("at /id: must be string")
    await client.send_raw({"type": "req", "id": "", "method": "health"})
    assert (await _next_res(client))["id"] == "invalid"
    await client.send_raw({"type": "req", "id": "x", "method": "health", "extra": True})
    frame = await _next_res(client)
    assert frame["id"] == "x" and "unexpected property 'extra'" in frame["error"]["message"]
    await client.send_raw({"type": "req", "id": "ok-1", "method": "health"})
    frame = await _next_res(client)
    assert frame["id"] == "ok-1" and frame["ok"] is True  # the socket is still fine
    await client.close()


async def test_node_role_cannot_call_operator_methods(gateway: GatewayProcess) -> None:
    node = await RawClient.open(gateway.url)
    assert node.challenge is not None
    params = DeviceKey().connect_params(gateway.token or "", node.challenge["payload"]["nonce"], role="node",
                                        scopes=[], client_id="node-host", mode="node")
    hello = await node.connect_with(params)
    assert hello["ok"] and hello["payload"]["auth"]["role"] == "node" and hello["payload"]["auth"]["scopes"] == []
    for name in ("health", "config.get", "device.pair.list", "gateway.restart"):
        frame = await node.req(name)
        assert frame["error"]["code"] == "FORBIDDEN", name
        assert frame["error"]["details"]["code"] == "ROLE_FORBIDDEN", name
    await node.close()


async def test_operator_cannot_call_node_methods(gateway: GatewayProcess) -> None:
    load_all()
    node_methods = [s.name for s in registry.specs() if s.scope == NODE]
    assert "node.invoke.result" in node_methods and "node.event" in node_methods
    admin = await operator(gateway.url, gateway.token or "")
    for name in node_methods:
        frame = await admin.req(name, {})
        assert frame["error"]["details"]["code"] == "ROLE_REQUIRED", name
    await admin.close()


async def test_many_requests_in_flight_all_answered(admin: RawClient) -> None:
    results = await asyncio.gather(*(admin.req("health") for _ in range(200)))
    assert all(r["ok"] for r in results)
    assert len({r["id"] for r in results}) == 200


async def test_health_answered_inline_keeps_the_checks_and_mixes_with_other_calls(admin: RawClient) -> None:
    """``health`` is answered as its frame is read (``gateway.server.ws_protocol``): its params are still
    validated, and answers interleave with ordinary calls on the same socket, every one answered once."""
    bad = await admin.req("health", {"verbose": True})
    assert bad["error"]["message"] == "invalid health params: at root: unexpected property 'verbose'"
    calls = [admin.req("health" if i % 2 else "status") for i in range(100)]
    results = await asyncio.gather(*calls)
    assert all(r["ok"] for r in results) and len({r["id"] for r in results}) == 100
    assert all(("uptimeMs" in r["payload"]) for r in results)


async def test_frames_coalesced_split_or_behind_another_call_are_each_answered_once(admin: RawClient) -> None:
    """The gateway reads a whole small text frame itself (``GatewayWebSocketProtocol._read_whole_frames``) and
    leaves the rest to websockets' parser. Written here byte by byte: several requests in one TCP write, a frame
    split over two writes, a 16-bit length, a request the app must answer between inline ones, a ping."""
    loop = asyncio.get_running_loop()
    ids = [f"w{i}" for i in range(12)]
    ids[3] += "-" + "x" * 300  # a frame past 125 bytes: its length in 16 bits
    futures = {i: loop.create_future() for i in ids}
    admin._pending.update(futures)
    h = [masked_frame(orjson.dumps({"type": "req", "id": i, "method": "health"})) for i in ids]
    status = masked_frame(orjson.dumps({"type": "req", "id": ids[4], "method": "status"}))
    ping = bytes((0x89, 0x80)) + os.urandom(4)  # an empty ping: websockets' parser answers it with a pong
    transport = admin.ws.transport
    transport.write(h[0] + h[1] + h[2] + h[3] + status + h[5] + ping + h[6] + h[7][:5])
    await asyncio.sleep(0.05)
    transport.write(h[7][5:] + h[8][:2])  # the rest of a frame, then a header cut in two
    await asyncio.sleep(0.05)
    transport.write(h[8][2:] + h[9] + h[10] + h[11])
    answers = await asyncio.wait_for(asyncio.gather(*futures.values()), 10)
    assert [a["id"] for a in answers] == ids and all(a["ok"] for a in answers), answers
    assert "uptimeMs" in answers[0]["payload"] and "version" in answers[4]["payload"]
    assert (await admin.req("health"))["ok"]  # the socket still reads what the client library frames
