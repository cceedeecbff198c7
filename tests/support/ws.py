"""A raw protocol client for tests: every frame visible, nothing hidden.

While ``FRAME_LOG`` is set (the ``openclaw_frames`` marker, ``tests/conftest.py``), every frame a client
receives is also recorded there, with the method of the request it answers, and checked against OpenClaw's
published schema when the test ends.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect

from gateway.protocol import PROTOCOL_VERSION
from tests.support.openclaw_schema import FrameLog

FRAME_LOG: FrameLog | None = None
"""Where received frames are recorded (None: not recorded)."""

ALL_SCOPES = ["operator.admin", "operator.read", "operator.write", "operator.approvals", "operator.pairing"]


def connect_params(token: str | None, *, scopes: list[str] | None = None, role: str = "operator",
                   client_id: str = "test", mode: str = "test", **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "minProtocol": 3, "maxProtocol": PROTOCOL_VERSION,
        "client": {"id": client_id, "version": "1.0", "platform": "linux", "mode": mode},
        "role": role, "scopes": ALL_SCOPES if scopes is None else scopes,
    }
    if token is not None:
        params["auth"] = {"token": token}
    params.update(extra)
    return params


class RawClient:
    """Open socket plus helpers: ``req`` sends and waits for the matching response; events are queued."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.challenge: dict[str, Any] | None = None
        self.hello: dict[str, Any] | None = None
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.close_code: int | None = None
        self.close_reason: str | None = None
        self._methods: dict[str, str] = {}

    def _record(self, frame: Any) -> None:
        if FRAME_LOG is not None and isinstance(frame, dict):
            FRAME_LOG.received(frame, self._methods.get(str(frame.get("id"))) if frame.get("type") == "res" else None)

    @classmethod
    async def open(cls, url: str) -> RawClient:
        ws = await connect(url, max_size=None, compression=None, ping_interval=None)
        client = cls(ws)
        client.challenge = orjson.loads(await asyncio.wait_for(ws.recv(), 5))
        client._record(client.challenge)
        return client

    async def send_raw(self, frame: Any) -> None:
        await self.ws.send(frame if isinstance(frame, str | bytes) else orjson.dumps(frame).decode())

    async def recv(self, timeout: float = 5) -> dict[str, Any]:
        frame = orjson.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        self._record(frame)
        return frame

    async def handshake(self, token: str | None, **kw: Any) -> dict[str, Any]:
        """Send connect; return the whole response frame (ok or not). Starts the reader on success."""
        return await self.connect_with(connect_params(token, **kw))

    async def connect_with(self, params: dict[str, Any]) -> dict[str, Any]:
        """``handshake`` with connect params built by the caller (a signed device proof, a node's manifest)."""
        self._methods["c1"] = "connect"
        await self.send_raw({"type": "req", "id": "c1", "method": "connect", "params": params})
        while True:
            frame = await self.recv()
            if frame.get("type") == "res":
                break
        if frame.get("ok"):
            self.hello = frame["payload"]
            self._reader = asyncio.create_task(self._read())
        return frame

    async def _read(self) -> None:
        try:
            async for text in self.ws:
                frame = orjson.loads(text)
                self._record(frame)
                if frame.get("type") == "res" and frame.get("id") in self._pending:
                    self._pending.pop(frame["id"]).set_result(frame)
                elif frame.get("type") == "event":
                    await self.events.put(frame)
        except Exception:
            pass
        finally:
            self.close_code = self.ws.close_code
            self.close_reason = self.ws.close_reason
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("closed"))

    async def req(self, method: str, params: Any = None, *, timeout: float = 10) -> dict[str, Any]:
        req_id = f"t{next(self._ids)}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[req_id] = fut
        self._methods[req_id] = method
        frame: dict[str, Any] = {"type": "req", "id": req_id, "method": method}
        if params is not None:
            frame["params"] = params
        await self.send_raw(frame)
        return await asyncio.wait_for(fut, timeout)

    async def call(self, method: str, params: Any = None, **kw: Any) -> Any:
        """Like ``req`` but returns the payload, failing the test on an error response."""
        frame = await self.req(method, params, **kw)
        assert frame["ok"], frame
        return frame.get("payload")

    async def next_event(self, name: str, timeout: float = 10) -> dict[str, Any]:
        """The next event called ``name`` (others are dropped), or ``TimeoutError`` after ``timeout`` seconds.

        ``asyncio.timeout`` rather than ``wait_for``: on Python 3.11 ``wait_for`` swallows a cancellation that
        lands as the queue hands out a frame, so a cancelled watcher went on waiting its whole timeout.
        """
        async with asyncio.timeout(timeout):
            while True:
                frame = await self.events.get()
                if frame["event"] == name:
                    return frame

    async def wait_closed(self, timeout: float = 5) -> int | None:
        await asyncio.wait_for(self.ws.wait_closed(), timeout)
        self.close_code = self.ws.close_code
        self.close_reason = self.ws.close_reason
        return self.close_code

    async def close(self) -> None:
        await self.ws.close()
        if self._reader:
            self._reader.cancel()


async def operator(url: str, token: str, **kw: Any) -> RawClient:
    client = await RawClient.open(url)
    frame = await client.handshake(token, **kw)
    assert frame["ok"], frame
    return client


def masked_frame(payload: str | bytes, opcode: int = 0x81) -> bytes:
    """One final client frame as a browser writes it: masked with a random key (RFC 6455 §5.2-5.3); for tests that
    write bytes to the socket themselves (several frames in one TCP write, a frame cut in two)."""
    data = payload.encode() if isinstance(payload, str) else payload
    key = os.urandom(4)
    size = len(data)
    head = bytes((opcode, 0x80 | size)) if size < 126 else bytes((opcode, 0xFE)) + size.to_bytes(2, "big")
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(data))
