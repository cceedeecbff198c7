"""The one client every benchmark uses, against our gateway and OpenClaw's alike.

It is deliberately independent of ``mcp_shim.client``: a benchmark client must not be tuned for one
of the two servers it compares. It speaks the OpenClaw gateway protocol directly over ``websockets``
with orjson, and can sign the optional device proof (Ed25519 over the v3 payload) the way the
``openclaw`` CLI does, because a server may grant scopes only to an identified device.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from websockets.asyncio.client import ClientConnection, connect

__all__ = ["BenchClient", "DeviceKey", "HandshakeError"]

SCOPES = ["operator.admin", "operator.read", "operator.write", "operator.approvals", "operator.pairing"]


class HandshakeError(Exception):
    """The server refused ``connect``; carries the error object it sent."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class DeviceKey:
    """A device identity: one Ed25519 key, reused for every connect (as a real client would)."""

    private: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)

    @property
    def raw_public(self) -> bytes:
        return self.private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    @property
    def device_id(self) -> str:
        return hashlib.sha256(self.raw_public).hexdigest()

    def proof(self, params: dict[str, Any], token: str, nonce: str, signed_at: int) -> dict[str, Any]:
        client = params["client"]
        payload = "|".join([
            "v3", self.device_id, client["id"], client["mode"], params["role"], ",".join(params["scopes"]),
            str(signed_at), token, nonce, client.get("platform", "").strip().lower(),
            (client.get("deviceFamily") or "").strip().lower(),
        ])
        return {"id": self.device_id, "publicKey": _b64url(self.raw_public),
                "signature": _b64url(self.private.sign(payload.encode())), "signedAt": signed_at, "nonce": nonce}


class BenchClient:
    """One WebSocket, requests matched by id, so many may be in flight at once."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.hello: dict[str, Any] = {}
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.on_event: Any = None
        """Called with each event frame (and the monotonic time it arrived), when set."""

    @classmethod
    async def connect(cls, url: str, token: str, *, device: DeviceKey | None = None,
                      client_id: str = "cli", mode: str = "cli", timeout: float = 10.0) -> BenchClient:
        """Open, answer the challenge with ``connect``, and wait for ``hello-ok``.

        Raises:
            HandshakeError: the server answered ``connect`` with an error.
            OSError: nothing listens there (yet).
        """
        ws = await connect(url, max_size=None, compression=None, ping_interval=None, open_timeout=timeout)
        try:
            challenge = orjson.loads(await asyncio.wait_for(ws.recv(), timeout))
            nonce = (challenge.get("payload") or {}).get("nonce", "")
            params: dict[str, Any] = {
                "minProtocol": 3, "maxProtocol": 4,
                "client": {"id": client_id, "version": "bench", "platform": "linux", "mode": mode},
                "role": "operator", "scopes": SCOPES, "auth": {"token": token},
            }
            if device is not None:
                params["device"] = device.proof(params, token, nonce, int(time.time() * 1000))
            await ws.send(orjson.dumps({"type": "req", "id": "connect", "method": "connect", "params": params}))
            while True:
                frame = orjson.loads(await asyncio.wait_for(ws.recv(), timeout))
                if frame.get("type") == "res" and frame.get("id") == "connect":
                    break
            if not frame.get("ok"):
                raise HandshakeError(frame.get("error") or {})
        except BaseException:
            await ws.close()
            raise
        client = cls(ws)
        client.hello = frame.get("payload") or {}
        client._reader = asyncio.create_task(client._read())
        return client

    async def _read(self) -> None:
        try:
            async for text in self.ws:
                frame = orjson.loads(text)
                if frame.get("type") == "res":
                    fut = self._pending.pop(frame.get("id"), None)
                    if fut is not None and not fut.done():
                        fut.set_result(frame)
                elif self.on_event is not None and frame.get("type") == "event":
                    self.on_event(frame, time.perf_counter())
        except Exception:
            pass
        finally:
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("connection closed"))

    async def request(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        """Send one request; return its whole response frame."""
        req_id = str(next(self._ids))
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[req_id] = fut
        frame: dict[str, Any] = {"type": "req", "id": req_id, "method": method}
        if params is not None:
            frame["params"] = params
        await self.ws.send(orjson.dumps(frame).decode())
        return await asyncio.wait_for(fut, timeout)

    async def call(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        frame = await self.request(method, params, timeout)
        if not frame.get("ok"):
            raise RuntimeError(f"{method} failed: {frame.get('error')}")
        return frame.get("payload")

    async def close(self) -> None:
        await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()
