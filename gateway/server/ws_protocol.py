"""Our WebSocket protocol: uvicorn's sans-I/O one (websockets' core), with two things done as frames are read.

- **The pre-``connect`` frame cap.** A stranger's frames are capped at ``MAX_PREAUTH_FRAME_BYTES`` by the parser
  itself: a frame announcing more is refused from its header (close 1009) before its payload is read. The app
  lifts the cap to ``gateway.maxPayload`` once the handshake succeeds (``LIFT_FRAME_LIMIT``).
- **Inline answers.** Once a client is connected, the app may hand over a function that answers a request on
  the spot (``ANSWER_INLINE``; ``gateway.server.app`` answers ``inline`` methods such as ``health`` with it).
  A frame it answers never reaches uvicorn's ASGI queue, the connection's reading task or a task of its own:
  when 10,000 clients send ``health`` at once, that path was most of the cost of each call. It is used only
  while the app has taken every earlier frame of this socket, so a request never overtakes one sent before it.
  The common shape of such a request (one whole, masked, unfragmented text frame, read at a frame boundary) is
  read here without websockets' parser (``_read_whole_frames``); anything else goes through it as before.
- **Inline answers are bounded per turn** (issue #51, item 7). At most ``INLINE_PER_TURN`` frames are answered
  inline per read (one event loop callback). Past that, reading this socket is paused (``pause_reading``), the
  bytes read but not answered are kept, and they are read on the loop's next turn (``call_soon``), after every
  other socket's callbacks; reading resumes once they are done. A frame cut by the end of a read is kept here
  too, until its rest arrives, so a client pipelining small requests stays on this bounded path; the same
  budget holds on websockets' parser path, past which frames go to the app's queue (where uvicorn pauses
  reading until the app has taken them). Without it, one client pipelining ``health`` held the loop for
  seconds at a time: uvloop reads up to 32 times 256 KiB per callback, and every frame was answered at once.
"""

from __future__ import annotations

import asyncio
import fcntl
import sys
import termios
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import State
from websockets.streams import StreamReader

try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - websockets without its C extension
    from websockets.utils import apply_mask

from gateway.protocol import MAX_PREAUTH_FRAME_BYTES

__all__ = ["ANSWER_INLINE", "INLINE_MAX_BYTES", "INLINE_PER_TURN", "LIFT_FRAME_LIMIT", "PEER_SPOKE",
           "GatewayWebSocketProtocol"]

LIFT_FRAME_LIMIT = "remoteclaw.lift_frame_limit"
"""ASGI scope extension: call it once the peer is authenticated to allow frames up to ``maxPayload``."""
PEER_SPOKE = "remoteclaw.peer_spoke"
"""ASGI scope extension: returns whether a whole message from the peer has arrived since the upgrade."""
ANSWER_INLINE = "remoteclaw.answer_inline"
"""ASGI scope extension: call it with ``answer(text) -> bool`` (True: answered, the app never sees the frame),
or with None to stop. ``answer`` must not raise."""

INLINE_MAX_BYTES = 4096
"""Larger frames always go to the app: an inline request is small, and a large frame is not parsed twice."""

INLINE_PER_TURN = 32
"""Frames answered inline per event loop callback at most (a few milliseconds of ``health``); the rest wait their
turn. A crowd sending one request each never reaches it."""

_WHOLE_TEXT = 0x81
"""A frame's first byte for a final text frame with no extension bits (RFC 6455 §5.2)."""
_AT_EOF = StreamReader.at_eof.__code__
"""What websockets' parser waits in between two frames (and only there)."""


class GatewayWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, with the pre-``connect`` frame limit and inline answers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._full_size = self.conn.max_message_size
        self.conn.max_message_size = MAX_PREAUTH_FRAME_BYTES
        self._spoke = False
        self._answer: Callable[[str], bool] | None = None
        self._turn = 0
        """Frames answered inline in this callback."""
        self._held = b""
        """Bytes read off the socket and not yet read as frames, from a frame boundary (websockets' parser holds
        nothing meanwhile): the rest of a read past the budget, or a frame cut by the end of a read."""
        self._resuming: asyncio.Handle | None = None
        """The next turn's read of ``_held``, while reading is paused for the budget."""
        # Reading frames by hand relies on websockets' sans-I/O internals; a version without them reads every
        # frame through its parser, as before.
        self._by_hand = all(hasattr(self.conn, name) for name in ("reader", "current_size", "parser", "extensions"))

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        extensions: dict[str, Any] = self.scope.setdefault("extensions", {})  # type: ignore[assignment]
        extensions[LIFT_FRAME_LIMIT] = self._lift
        extensions[PEER_SPOKE] = self._has_spoken
        extensions[ANSWER_INLINE] = self._answer_with

    def data_received(self, data: bytes) -> None:
        if self._resuming is not None:  # read while paused for the budget (the app's receive resumed reading)
            self._held += data
            self.transport.pause_reading()
            return
        if self._held:
            data, self._held = self._held + data, b""
        self._turn = 0
        self._read(data)

    def _read(self, data: bytes) -> None:
        if self._answer is not None and self._by_hand and self._between_frames():
            data = self._read_whole_frames(data)
            if not data:
                return
            if self._turn >= INLINE_PER_TURN and self.queue.empty():  # the budget is spent: the rest next turn
                self._held = data
                self.transport.pause_reading()
                self._resuming = asyncio.get_running_loop().call_soon(self._resume)
                return
        super().data_received(data)

    def _resume(self) -> None:
        """The next turn's read of what was kept past the budget; reading resumes once it is all read (unless
        uvicorn paused reading meanwhile, for a frame queued to the app: it resumes when the app takes it)."""
        self._resuming = None
        data, self._held = self._held, b""
        if self.transport.is_closing():
            return
        self._turn = 0
        self._read(data)
        if self._resuming is None and not self.read_paused:
            self.transport.resume_reading()

    def _between_frames(self) -> bool:
        """websockets' parser holds nothing: no bytes, no message half read, no frame header read."""
        conn = self.conn
        if conn.reader.buffer or conn.current_size is not None or self.frames or self.close_sent:
            return False
        if conn.state is not State.OPEN or conn.extensions:
            return False
        waiting: Any = conn.parser  # a generator: gi_yieldfrom and gi_code are not in its static type
        while (inner := waiting.gi_yieldfrom) is not None:
            waiting = inner
        return waiting.gi_code is _AT_EOF

    def _read_whole_frames(self, data: bytes) -> bytes:
        """Read the whole small text frames at the head of ``data`` ourselves and answer them inline; a frame the
        app must see is queued for it exactly as uvicorn would. Returns what is left for websockets' parser,
        from a frame boundary: a frame of another kind, a partial one, or anything behind a queued frame."""
        answer = self._answer
        assert answer is not None
        limit = min(INLINE_MAX_BYTES, self.conn.max_message_size or INLINE_MAX_BYTES)
        pos, end_of_data = 0, len(data)
        while self._turn < INLINE_PER_TURN and self.queue.empty() and pos < end_of_data:
            if data[pos] != _WHOLE_TEXT:
                break
            if pos + 6 > end_of_data:
                return self._keep_cut(data, pos)
            size = data[pos + 1] ^ 0x80  # a client's frame must be masked; unmasked ones are websockets' to refuse
            if size == 126:
                if pos + 8 > end_of_data:
                    return self._keep_cut(data, pos)
                size = int.from_bytes(data[pos + 2:pos + 4], "big")
                start = pos + 8
            elif size < 126:
                start = pos + 6
            else:  # unmasked, or a 64-bit length: not a small request
                break
            end = start + size
            if size > limit:
                break
            if end > end_of_data:
                return self._keep_cut(data, pos)
            payload = apply_mask(data[start:end], data[start - 4:start])
            try:
                text = payload.decode()
            except UnicodeDecodeError:
                break  # websockets' parser closes with 1007
            self._spoke = True
            pos = end
            if answer(text):
                self._turn += 1
            else:
                self.curr_msg_data_type = "text"
                self.frames = [payload]
                WebSocketsSansIOProtocol.send_receive_event_to_app(self)
        return data[pos:] if pos else data

    def _keep_cut(self, data: bytes, pos: int) -> bytes:
        """Keep a small text frame cut by the end of the read until its rest arrives (``data_received``)."""
        self._held = data[pos:]
        return b""

    def send_receive_event_to_app(self) -> None:
        self._spoke = True  # a complete message, read off the wire even if the app has not taken it yet
        answer = self._answer
        if (answer is not None and self._turn < INLINE_PER_TURN and self.curr_msg_data_type == "text"
                and len(self.frames) == 1 and len(self.frames[0]) <= INLINE_MAX_BYTES and not self.close_sent
                and self.queue.empty()):
            try:
                text = self.frames[0].decode()
            except UnicodeDecodeError:
                pass  # uvicorn's own path closes with 1007
            else:
                if answer(text):
                    self._turn += 1
                    self.frames = []
                    return
        super().send_receive_event_to_app()

    def _has_spoken(self) -> bool:
        """A whole message was read, or bytes from the peer wait unread in the socket: when the event loop is
        seconds behind (a storm of thousands joining), a connect frame can sit there past the strangers'
        grace, and its sender is waiting on us, not idle."""
        return self._spoke or _unread_bytes(self.transport) > 0

    def _lift(self) -> None:
        self.conn.max_message_size = self._full_size

    def _answer_with(self, answer: Callable[[str], bool] | None) -> None:
        self._answer = answer


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
