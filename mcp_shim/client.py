"""A small asyncio client for the gateway's WebSocket protocol.

One persistent connection, many concurrent requests matched by id, per-request timeouts,
and a transparent reconnect when the gateway restarts. Used by the MCP shim (one per agent
run) and by the ``remoteclaw`` CLI. It imports only the standard library, orjson,
``gateway.protocol`` and the websockets client, so it is cheap to start.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import Callable, Iterable
from typing import Any

from gateway.protocol import (
    PROTOCOL_VERSION,
    RpcError,
    Unavailable,
    decode,
    encode,
    request_frame,
)

__all__ = ["RETRY_WINDOW_S", "ConnectionLost", "GatewayClient", "default_url", "safe_to_repeat"]

EventHandler = Callable[[str, Any], None]


RETRY_WINDOW_S = 15.0
"""How long a call whose connection dropped keeps being retried while the gateway comes back."""

_READ_VERBS = frozenset({"list", "get", "status", "history", "read", "describe", "schema", "runs", "providers",
                         "wait", "health", "tail", "presence"})


class ConnectionLost(Unavailable):
    """The connection closed before the gateway answered (it may or may not have acted on the call)."""


class _NotSent(ConnectionLost):
    """The connection was gone before the call went out: sending it again is always safe."""


def safe_to_repeat(method: str, params: Any) -> bool:
    """Whether sending ``method`` again after a lost answer cannot double an effect."""
    if isinstance(params, dict) and params.get("idempotencyKey"):
        return True
    return method.rsplit(".", 1)[-1] in _READ_VERBS


def default_url() -> str:
    return os.environ.get("REMOTECLAW_GATEWAY_URL") or "ws://127.0.0.1:18789/"


class GatewayClient:
    """Talks to one gateway as an operator (or a node).

    Args:
        url: ``ws://host:port/``.
        token: the gateway token.
        client_id / mode / version: how we introduce ourselves in ``connect``.
        scopes: operator scopes to ask for (least privilege is the caller's choice).
        role: ``operator`` or ``node``.
        on_event: called with ``(event, payload)`` for every event frame.
        timeout: default per-request timeout in seconds.
        extra_connect: more ``connect`` params (``caps``, ``commands``... for nodes).
        device_signer: builds the ``device`` proof from the connect params and the challenge nonce.
        display_name: ``client.displayName`` (how a node or device is listed).
    """

    def __init__(
        self,
        url: str,
        token: str | None,
        *,
        client_id: str = "cli",
        mode: str = "cli",
        version: str = "",
        scopes: Iterable[str] = ("operator.read",),
        role: str = "operator",
        on_event: EventHandler | None = None,
        timeout: float = 30.0,
        extra_connect: dict[str, Any] | None = None,
        device_signer: Callable[[dict[str, Any], str], dict[str, Any]] | None = None,
        display_name: str | None = None,
        unix_socket: str | None = None,
    ) -> None:
        self.url = url
        self.unix_socket = unix_socket
        """Connect through this Unix socket (the sandbox's relay to the gateway) instead of the URL's host."""
        self.token = token
        self.client_id = client_id
        self.mode = mode
        self.version = version
        self.scopes = list(scopes)
        self.role = role
        self.on_event = on_event
        self.timeout = timeout
        self.extra_connect = extra_connect or {}
        self.device_signer = device_signer
        self.display_name = display_name
        self.hello: dict[str, Any] | None = None
        self._ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._connect_lock = asyncio.Lock()

    @property
    def connected(self) -> bool:
        return self._ws is not None and self._reader is not None and not self._reader.done()

    async def connect(self, *, open_timeout: float = 10.0) -> dict[str, Any]:
        """Open the socket and complete the handshake; returns the ``hello-ok`` payload."""
        async with self._connect_lock:
            if self.connected and self.hello is not None:
                return self.hello
            from websockets.asyncio.client import connect, unix_connect

            options: dict[str, Any] = {"max_size": None, "compression": None, "open_timeout": open_timeout,
                                       "ping_interval": None, "close_timeout": 1}
            if self.unix_socket:
                ws = await unix_connect(self.unix_socket, self.url, **options)
            else:
                ws = await connect(self.url, **options)
            try:
                # The server speaks first with connect.challenge; we answer with connect.
                challenge = decode(await asyncio.wait_for(ws.recv(), open_timeout))
                nonce = (challenge.get("payload") or {}).get("nonce") if isinstance(challenge, dict) else None
                params: dict[str, Any] = {
                    "minProtocol": 3,
                    "maxProtocol": PROTOCOL_VERSION,
                    "client": {"id": self.client_id, "version": self.version, "platform": _platform(),
                               "mode": self.mode, **({"displayName": self.display_name} if self.display_name else {})},
                    "role": self.role,
                    "scopes": self.scopes,
                    **self.extra_connect,
                }
                if self.token:
                    params["auth"] = {"token": self.token}
                if self.device_signer is not None and nonce:
                    params["device"] = self.device_signer(params, nonce)
                await ws.send(encode(request_frame("connect-1", "connect", params)))
                while True:
                    reply = decode(await asyncio.wait_for(ws.recv(), open_timeout))
                    if reply.get("type") == "res" and reply.get("id") == "connect-1":
                        break
                if not reply.get("ok"):
                    raise RpcError.from_shape(reply.get("error") or {})
            except BaseException:
                with contextlib.suppress(Exception):
                    await ws.close()
                raise
            self._ws = ws
            self.hello = reply.get("payload") or {}
            self._reader = asyncio.create_task(self._read_loop(ws), name="gateway-client-reader")
            return self.hello

    async def _read_loop(self, ws: Any) -> None:
        try:
            async for text in ws:
                try:
                    frame = decode(text)
                except ValueError:
                    continue
                kind = frame.get("type")
                if kind == "res":
                    fut = self._pending.pop(str(frame.get("id")), None)
                    if fut is not None and not fut.done():
                        if frame.get("ok"):
                            fut.set_result(frame.get("payload"))
                        else:
                            fut.set_exception(RpcError.from_shape(frame.get("error") or {}))
                elif kind == "event" and self.on_event is not None:
                    with contextlib.suppress(Exception):  # an event handler must never kill the connection
                        self.on_event(frame.get("event", ""), frame.get("payload"))
        except Exception:
            pass
        finally:
            self._ws = None
            err = ConnectionLost("gateway connection closed", retryable=True)
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(err)
            self._pending.clear()

    async def request(self, method: str, params: Any = None, *, timeout: float | None = None,
                      reconnect: bool = True) -> Any:
        """Call a gateway method; returns its payload or raises ``RpcError``.

        If the connection is down (the gateway restarted) it reconnects first. If it drops while the
        call is in flight, the call is sent again on a new connection, within ``RETRY_WINDOW_S``, when
        that cannot double an effect: it carries an ``idempotencyKey`` (the gateway answers a repeat with
        the first answer, even across its restart) or only reads (``safe_to_repeat``).
        """
        timeout = self.timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, RETRY_WINDOW_S)
        while True:
            try:
                return await self._request_once(method, params, timeout, reconnect)
            except ConnectionLost as lost:
                repeatable = isinstance(lost, _NotSent) or safe_to_repeat(method, params)
                if not reconnect or not repeatable or loop.time() >= deadline:
                    raise
                await self._reconnect(deadline - loop.time())

    async def _request_once(self, method: str, params: Any, timeout: float, reconnect: bool) -> Any:
        if not self.connected:
            if not reconnect and self.hello is not None:
                raise _NotSent("gateway connection closed", retryable=True)
            await self._reconnect(timeout)
        req_id = f"r{next(self._ids)}"
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[req_id] = fut
        try:
            await self._ws.send(encode(request_frame(req_id, method, params)))
        except Exception:
            self._pending.pop(req_id, None)
            raise _NotSent("gateway connection closed", retryable=True) from None
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            self._pending.pop(req_id, None)
            raise Unavailable(f"{method} timed out after {timeout:g}s", retryable=True) from None

    async def _reconnect(self, budget: float) -> None:
        """Connect, retrying briefly while a restarting gateway comes back."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(budget, 15.0)
        delay = 0.05
        while True:
            try:
                await self.connect(open_timeout=max(1.0, deadline - loop.time()))
                return
            except RpcError:
                raise
            except (OSError, TimeoutError, Exception) as exc:
                if loop.time() + delay > deadline:
                    raise Unavailable(f"cannot reach the gateway at {self.url}: {exc}", retryable=True) from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)

    async def wait_closed(self) -> None:
        """Return when the connection has closed (at once if it is not open)."""
        reader = self._reader
        if reader is not None:
            with contextlib.suppress(BaseException):
                await asyncio.shield(reader)

    async def close(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                await ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader

    async def __aenter__(self) -> GatewayClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _platform() -> str:
    import sys

    return sys.platform
