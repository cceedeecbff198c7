"""The connect handshake against a real gateway process over a real socket."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.devices import DeviceKey
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, connect_params, operator

pytestmark = pytest.mark.openclaw_frames  # every frame received is checked against OpenClaw's schema


@pytest.fixture(scope="module")
def quick_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A gateway with a short handshake timeout."""
    config = {"gateway": {"handshakeTimeoutMs": 400}}
    with GatewayProcess(tmp_path_factory.mktemp("gw-quick"), config=config) as gw:
        yield gw


async def _connect_frame(client: RawClient, params: dict) -> dict:
    await client.send_raw({"type": "req", "id": "c1", "method": "connect", "params": params})
    while True:
        frame = await client.recv()
        if frame.get("type") == "res":
            return frame


async def test_challenge_then_hello_ok(gateway: GatewayProcess) -> None:
    client = await RawClient.open(gateway.url)
    assert client.challenge is not None
    assert client.challenge["event"] == "connect.challenge"
    payload = client.challenge["payload"]
    assert set(payload) == {"nonce", "ts"}
    assert len(payload["nonce"]) == 36 and abs(payload["ts"] - time.time() * 1000) < 60_000
    frame = await client.handshake(gateway.token)
    assert frame["id"] == "c1" and frame["ok"] is True
    hello = frame["payload"]
    assert hello["type"] == "hello-ok"
    assert hello["protocol"] == 4
    assert hello["server"]["connId"] and hello["server"]["version"]
    assert "health" in hello["features"]["methods"]
    assert "device.pair.approve" in hello["features"]["methods"]
    assert {"tick", "shutdown", "presence", "health"} <= set(hello["features"]["events"])
    assert hello["policy"] == {"maxPayload": 25 * 1024 * 1024, "maxBufferedBytes": 8 * 1024 * 1024,
                               "tickIntervalMs": 30_000}
    assert hello["auth"] == {"role": "operator", "scopes": sorted(
        ["operator.admin", "operator.read", "operator.write", "operator.approvals", "operator.pairing"])}
    snapshot = hello["snapshot"]
    assert snapshot["sessionDefaults"]["defaultAgentId"] == "main" and snapshot["sessionDefaults"]["mainKey"] == "main"
    assert snapshot["health"]["ok"] is True and snapshot["stateVersion"]["presence"] >= 1
    assert snapshot["presence"] == []  # a test-mode client does not watch presence (issue #28); a UI does
    health = await client.next_event("health")
    assert health["payload"]["ok"] is True and health["seq"] >= 1
    await client.close()


async def test_challenge_nonces_are_fresh(gateway: GatewayProcess) -> None:
    a, b = await RawClient.open(gateway.url), await RawClient.open(gateway.url)
    assert a.challenge and b.challenge
    assert a.challenge["payload"]["nonce"] != b.challenge["payload"]["nonce"]
    await a.close()
    await b.close()


async def test_first_frame_must_be_connect(gateway: GatewayProcess) -> None:
    client = await RawClient.open(gateway.url)
    await client.send_raw({"type": "req", "id": "x", "method": "health"})
    frame = await client.recv()
    assert frame["id"] == "x" and frame["ok"] is False
    assert frame["error"]["code"] == "INVALID_REQUEST"
    assert frame["error"]["message"] == "invalid handshake: first request must be connect"
    assert await client.wait_closed() == 1008


async def test_malformed_first_frame_is_refused(gateway: GatewayProcess) -> None:
    client = await RawClient.open(gateway.url)
    await client.send_raw({"type": "req", "id": 5, "method": "connect"})
    frame = await client.recv()
    assert frame["id"] == 5 and frame["error"]["message"] == "invalid request frame: at /id: must be string"
    assert await client.wait_closed() == 1008


async def test_bad_connect_params_name_the_field(gateway: GatewayProcess) -> None:
    client = await RawClient.open(gateway.url)
    params = connect_params(gateway.token)
    params["minProtocol"] = "three"
    frame = await _connect_frame(client, params)
    assert frame["error"]["message"] == "invalid connect params: at /minProtocol: must be integer"
    assert await client.wait_closed() == 1008


