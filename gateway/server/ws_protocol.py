"""Our WebSocket protocol: uvicorn's sans-I/O one (websockets' core), with two things done as frames are read.

- **The pre-``connect`` frame cap.** A stranger's frames are capped at ``MAX_PREAUTH_FRAME_BYTES`` by the parser
  itself: a frame announcing more is refused from its header (close 1009) before its payload is read. The app
  lifts the cap to ``gateway.maxPayload`` once the handshake succeeds (``LIFT_FRAME_LIMIT``).
- **Inline answers.** Once a client is connected, the app may hand over a function that answers a request on
  the spot (``ANSWER_INLINE``; ``gateway.server.app`` answers ``inline`` methods such as ``health`` with it).
  A frame it answers never reaches uvicorn's ASGI queue, the connection's reading task or a task of its own:
  when 10,000 clients send ``health`` at once, that path was most of the cost of each call. It is used only
  while the app has taken every earlier frame of this socket, so a request never overtakes one sent before it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from gateway.protocol import MAX_PREAUTH_FRAME_BYTES

__all__ = ["ANSWER_INLINE", "INLINE_MAX_BYTES", "LIFT_FRAME_LIMIT", "PEER_SPOKE", "GatewayWebSocketProtocol"]

LIFT_FRAME_LIMIT = "remoteclaw.lift_frame_limit"
"""ASGI scope extension: call it once the peer is authenticated to allow frames up to ``maxPayload``."""
PEER_SPOKE = "remoteclaw.peer_spoke"
"""ASGI scope extension: returns whether a whole message from the peer has arrived since the upgrade."""
ANSWER_INLINE = "remoteclaw.answer_inline"
"""ASGI scope extension: call it with ``answer(text) -> bool`` (True: answered, the app never sees the frame),
or with None to stop. ``answer`` must not raise."""

INLINE_MAX_BYTES = 4096
"""Larger frames always go to the app: an inline request is small, and a large frame is not parsed twice."""


class GatewayWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, with the pre-``connect`` frame limit and inline answers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._full_size = self.conn.max_message_size
        self.conn.max_message_size = MAX_PREAUTH_FRAME_BYTES
        self._spoke = False
        self._answer: Callable[[str], bool] | None = None

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        extensions: dict[str, Any] = self.scope.setdefault("extensions", {})  # type: ignore[assignment]
        extensions[LIFT_FRAME_LIMIT] = self._lift
        extensions[PEER_SPOKE] = self._has_spoken
        extensions[ANSWER_INLINE] = self._answer_with

    def send_receive_event_to_app(self) -> None:
        self._spoke = True  # a complete message, read off the wire even if the app has not taken it yet
        answer = self._answer
        if (answer is not None and self.curr_msg_data_type == "text" and len(self.frames) == 1
                and len(self.frames[0]) <= INLINE_MAX_BYTES and not self.close_sent and self.queue.empty()):
            try:
                text = self.frames[0].decode()
            except UnicodeDecodeError:
                pass  # uvicorn's own path closes with 1007
            else:
                if answer(text):
                    self.frames = []
                    return
        super().send_receive_event_to_app()

    def _has_spoken(self) -> bool:
        return self._spoke

    def _lift(self) -> None:
        self.conn.max_message_size = self._full_size

    def _answer_with(self, answer: Callable[[str], bool] | None) -> None:
        self._answer = answer
