"""Events over real sockets: per-connection sequence numbers, ticks, and slow consumers."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.uri import parse_uri

from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, connect_params, operator

MIN_BUFFER = 64 * 1024
REQUESTS = 12_000


@pytest.fixture(scope="module")
def events_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """Fast ticks and the smallest send buffer the config allows."""
    config = {"gateway": {"tickIntervalMs": 150, "maxBufferedBytes": MIN_BUFFER}}
    with GatewayProcess(tmp_path_factory.mktemp("gw-events"), config=config) as gw:
        yield gw


async def _events(client: RawClient, count: int, timeout: float = 5) -> list[dict[str, Any]]:
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < count:
        out.append(await asyncio.wait_for(client.events.get(), max(0.01, deadline - time.monotonic())))
    return out


async def test_hello_announces_the_policy(events_gateway: GatewayProcess) -> None:
    client = await operator(events_gateway.url, events_gateway.token or "")
    assert client.hello is not None
    assert client.hello["policy"]["tickIntervalMs"] == 150
    assert client.hello["policy"]["maxBufferedBytes"] == MIN_BUFFER
    await client.close()


async def test_ticks_arrive_at_the_configured_interval(events_gateway: GatewayProcess) -> None:
    client = await operator(events_gateway.url, events_gateway.token or "")
    first = await client.next_event("tick", timeout=2)
    started = time.monotonic()
    second = await client.next_event("tick", timeout=2)
    third = await client.next_event("tick", timeout=2)
    assert 0.1 < (time.monotonic() - started) < 1.5
    assert set(first["payload"]) == {"ts"}
    assert first["payload"]["ts"] <= second["payload"]["ts"] <= third["payload"]["ts"]
    assert abs(third["payload"]["ts"] - time.time() * 1000) < 5000
    await client.close()


async def test_seq_is_per_connection_and_strictly_increasing(events_gateway: GatewayProcess) -> None:
    a = await operator(events_gateway.url, events_gateway.token or "")
    seqs_a = [e["seq"] for e in await _events(a, 3)]
    b = await operator(events_gateway.url, events_gateway.token or "")  # a sees presence for b
    first_b = (await _events(b, 1))[0]
    assert first_b["seq"] == 1  # b's own numbering starts at 1
    await b.close()
    seqs_a += [e["seq"] for e in await _events(a, 6)]
    assert seqs_a == sorted(set(seqs_a)), seqs_a
    assert seqs_a == list(range(seqs_a[0], seqs_a[0] + len(seqs_a)))  # nothing skipped for a live reader
    await a.close()


async def test_presence_events_follow_connections(events_gateway: GatewayProcess) -> None:
    # A UI client watches presence; the events are deltas (issue #28): who joined, who left.
    watcher = await operator(events_gateway.url, events_gateway.token or "", client_id="webchat-ui", mode="ui")
    other = await operator(events_gateway.url, events_gateway.token or "", client_id="cli", mode="cli")
    assert other.hello is not None
    conn_id = other.hello["server"]["connId"]
    for _ in range(5):
        event = await watcher.next_event("presence")
        if conn_id in {p["instanceId"] for p in event["payload"]["presence"]}:
            break
    else:
        pytest.fail("presence never showed the new connection")
    await other.close()
    for _ in range(5):
        event = await watcher.next_event("presence")
        if conn_id in event["payload"]["left"]:
            break
    else:
        pytest.fail("presence never dropped the closed connection")
    await watcher.close()


class _StalledClient:
    """A WebSocket client on a raw socket with a tiny receive buffer, which we can simply stop reading."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.proto = ClientProtocol(parse_uri(url), max_size=None)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.setblocking(False)
        self.loop = asyncio.get_running_loop()
        self.frames: list[dict[str, Any]] = []

    async def _flush(self) -> None:
        data = b"".join(self.proto.data_to_send())
        if data:
            await self.loop.sock_sendall(self.sock, data)

    async def _pump(self) -> bool:
        data = await asyncio.wait_for(self.loop.sock_recv(self.sock, 65536), 10)
        if not data:
            self.proto.receive_eof()
            return False
        self.proto.receive_data(data)
        for event in self.proto.events_received():
            if isinstance(event, Frame) and event.opcode == Opcode.TEXT:
                self.frames.append(orjson.loads(event.data))
        await self._flush()
        return True

    async def connect(self, token: str) -> dict[str, Any]:
        port = int(self.url.rsplit(":", 1)[1].strip("/"))
        await self.loop.sock_connect(self.sock, ("127.0.0.1", port))
        self.proto.send_request(self.proto.connect())
        await self._flush()
        while self.proto.handshake_exc is None and self.proto.state.name == "CONNECTING":
            await self._pump()
        await self.send({"type": "req", "id": "c1", "method": "connect", "params": connect_params(token)})
        while not any(f.get("id") == "c1" for f in self.frames):
            await self._pump()
        return next(f for f in self.frames if f.get("id") == "c1")

    async def send(self, frame: dict[str, Any]) -> None:
        self.proto.send_text(orjson.dumps(frame))
        await self._flush()

    async def drain(self) -> int | None:
        """Read everything left; return the close code the server sent (None if the socket just died)."""
        try:
            while await self._pump():
                if self.proto.close_rcvd is not None:
                    return self.proto.close_rcvd.code
        except (ConnectionError, TimeoutError):
            pass
        return self.proto.close_rcvd.code if self.proto.close_rcvd else None

    def close(self) -> None:
        self.sock.close()


async def test_slow_consumer_is_cut_off_without_stalling_others(events_gateway: GatewayProcess) -> None:
    token = events_gateway.token or ""
    other = await operator(events_gateway.url, token)
    slow = _StalledClient(events_gateway.url)
    hello = await slow.connect(token)
    assert hello["ok"] is True
    slow_id = hello["payload"]["server"]["connId"]
    presence = await other.call("system-presence")
    assert slow_id in {p["instanceId"] for p in presence}

    # Ask for far more than the gateway will buffer for us, and read none of it. More than the kernel's
    # send buffer too (up to 4 MiB on loopback): frames now go straight to the socket while it takes them.
    for i in range(REQUESTS):
        await slow.send({"type": "req", "id": f"s{i}", "method": "system-presence"})
        if i % 500 == 0:  # the other client is answered promptly all along
            started = time.monotonic()
            assert (await other.call("health"))["ok"] is True
            assert time.monotonic() - started < 1.0

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        started = time.monotonic()
        presence = await other.call("system-presence")
        assert time.monotonic() - started < 1.0
        if slow_id not in {p["instanceId"] for p in presence}:
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail("the slow consumer was never disconnected")

    # Reading again, the slow client finds whole frames and then a policy close.
    assert await slow.drain() == 1008
    answered = [f for f in slow.frames if f.get("type") == "res" and f["id"] != "c1"]
    assert 0 < len(answered) < REQUESTS
    # each answered, or refused for its rate (gateway.requestRate): never an error of another kind
    assert all(f["ok"] or f["error"]["details"]["code"] == "RATE_LIMITED" for f in answered)
    slow.close()
    assert (await other.call("health"))["ok"] is True
    logged = await other.call("logs.tail", {"search": "closing slow consumer"})
    assert any(slow_id in line if isinstance(line, str) else line.get("conn_id") == slow_id
               for line in logged["lines"]), logged
    await other.close()
