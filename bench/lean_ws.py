"""A WebSocket client that costs its load generator as little as possible: for 10,000 clients on one machine.

The ``websockets`` asyncio client spends about three times this one's CPU per request and answer (a reader
task, a message assembler, a lock and a future per call; docs/benchmarks.md has the figures). When the crowd
runs on the gateway's own cores, that is CPU the gateway does not get, and it sits inside every latency
measured. This client is an ``asyncio.Protocol`` speaking RFC 6455 directly: the opening handshake (checked:
status 101 and the ``Sec-WebSocket-Accept`` of our key), masked text frames out, frames in parsed from one
buffer (text, close, ping; a fragmented message is reassembled). No extension is offered, so no frame is
compressed. It is a plain WebSocket client as far as the gateway can tell; what it skips is bookkeeping, not
protocol.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import random
from collections.abc import Callable
from urllib.parse import urlsplit

from websockets.speedups import apply_mask

__all__ = ["LeanSocket", "open_socket"]

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_TEXT, _CLOSE, _PING, _PONG, _CONT = 0x1, 0x8, 0x9, 0xA, 0x0


def _frame(opcode: int, payload: bytes) -> bytes:
    """A client frame: final, masked (a client must mask; the key need not be secret for a load generator)."""
    key = random.randbytes(4)
    size = len(payload)
    if size < 126:
        head = bytes((0x80 | opcode, 0x80 | size))
    elif size < 65536:
        head = bytes((0x80 | opcode, 0xFE)) + size.to_bytes(2, "big")
    else:
        head = bytes((0x80 | opcode, 0xFF)) + size.to_bytes(8, "big")
    return head + key + apply_mask(payload, key)


class LeanSocket(asyncio.Protocol):
    """One connection. ``on_text(bytes)`` gets each whole text message (UTF-8 bytes, not decoded)."""

    def __init__(self, request: bytes, accept: bytes, on_text: Callable[[bytes], None]) -> None:
        self.on_text = on_text
        self.close_code: int | None = None
        self.close_reason = ""
        self.transport: asyncio.Transport | None = None
        self.open = asyncio.get_running_loop().create_future()
        self.closed = asyncio.get_running_loop().create_future()
        self._request = request
        self._accept = accept
        self._buffer = bytearray()
        self._upgraded = False
        self._parts: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport (uvloop's is not a subclass)
        transport.write(self._request)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.open.done():
            self.open.set_exception(exc or ConnectionError("closed during the opening handshake"))
        if not self.closed.done():
            self.closed.set_result(None)

    def why_closed(self) -> str:
        """The server's close code and reason, for an error message."""
        return f"closed by the server: {self.close_code} {self.close_reason}".rstrip()

    def send_text(self, payload: bytes) -> None:
        """Send one text message (dropped if the socket is already closing: ``closed`` tells)."""
        assert self.transport is not None
        if not self.transport.is_closing():
            self.transport.write(_frame(_TEXT, payload))

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(_frame(_CLOSE, (1000).to_bytes(2, "big")))
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        buf = self._buffer
        buf += data
        if not self._upgraded:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buf[:end]).lower()
            del buf[:end + 4]
            if not head.startswith(b"http/1.1 101") or b"sec-websocket-accept: " + self._accept.lower() not in head:
                self.open.set_exception(ConnectionError(head.split(b"\r\n", 1)[0].decode("latin-1")))
                assert self.transport is not None
                self.transport.close()
                return
            self._upgraded = True
            self.open.set_result(None)
        pos, size = 0, len(buf)
        while size - pos >= 2:
            b0, b1 = buf[pos], buf[pos + 1]
            length, start = b1 & 0x7F, pos + 2
            if length == 126:
                if size - pos < 4:
                    break
                length, start = int.from_bytes(buf[pos + 2:pos + 4], "big"), pos + 4
            elif length == 127:
                if size - pos < 10:
                    break
                length, start = int.from_bytes(buf[pos + 2:pos + 10], "big"), pos + 10
            end = start + length
            if end > size:
                break
            self._frame_in(b0, bytes(buf[start:end]))
            pos = end
        if pos:
            del buf[:pos]

    def _frame_in(self, b0: int, payload: bytes) -> None:
        opcode = b0 & 0x0F
        if opcode in (_TEXT, _CONT):
            self._parts.append(payload)
            if b0 & 0x80:
                message = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
                self._parts = []
                self.on_text(message)
        elif opcode == _PING:
            assert self.transport is not None
            self.transport.write(_frame(_PONG, payload))
        elif opcode == _CLOSE:
            if len(payload) >= 2:
                self.close_code = int.from_bytes(payload[:2], "big")
                self.close_reason = payload[2:].decode(errors="replace")
            assert self.transport is not None
            self.transport.close()


async def open_socket(url: str, on_text: Callable[[bytes], None], *, origin: str | None = None,
                      timeout: float = 120) -> LeanSocket:
    """Connect to ``ws://host:port/path`` and finish the opening handshake."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    key = base64.b64encode(random.randbytes(16))
    accept = base64.b64encode(hashlib.sha1(key + _GUID).digest())
    lines = [f"GET {parts.path or '/'} HTTP/1.1", f"Host: {parts.netloc}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {key.decode()}", "Sec-WebSocket-Version: 13"]
    if origin:
        lines.append(f"Origin: {origin}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    loop = asyncio.get_running_loop()
    _transport, sock = await asyncio.wait_for(
        loop.create_connection(lambda: LeanSocket(request, accept, on_text), host, port), timeout)
    await asyncio.wait_for(sock.open, timeout)
    return sock
