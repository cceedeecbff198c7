"""The RPC WebSocket, driven by us: an ``asyncio.Protocol`` that owns the socket, over websockets' sans-I/O
``ServerProtocol``.

Why our own driver: the RPC socket is the gateway's hot path (10,000 clients answering ``health`` at once), and
what it needs beside reading and writing frames (inline answers, a per-turn budget, a frame cap lifted at login,
a close that does not wait for a peer that stopped reading) used to be done by reaching into uvicorn's and
websockets' private state. Here it is done with websockets' documented sans-I/O calls only: ``receive_data``,
``events_received``, ``send_text``, ``send_close``, ``fail``, ``data_to_send`` (whose empty bytes ask us to close
the TCP connection), ``accept``/``reject``/``send_response`` and ``state``.

**The hand-off.** HTTP stays on Starlette and uvicorn. uvicorn creates the class given as its documented ``ws=``
option for every WebSocket upgrade, and replays the request to it. ``rpc_socket_class`` makes that class for one
app: an upgrade to one of the app's RPC paths is answered here (origin check, 101, then ``RpcEndpoint.serve``);
any other upgrade is handed, request bytes and transport, to uvicorn's own ``websockets-sansio`` protocol, which
runs it through the ASGI app as before.

What is done as frames are read:

- **The pre-``connect`` frame cap.** Frames are parsed with ``max_size=MAX_PREAUTH_FRAME_BYTES`` until the peer
  has logged in: a frame announcing more is refused from its header (close 1009) before its payload is read.
  ``lift_frame_limit`` then moves to a second ``ServerProtocol`` (opened, ``max_size`` = ``gateway.maxPayload``)
  at the first boundary between two messages: ``_Bounds`` follows the frame headers (RFC 6455 §5.2) of what the
  first one was given, so no frame is split between the two.
- **Inline answers.** Once a client is connected, the app may hand over a function that answers a request on
  the spot (``answer_inline``; ``gateway.server.app`` answers ``inline`` methods such as ``health`` with it). A
  message it answers never reaches the connection's reading task or a task of its own. It is used only while
  the app has taken every earlier message of this socket, so a request never overtakes one sent before it.
- **Inline answers are bounded per turn** (issue #51, item 7). At most ``INLINE_PER_TURN`` are answered per
  event loop callback; past that, reading pauses, and what was read but not handled (frames parsed, bytes not
  yet parsed) waits for the loop's next turn (``call_soon``), after every other socket's callbacks. Bytes are
  parsed ``READ_CHUNK`` at a time, so one read of a pipelining client is not all parsed at once either.
- **Backpressure to the app.** A message queued for the app pauses reading until the app has taken every
  queued message (as uvicorn does).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import sys
import termios
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, ClassVar, Protocol, cast
from urllib.parse import unquote

from uvicorn.config import Config
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState
from websockets.exceptions import InvalidState
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import State
from websockets.server import ServerProtocol

from gateway.protocol import MAX_PREAUTH_FRAME_BYTES

__all__ = ["CLOSE_TIMEOUT_S", "INLINE_MAX_BYTES", "INLINE_PER_TURN", "READ_CHUNK", "RpcEndpoint", "RpcSocket",
           "rpc_socket_class"]

INLINE_MAX_BYTES = 4096
"""Larger messages always go to the app: an inline request is small."""

INLINE_PER_TURN = 32
"""Messages answered inline per event loop callback at most (a few milliseconds of ``health``); the rest wait
their turn. A crowd sending one request each never reaches it."""

READ_CHUNK = 64 * 1024
"""Bytes handed to websockets' parser at once; more wait while this turn's budget is spent."""

CLOSE_TIMEOUT_S = 10.0
"""After our close frame, how long the peer has to answer it before the socket is closed anyway (uvicorn's)."""

_log = logging.getLogger("gateway.server.rpc_socket")
_ws_log = logging.getLogger("gateway.server.rpc_socket.websockets")
"""websockets' own log lines ("connection open" at info, per socket): warnings only, as under uvicorn."""
_ws_log.setLevel(logging.WARNING)


class RpcEndpoint(Protocol):
    """What serves the RPC sockets of one app (``gateway.server.app.RpcFront``)."""

    rpc_paths: frozenset[str]

    def origin_ok(self, origin: str | None, host: str | None, *, path: str, remote: str) -> bool:
        """Whether a browser page from ``origin`` may open the socket (``gateway.allowedOrigins``); a refusal
        is logged there."""

    def serve(self, socket: RpcSocket) -> Coroutine[Any, Any, None]:
        """Run one accepted socket until it ends."""


def rpc_socket_class(endpoint: RpcEndpoint) -> type[RpcSocket]:
    """The class to give uvicorn as ``ws=``: ``RpcSocket`` bound to ``endpoint``."""
    return type("BoundRpcSocket", (RpcSocket,), {"endpoint": endpoint})


class _Bounds:
    """Where frames end in the bytes given to a parser, from their headers alone (RFC 6455 §5.2), and whether a
    fragmented message is still open: where the frame cap can change without splitting a frame or message."""

    __slots__ = ("head", "in_message", "left")

    def __init__(self) -> None:
        self.head = b""
        """A frame header read in part."""
        self.left = 0
        """Payload bytes of the current frame not seen yet."""
        self.in_message = False
        """A data frame without FIN was seen, and not yet its final continuation."""

    def between_messages(self) -> bool:
        return not self.head and not self.left and not self.in_message

    def advance(self, data: bytes, *, stop_between_messages: bool) -> int | None:
        """Follow ``data``; with ``stop_between_messages``, stop at the first offset between two messages and
        return it. None: all of ``data`` was followed without reaching one (or the flag was off)."""
        i, end = 0, len(data)
        while True:
            if self.left:
                take = min(self.left, end - i)
                i += take
                self.left -= take
                if self.left:
                    return None
            if stop_between_messages and self.between_messages():
                return i
            if i >= end:
                return None
            head = self.head + data[i:i + 14]
            need = 2
            if len(head) >= 2:
                size = head[1] & 0x7F
                need += (2 if size == 126 else 8 if size == 127 else 0) + (4 if head[1] & 0x80 else 0)
            if len(head) < need:
                self.head = head
                return None
            i += need - len(self.head)
            self.head = b""
            size = head[1] & 0x7F
            if size == 126:
                size = int.from_bytes(head[2:4], "big")
            elif size == 127:
                size = int.from_bytes(head[2:10], "big")
            self.left = size
            opcode, fin = head[0] & 0x0F, head[0] & 0x80
            if opcode in (Opcode.TEXT, Opcode.BINARY):
                self.in_message = not fin
            elif opcode == Opcode.CONT and fin:
                self.in_message = False


class RpcSocket(asyncio.Protocol):
    """One RPC WebSocket: handshake, frames in and out, close; the app's side is ``receive_text``, ``write``,
    ``close`` and the three hooks (``lift_frame_limit``, ``peer_spoke``, ``answer_inline``)."""

    endpoint: ClassVar[RpcEndpoint]
    """Set on the class ``rpc_socket_class`` makes."""
    _proxy: ClassVar[ProxyHeadersMiddleware | None] = None

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        # What uvicorn hands every ``ws=`` protocol; kept to hand a non-RPC upgrade to its own protocol.
        self._config, self._server_state, self._app_state = config, server_state, app_state
        self._loop = _loop or asyncio.get_event_loop()
        self.transport: asyncio.Transport = cast(asyncio.Transport, None)
        self.ws = ServerProtocol(max_size=MAX_PREAUTH_FRAME_BYTES, logger=_ws_log)
        self.remote = "unknown"
        """The peer's address (``X-Forwarded-For`` from a trusted proxy, as uvicorn's ``proxy_headers``)."""
        self.request: Request | None = None
        self._request_bytes = b""
        self._open = False
        """The 101 was sent: frames from now on."""
        self._full_size: int | None = config.ws_max_size
        self._bounds: _Bounds | None = _Bounds()
        """Frame boundaries of the pre-``connect`` parser, until the cap is lifted."""
        self._lift_pending = False
        self._spoke = False
        self._answer: Callable[[str], bool] | None = None
        self._turn = 0
        """Messages answered inline in this callback."""
        self._events: deque[Frame] = deque()
        """Frames parsed and not yet handled (past this turn's budget)."""
        self._unread = b""
        """Bytes read off the socket and not yet given to the parser."""
        self._parts: list[bytes] = []
        """The frames so far of a fragmented message."""
        self._parts_text = False
        self._messages: deque[str] = deque()
        """Whole messages for the app, in order."""
        self._waiter: asyncio.Future[None] | None = None
        self._app_behind = False
        """Messages wait for the app: reading paused until it has taken them."""
        self._next_turn: asyncio.Handle | None = None
        self._reading_paused = False
        self._writable = asyncio.Event()
        self._writable.set()
        self._ended = False
        """No more messages will come (closed by either side, failed, or lost); ``receive_text`` returns None
        once the queued ones are taken."""
        self.close_sent = False
        self._lost = False
        self._close_timer: asyncio.TimerHandle | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self._server_state.connections.add(self)  # type: ignore[arg-type]  # uvicorn's shutdown closes us

    def data_received(self, data: bytes) -> None:
        if not self._open:
            self._handshake(data)
            return
        self._unread += data
        if self._next_turn is not None:  # paused for the budget: read in order on the next turn
            return
        self._turn = 0
        self._pump()

    def eof_received(self) -> bool | None:
        return None  # the transport closes; connection_lost ends the socket

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._server_state.connections.discard(self)  # type: ignore[arg-type]
        self._writable.set()  # a paused transport that is lost never resumes: wake the writer
        if self._close_timer is not None:
            self._close_timer.cancel()
            self._close_timer = None
        if self._next_turn is not None:
            self._next_turn.cancel()
            self._next_turn = None
        self._end()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def shutdown(self) -> None:
        """uvicorn is stopping: close 1012 (service restart), as its own WebSocket protocol does."""
        if self.close_sent:
            if self._close_timer is not None:
                self._close_timer.cancel()
                self._close_timer = None
        elif self._open:
            with contextlib.suppress(InvalidState):
                self.ws.send_close(1012)
            self._write_pending()
            self.close_sent = True
        self._end()
        self.transport.close()

    # The opening handshake

    def _handshake(self, data: bytes) -> None:
        self._request_bytes += data
        ws = self.ws
        ws.receive_data(data)
        for event in ws.events_received():
            if isinstance(event, Request):
                self._upgrade(event)
                return
        if self._write_pending():  # a request websockets refused (400, 414, 431): answered, closing
            self.transport.close()

    def _upgrade(self, request: Request) -> None:
        path = unquote(request.path.partition("?")[0])
        endpoint = self.endpoint
        if path not in endpoint.rpc_paths:
            self._hand_to_uvicorn()
            return
        ws = self.ws
        if not endpoint.origin_ok(request.headers.get("Origin"), request.headers.get("Host"), path=path,
                                  remote=self._peer()):
            response = ws.reject(403, "")
        else:
            response = ws.accept(request)
        ws.send_response(response)
        if response.status_code != 101:
            self._write_pending()
            self.transport.close()
            return
        self._write_pending()
        self._open = True
        self.request = request
        self._request_bytes = b""
        self.remote = self._peer()
        task = self._loop.create_task(self._serve(request))
        self._server_state.tasks.add(task)
        task.add_done_callback(self._server_state.tasks.discard)

    def _peer(self) -> str:
        peer = self.transport.get_extra_info("peername")
        return str(peer[0]) if isinstance(peer, tuple) and peer else "unknown"

    def _hand_to_uvicorn(self) -> None:
        """Not an RPC path: uvicorn's own WebSocket protocol takes the socket and runs the ASGI app for it."""
        other = WebSocketsSansIOProtocol(config=self._config, server_state=self._server_state,
                                         app_state=self._app_state)
        self._server_state.connections.discard(self)  # type: ignore[arg-type]
        other.connection_made(self.transport)
        self.transport.set_protocol(other)
        other.data_received(self._request_bytes)

    async def _serve(self, request: Request) -> None:
        try:
            if self.remote != "unknown" and self._config.proxy_headers and "X-Forwarded-For" in request.headers:
                self.remote = await self._forwarded_client(request)
            await self.endpoint.serve(self)
        except Exception:
            _log.exception("RPC socket failed")
        finally:
            if self._close_timer is None:  # ended without a closing handshake under way: as uvicorn does
                self.transport.close()

    async def _forwarded_client(self, request: Request) -> str:
        """The client uvicorn's ``ProxyHeadersMiddleware`` sees for this request (trusted hosts, the header's
        right-most untrusted address)."""
        cls = type(self)
        if cls._proxy is None:  # the middleware rewrites the scope's client, then calls the app: ours does nothing
            cls._proxy = ProxyHeadersMiddleware(_nothing, trusted_hosts=self._config.forwarded_allow_ips)
        scope: dict[str, Any] = {
            "type": "websocket", "client": (self.remote, 0), "scheme": "ws",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.raw_items()]}
        await cls._proxy(scope, _nothing, _nothing)  # type: ignore[arg-type]
        client = scope.get("client")
        return str(client[0]) if client else self.remote

    # Frames in

    def _pump(self) -> None:
        """Handle parsed frames, then parse more bytes, within this turn's budget and while the app keeps up."""
        events = self._events
        while True:
            while events:
                if self._turn >= INLINE_PER_TURN:
                    self._wait_next_turn()
                    return
                self._frame(events.popleft())
            if not self._unread or self._app_behind or self.transport.is_closing():
                self._update_reading()
                return
            chunk, self._unread = self._unread[:READ_CHUNK], self._unread[READ_CHUNK:]
            if self._bounds is not None:
                chunk = self._follow(chunk)
            self._parse(chunk)

    def _parse(self, data: bytes) -> None:
        ws = self.ws
        ws.receive_data(data)
        self._events.extend(cast(list[Frame], ws.events_received()))  # past the handshake: frames only
        if self._write_pending():  # websockets failed the connection, or answered a close
            self._end()
            self.transport.close()

    def _follow(self, chunk: bytes) -> bytes:
        """Track frame boundaries before the cap is lifted; once a lift waits and a boundary between messages
        is in ``chunk``, move to the full-size parser there (the rest of ``chunk`` goes back to ``_unread``)."""
        bounds = self._bounds
        assert bounds is not None
        cut = bounds.advance(chunk, stop_between_messages=self._lift_pending)
        if cut is None:
            return chunk
        rest = chunk[cut:]
        head = chunk[:cut]
        if head:
            self._parse(head)
        self._swap_parser()
        return rest

    def _swap_parser(self) -> None:
        """The full-size parser, from a boundary between messages of the pre-``connect`` one."""
        self._bounds = None
        self._lift_pending = False
        if self.ws.state is State.OPEN:
            self.ws = ServerProtocol(state=State.OPEN, max_size=self._full_size, logger=_ws_log)

    def _frame(self, frame: Frame) -> None:
        opcode = frame.opcode
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if frame.fin:
                self._message(bytes(frame.data), text=opcode is Opcode.TEXT)
            else:
                self._parts = [bytes(frame.data)]
                self._parts_text = opcode is Opcode.TEXT
        elif opcode is Opcode.CONT:
            self._parts.append(bytes(frame.data))
            if frame.fin:
                data, self._parts = b"".join(self._parts), []
                self._message(data, text=self._parts_text)
        elif opcode is Opcode.CLOSE:  # websockets answered it as it was parsed (``_parse``); we close, as uvicorn
            self._end()
            self.transport.close()
        # PING: websockets queued the pong; PONG: we send no pings

    def _message(self, data: bytes, *, text: bool) -> None:
        self._spoke = True
        if self.close_sent:
            return  # past our close: read until the peer's answer, keep nothing (as uvicorn)
        if text:
            try:
                decoded = data.decode()
            except UnicodeDecodeError:
                self.ws.fail(1007)  # as uvicorn's websockets-sansio closes it
                self._write_pending()
                self._end()
                self.transport.close()
                return
            answer = self._answer
            if (answer is not None and not self._messages and len(data) <= INLINE_MAX_BYTES
                    and self._turn < INLINE_PER_TURN and answer(decoded)):
                self._turn += 1
                return
        else:
            decoded = data.decode("utf-8", "replace")  # the RPC is text; a binary frame is read as UTF-8
        self._messages.append(decoded)
        self._app_behind = True
        self._wake()

    def _wait_next_turn(self) -> None:
        self._next_turn = self._loop.call_soon(self._resume)
        self._update_reading()

    def _resume(self) -> None:
        self._next_turn = None
        if self.transport.is_closing():
            return
        self._turn = 0
        self._pump()

    def _update_reading(self) -> None:
        paused = self._app_behind or self._next_turn is not None
        if paused is self._reading_paused or self._lost:
            return
        self._reading_paused = paused
        if paused:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()

    def _end(self) -> None:
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # The app's side

    async def receive_text(self) -> str | None:
        """The next message (a binary one read as UTF-8); None once the socket has ended and all were taken."""
        messages = self._messages
        while not messages:
            if self._ended:
                return None
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        text = messages.popleft()
        if not messages and self._app_behind:
            self._app_behind = False
            if self._next_turn is None and (self._unread or self._events):
                self._wait_next_turn()  # what was read meanwhile, on the protocol's own callback
            else:
                self._update_reading()
        return text

    def lift_frame_limit(self) -> None:
        """The peer logged in: frames up to ``gateway.maxPayload`` from the next message on."""
        if self._bounds is None:
            return
        if self._bounds.between_messages():
            self._swap_parser()
        else:
            self._lift_pending = True

    def peer_spoke(self) -> bool:
        """A whole message was read, or bytes from the peer wait unread in the socket: when the event loop is
        seconds behind (a storm of thousands joining), a connect frame can sit there past the strangers'
        grace, and its sender is waiting on us, not idle."""
        return self._spoke or _unread_bytes(self.transport) > 0

    def answer_inline(self, answer: Callable[[str], bool] | None) -> None:
        """``answer(text) -> bool`` (True: answered, the app never sees the message), or None to stop.
        ``answer`` must not raise."""
        self._answer = answer

    # Frames out

    def ready(self) -> bool:
        """Writable right now: open, and the transport not pushing back."""
        return (self._writable.is_set() and not self.close_sent and not self._lost
                and not self.transport.is_closing())

    async def writable(self) -> None:
        await self._writable.wait()
        if self.close_sent or self._lost or self.transport.is_closing():
            raise ConnectionError("socket closed")

    def write(self, texts: list[str]) -> None:
        """Frame ``texts`` (websockets' ``send_text``) and hand the transport one write.

        Raises:
            websockets.exceptions.InvalidState: the connection is closing.
        """
        ws = self.ws
        for text in texts:
            ws.send_text(text.encode())
        self.transport.write(b"".join(ws.data_to_send()))

    def write_buffer_size(self) -> int:
        return 0 if self._lost else self.transport.get_write_buffer_size()

    def close(self, code: int, reason: str = "", *, within: float = CLOSE_TIMEOUT_S, abort: bool = False) -> None:
        """Send a close frame (after what was written) and end the socket for the app; the TCP connection
        closes when the peer answers, or after ``within`` seconds (aborted, with ``abort``: a peer that stopped
        reading never drains its buffer)."""
        if self.close_sent or self._lost or self.transport.is_closing():
            self._end()
            return
        with contextlib.suppress(InvalidState):
            self.ws.send_close(code, reason)
        self.close_sent = True
        self._write_pending()
        self._end()
        if self._app_behind:  # nothing more for the app, but the peer's close must still be read
            self._app_behind = False
            self._messages.clear()
            self._update_reading()
        self._close_timer = self._loop.call_later(within, self.transport.abort if abort else self.transport.close)

    def _write_pending(self) -> bool:
        """Write what websockets has to send; True when it asks for the TCP connection to close (its empty
        bytes: the closing handshake is done, or it failed the connection)."""
        out = self.ws.data_to_send()
        if not out:
            return False
        data = b"".join(out)
        if data and not self.transport.is_closing():
            self.transport.write(data)
        return out[-1] == b""


async def _nothing(*_args: Any) -> None:  # pragma: no cover - the middleware never calls receive or send here
    return None


def _unread_bytes(transport: Any) -> int:
    """Bytes received on the transport's socket that nobody has read yet (``FIONREAD``); 0 when unknown."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None:
        return 0
    try:
        out = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
    except (OSError, ValueError):
        return 0
    return int.from_bytes(out, sys.byteorder)
