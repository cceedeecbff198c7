"""Connect-time authentication against real gateways: device proofs, pairing, and failure throttling.

The device proofs are made with real Ed25519 keys (``cryptography``), signed the way OpenClaw clients
sign them, and sent over a real socket.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from gateway.server.auth import AuthThrottle
from tests.support.devices import DeviceKey
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, connect_params, operator

pytestmark = pytest.mark.openclaw_frames  # every frame received is checked against OpenClaw's schema


@pytest.fixture(scope="module")
def pairing_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """Loopback devices are NOT approved automatically here, and failures are not throttled."""
    config = {"gateway": {"auth": {"autoApproveLoopbackDevices": False, "rateLimit": {"maxFailures": 1000}}}}
    with GatewayProcess(tmp_path_factory.mktemp("gw-pairing"), config=config) as gw:
        yield gw


async def _connect(client: RawClient, params: dict[str, Any]) -> dict[str, Any]:
    await client.send_raw({"type": "req", "id": "c1", "method": "connect", "params": params})
    while True:
        frame = await client.recv()
        if frame.get("type") == "res":
            return frame


async def _device_connect(gw: GatewayProcess, device: DeviceKey, **kw: Any) -> tuple[RawClient, dict[str, Any]]:
    client = await RawClient.open(gw.url)
    assert client.challenge is not None
    params = device.connect_params(gw.token or "", client.challenge["payload"]["nonce"], **kw)
    return client, await _connect(client, params)


async def _approve(gw: GatewayProcess, device_id: str) -> dict[str, Any]:
    admin = await operator(gw.url, gw.token or "", scopes=["operator.pairing"])
    try:
        return await admin.call("device.pair.approve", {"deviceId": device_id})
    finally:
        await admin.close()


# -- device proofs -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 2])
async def test_good_proof_waits_for_pairing_then_connects(pairing_gateway: GatewayProcess, version: int) -> None:
    device = DeviceKey()
    watcher = await operator(pairing_gateway.url, pairing_gateway.token or "",
                             scopes=["operator.pairing", "operator.read"])
    client, frame = await _device_connect(pairing_gateway, device, version=version)
    assert frame["ok"] is False
    assert frame["error"]["code"] == "NOT_PAIRED"
    assert frame["error"]["details"] == {"code": "PAIRING_REQUIRED", "deviceId": device.id, "status": "pending"}
    assert await client.wait_closed() == 1008
    requested = await watcher.next_event("device.pair.requested")
    assert requested["payload"]["deviceId"] == device.id == requested["payload"]["requestId"]

    listed = await watcher.call("device.pair.list")
    pending = {d["deviceId"]: d for d in listed["pending"]}
    assert pending[device.id]["clientId"] == "test" and pending[device.id]["remote"] == "127.0.0.1"
    approved = await watcher.call("device.pair.approve", {"deviceId": device.id})
    assert approved["status"] == "approved" and approved["device"]["deviceId"] == device.id
    resolved = await watcher.next_event("device.pair.resolved")
    assert {k: v for k, v in resolved["payload"].items() if k != "ts"} == {
        "requestId": device.id, "deviceId": device.id, "decision": "approved"}

    client, frame = await _device_connect(pairing_gateway, device, version=version)
    assert frame["ok"] is True, frame
    presence = await watcher.call("system-presence")
    assert device.id in {p.get("deviceId") for p in presence}
    await client.close()
    await watcher.close()


async def test_rejected_device_is_refused_and_disconnected(pairing_gateway: GatewayProcess) -> None:
    device = DeviceKey()
    client, frame = await _device_connect(pairing_gateway, device)
    assert frame["error"]["details"]["code"] == "PAIRING_REQUIRED"
    await _approve(pairing_gateway, device.id)
    client, frame = await _device_connect(pairing_gateway, device)
    assert frame["ok"] is True
    admin = await operator(pairing_gateway.url, pairing_gateway.token or "")
    rejected = await admin.call("device.pair.reject", {"deviceId": device.id})
    assert rejected["status"] == "rejected" and rejected["disconnected"] == 1
    assert await client.wait_closed() == 1008
    client, frame = await _device_connect(pairing_gateway, device)
    assert frame["error"]["code"] == "NOT_PAIRED"
    assert frame["error"]["details"]["status"] == "rejected"
    listed = await admin.call("device.pair.list")
    assert device.id in {d["deviceId"] for d in listed["rejected"]}
    await admin.close()


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"sign_nonce": "not-the-challenge-nonce"}, "DEVICE_AUTH_NONCE_MISMATCH"),
        ({"signed_at": int(time.time() * 1000) - 10 * 60_000}, "DEVICE_AUTH_SIGNATURE_EXPIRED"),
        ({"signed_at": int(time.time() * 1000) + 10 * 60_000}, "DEVICE_AUTH_SIGNATURE_EXPIRED"),
        ({"tamper": True}, "DEVICE_AUTH_SIGNATURE_INVALID"),
        ({"device_id": "0" * 64}, "DEVICE_AUTH_DEVICE_ID_MISMATCH"),
    ],
)
async def test_bad_proofs_are_refused(pairing_gateway: GatewayProcess, kwargs: dict[str, Any], code: str) -> None:
    device = DeviceKey()
    client, frame = await _device_connect(pairing_gateway, device, **kwargs)
    assert frame["ok"] is False
    assert frame["error"]["code"] == "INVALID_REQUEST"
    assert frame["error"]["details"]["code"] == code
    assert await client.wait_closed() == 1008
    admin = await operator(pairing_gateway.url, pairing_gateway.token or "", scopes=["operator.pairing"])
    listed = await admin.call("device.pair.list")
    assert device.id not in {d["deviceId"] for group in listed.values() for d in group}  # nothing stored
    await admin.close()


async def test_signature_over_other_scopes_is_refused(pairing_gateway: GatewayProcess) -> None:
    """The proof binds the requested role and scopes: asking for more than was signed fails."""
    device = DeviceKey()
    client = await RawClient.open(pairing_gateway.url)
    assert client.challenge is not None
    params = device.connect_params(pairing_gateway.token or "", client.challenge["payload"]["nonce"],
                                   scopes=["operator.read"])
    params["scopes"] = ["operator.admin"]
    frame = await _connect(client, params)
    assert frame["error"]["details"]["code"] == "DEVICE_AUTH_SIGNATURE_INVALID"


async def test_bad_public_key_is_refused(pairing_gateway: GatewayProcess) -> None:
    device = DeviceKey()
    client = await RawClient.open(pairing_gateway.url)
    assert client.challenge is not None
    params = device.connect_params(pairing_gateway.token or "", client.challenge["payload"]["nonce"])
    params["device"]["publicKey"] = "c2hvcnQ"  # "short"
    frame = await _connect(client, params)
    assert frame["error"]["details"]["code"] == "DEVICE_AUTH_PUBLIC_KEY_INVALID"


async def test_pairing_methods_validate_and_need_the_pairing_scope(pairing_gateway: GatewayProcess) -> None:
    reader = await operator(pairing_gateway.url, pairing_gateway.token or "", scopes=["operator.write"])
    frame = await reader.req("device.pair.list")
    assert frame["error"]["details"] == {"code": "MISSING_SCOPE", "missingScope": "operator.pairing"}
    await reader.close()
    admin = await operator(pairing_gateway.url, pairing_gateway.token or "", scopes=["operator.pairing"])
    frame = await admin.req("device.pair.approve", {})
    assert frame["error"]["message"] == "invalid device.pair.approve params: at root: requestId: required (the " \
                                        "pairing request's id; deviceId is accepted too)"
    frame = await admin.req("device.pair.approve", {"deviceId": "f" * 64})
    assert frame["error"]["code"] == "INVALID_REQUEST"
    assert frame["error"]["details"] == {"code": "UNKNOWN_DEVICE", "deviceId": "f" * 64}
    await admin.close()


async def test_repeated_idempotency_key_returns_the_first_answer(pairing_gateway: GatewayProcess) -> None:
    device = DeviceKey()
    client, frame = await _device_connect(pairing_gateway, device)
    assert frame["error"]["details"]["code"] == "PAIRING_REQUIRED"
    admin = await operator(pairing_gateway.url, pairing_gateway.token or "", scopes=["operator.pairing"])
    first = await admin.call("device.pair.approve", {"deviceId": device.id, "idempotencyKey": "k-1"})
    await admin.call("device.pair.reject", {"deviceId": device.id})
    again = await admin.call("device.pair.approve", {"deviceId": device.id, "idempotencyKey": "k-1"})
    assert again == first  # the remembered answer, same resolvedAtMs...
    listed = await admin.call("device.pair.list")
    assert device.id in {d["deviceId"] for d in listed["rejected"]}  # ...and the approval did not run again
    fresh = await admin.call("device.pair.approve", {"deviceId": device.id, "idempotencyKey": "k-2"})
    assert fresh["resolvedAtMs"] >= first["resolvedAtMs"] and fresh != first
    client, frame = await _device_connect(pairing_gateway, device)
    assert frame["ok"] is True
    await client.close()
    # A refusal is remembered too.
    missing = {"deviceId": "e" * 64, "idempotencyKey": "k-3"}
    assert (await admin.req("device.pair.approve", missing))["error"]["details"]["code"] == "UNKNOWN_DEVICE"
    assert (await admin.req("device.pair.approve", missing))["error"]["details"]["code"] == "UNKNOWN_DEVICE"
    await admin.close()


# -- token failures are throttled per address ---------------------------------------------------


async def test_repeated_failures_are_rate_limited(tmp_path_factory: pytest.TempPathFactory) -> None:
    config = {"gateway": {"auth": {"rateLimit": {"maxFailures": 3, "windowMs": 60_000, "lockoutMs": 1500}}}}
    with GatewayProcess(tmp_path_factory.mktemp("gw-throttle"), config=config) as gw:
        for _ in range(3):
            client = await RawClient.open(gw.url)
            frame = await client.handshake("wrong")
            assert frame["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"
        # Locked: another wrong token is refused, slowly, with a hint when to retry ...
        client = await RawClient.open(gw.url)
        started = time.monotonic()
        frame = await client.handshake("wrong again")
        elapsed = time.monotonic() - started
        err = frame["error"]
        assert err["code"] == "INVALID_REQUEST" and err["details"]["code"] == "AUTH_RATE_LIMITED"
        assert err["retryable"] is True and 0 < err["retryAfterMs"] <= 1500
        assert elapsed >= 0.5
        assert await client.wait_closed() == 1008
        # ... but the right token gets in at once: a guesser cannot lock out the clients sharing its address.
        client = await RawClient.open(gw.url)
        frame = await client.handshake(gw.token)
        assert frame["ok"] is True
        await client.close()
        # The lockout outlives that success: the guesser gained nothing from it.
        client = await RawClient.open(gw.url)
        frame = await client.handshake("wrong once more")
        assert frame["error"]["details"]["code"] == "AUTH_RATE_LIMITED"
        await asyncio.sleep(1.7)
        client = await RawClient.open(gw.url)
        assert (await client.handshake("still wrong"))["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"


def test_throttle_unit_window_and_lockout() -> None:
    throttle = AuthThrottle(max_failures=3, window_s=10, lockout_s=5)
    throttle.failure("a", now=0)
    throttle.failure("a", now=1)
    assert throttle.retry_after("a", now=1) == 0
    throttle.failure("b", now=1)  # other addresses do not count
    assert throttle.retry_after("a", now=1) == 0
    throttle.failure("a", now=2)
    assert throttle.retry_after("a", now=2) == 5
    assert throttle.retry_after("a", now=6) == 1
    assert throttle.retry_after("a", now=8) == 0
    throttle.failure("c", now=0)
    throttle.failure("c", now=0)
    throttle.failure("c", now=20)  # the first two left the window
    assert throttle.retry_after("c", now=20) == 0


def test_device_payload_layout() -> None:
    device = DeviceKey()
    params = connect_params("tok", scopes=["operator.read", "operator.write"])
    params["client"]["deviceFamily"] = " Desktop "
    payload = device.payload(params, nonce="n-1", signed_at=123, version=3, device_id=device.id)
    expected = f"v3|{device.id}|test|test|operator|operator.read,operator.write|123|tok|n-1|linux|desktop"
    assert payload.decode() == expected
    from gateway.protocol.connect_params import ConnectParams
    from gateway.server.auth import device_payload

    params["device"] = {"id": device.id, "publicKey": "x", "signature": "x", "signedAt": 123, "nonce": "n-1"}
    model = ConnectParams.model_validate(params)
    assert device_payload(model, "tok", version=3) == payload
    assert device_payload(model, "tok", version=2) == payload.rsplit(b"|", 2)[0].replace(b"v3|", b"v2|", 1)


async def test_clients_behind_a_local_proxy_keep_their_own_address(gateway: GatewayProcess) -> None:
    """A local TLS proxy sends X-Forwarded-For: that client is not loopback, so its device is not auto-approved."""
    from websockets.asyncio.client import connect

    device = DeviceKey()
    ws = await connect(gateway.url, additional_headers={"X-Forwarded-For": "203.0.113.7"}, compression=None)
    client = RawClient(ws)
    client.challenge = orjson.loads(await ws.recv())
    params = device.connect_params(gateway.token or "", client.challenge["payload"]["nonce"])
    frame = await _connect(client, params)
    assert frame["ok"] is False and frame["error"]["details"]["status"] == "pending", frame
    await ws.close()
    admin = await operator(gateway.url, gateway.token or "", scopes=["operator.pairing"])
    pending = {d["deviceId"]: d for d in (await admin.call("device.pair.list"))["pending"]}
    assert pending[device.id]["remote"] == "203.0.113.7"
    await admin.close()