async def test_wrong_token_is_refused(gateway: GatewayProcess) -> None:
    client = await RawClient.open(gateway.url)
    frame = await client.handshake("not-the-token")
    assert frame["error"]["code"] == "INVALID_REQUEST"
    assert frame["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"
    assert await client.wait_closed() == 1008


async def test_missing_token_is_refused(gateway: GatewayProcess) -> None:
    client = await RawClient.open(gateway.url)
    frame = await client.handshake(None)
    assert frame["error"]["details"]["code"] == "AUTH_REQUIRED"
    assert await client.wait_closed() == 1008


async def test_protocol_mismatch(gateway: GatewayProcess) -> None:
    client = await RawClient.open(gateway.url)
    frame = await client.handshake(gateway.token, minProtocol=5, maxProtocol=9)
    assert frame["error"]["code"] == "INVALID_REQUEST"
    assert frame["error"]["details"] == {"code": "PROTOCOL_MISMATCH", "expectedProtocol": 4}
    assert await client.wait_closed() == 1002


@pytest.mark.parametrize(("lo", "hi", "agreed"), [(3, 3, 3), (4, 4, 4), (1, 4, 4), (3, 9, 4)])
async def test_protocols_3_and_4_are_accepted(gateway: GatewayProcess, lo: int, hi: int, agreed: int) -> None:
    client = await RawClient.open(gateway.url)
    frame = await client.handshake(gateway.token, minProtocol=lo, maxProtocol=hi)
    assert frame["payload"]["protocol"] == agreed
    await client.close()


async def test_unknown_scopes_are_dropped_and_empty_means_read(gateway: GatewayProcess) -> None:
    client = await RawClient.open(gateway.url)
    frame = await client.handshake(gateway.token, scopes=["operator.write", "operator.bogus"])
    assert frame["payload"]["auth"]["scopes"] == ["operator.write"]
    await client.close()
    client = await RawClient.open(gateway.url)
    frame = await client.handshake(gateway.token, scopes=[])
    assert frame["payload"]["auth"]["scopes"] == ["operator.read"]
    await client.close()


async def test_preauth_frames_are_capped_at_64k(gateway: GatewayProcess) -> None:
    client = await RawClient.open(gateway.url)
    params = connect_params(gateway.token)
    params["client"]["padding"] = "x" * (64 * 1024)
    await client.send_raw({"type": "req", "id": "c1", "method": "connect", "params": params})
    assert await client.wait_closed() == 1009
    # Just under the cap is fine (the extra client field is allowed).
    client = await RawClient.open(gateway.url)
    params["client"]["padding"] = "x" * (60 * 1024)
    frame = await _connect_frame(client, params)
    assert frame["ok"] is True
    await client.close()


async def test_non_json_frames_are_ignored_before_and_after_connect(gateway: GatewayProcess) -> None:
    client = await RawClient.open(gateway.url)
    await client.send_raw("this is not json")
    await client.send_raw(b"\xff\xfe binary junk")
    frame = await client.handshake(gateway.token)
    assert frame["ok"] is True
    await client.send_raw("{still not json")
    assert (await client.call("health"))["ok"] is True
    await client.close()


async def test_connect_twice_is_refused_but_the_socket_stays(admin: RawClient) -> None:
    frame = await admin.req("connect", connect_params("x"))
    assert frame["error"]["code"] == "INVALID_REQUEST" and "already connected" in frame["error"]["message"]
    assert (await admin.call("health"))["ok"] is True


async def test_handshake_timeout_closes_1008(quick_gateway: GatewayProcess) -> None:
    client = await RawClient.open(quick_gateway.url)
    started = time.monotonic()
    await client.send_raw("not json")  # ignored, and does not extend the deadline
    assert await client.wait_closed(5) == 1008
    assert "handshake timeout" in (client.close_reason or "")
    assert 0.3 < time.monotonic() - started < 3


async def test_loopback_device_is_approved_automatically(gateway: GatewayProcess) -> None:
    device = DeviceKey()
    client = await RawClient.open(gateway.url)
    assert client.challenge is not None
    params = device.connect_params(gateway.token or "", client.challenge["payload"]["nonce"])
    frame = await _connect_frame(client, params)
    assert frame["ok"] is True, frame
    await client.close()
    admin = await operator(gateway.url, gateway.token or "")
    listed = await admin.call("device.pair.list")
    assert [d["deviceId"] for d in listed["paired"]].count(device.id) == 1
    presence = await admin.call("system-presence")
    assert all(p.get("deviceId") in (None, device.id) for p in presence)
    await admin.close()


async def test_restart_sends_shutdown_then_1012_and_comes_back(fresh_gateway: GatewayProcess) -> None:
    client = await operator(fresh_gateway.url, fresh_gateway.token or "")
    res = await client.call("gateway.restart", {"reason": "test"})
    assert res["restarting"] is True
    event = await client.next_event("shutdown")
    assert event["payload"]["reason"] == "test"
    assert event["payload"]["restartExpectedMs"] > 0
    assert await client.wait_closed() == 1012
    for _ in range(100):
        try:
            again = await operator(fresh_gateway.url, fresh_gateway.token or "")
            break
        except Exception:  # refused (1012) or not listening while it drains
            await asyncio.sleep(0.05)
    else:
        pytest.fail("gateway did not come back after restart")
    assert (await again.call("health"))["ok"] is True
    await again.close()


async def test_sigterm_sends_shutdown_then_1012(tmp_path: Path) -> None:
    gw = GatewayProcess(tmp_path / "gw").start()
    try:
        client = await operator(gw.url, gw.token or "")
        assert gw.proc is not None
        gw.proc.send_signal(signal.SIGTERM)
        event = await client.next_event("shutdown")
        assert event["payload"] == {"reason": "gateway stopping"}
        assert await client.wait_closed() == 1012
        assert await asyncio.to_thread(gw.proc.wait, 10) == 0
    finally:
        gw.stop()
