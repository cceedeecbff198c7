"""``GatewayWebSocketProtocol``'s inline answers, on uvicorn's real protocol object: which complete messages are
answered on the spot and which go to the app's queue (the wire path is in tests/gateway/dispatch)."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState
from websockets.server import ServerProtocol

from gateway.server.ws_protocol import ANSWER_INLINE, INLINE_MAX_BYTES, INLINE_PER_TURN, GatewayWebSocketProtocol
from tests.support.ws import masked_frame


async def _app(_scope: Any, _receive: Any, _send: Any) -> None:
    return None


class _Transport:
    """What the protocol calls on its transport: it stops reading when it queues a message, until the app asks;
    it writes a pong."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.sock: socket.socket | None = None
        self.paused = False

    def get_extra_info(self, name: str) -> Any:
        return self.sock if name == "socket" else None

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def is_closing(self) -> bool:
        return False

    def write(self, data: bytes) -> None:
        self.written.append(data)


@pytest.fixture
async def protocol() -> GatewayWebSocketProtocol:
    config = uvicorn.Config(_app, ws="websockets-sansio", lifespan="off")
    config.load()
    proto = GatewayWebSocketProtocol(config, ServerState(), {})
    proto.transport = _Transport()  # type: ignore[assignment]
    proto.scope = {"type": "websocket", "extensions": {}}  # type: ignore[assignment]
    proto.scope["extensions"][ANSWER_INLINE] = proto._answer_with  # as handle_connect registers it
    return proto


def _message(proto: GatewayWebSocketProtocol, text: str) -> None:
    """A complete text message, as the parser hands it over."""
    proto.curr_msg_data_type = "text"
    proto.frames = [text.encode()]
    proto.send_receive_event_to_app()


def _answerer() -> tuple[list[str], Callable[[str], bool]]:
    """An inline answer that takes the messages starting with ``inline``, and the list of those it took."""
    answered: list[str] = []

    def answer(text: str) -> bool:
        if text.startswith("inline"):
            answered.append(text)
            return True
        return False

    return answered, answer


def _queued(proto: GatewayWebSocketProtocol) -> list[str]:
    out = []
    while not proto.queue.empty():
        out.append(proto.queue.get_nowait()["text"])  # type: ignore[typeddict-item]
    return out


async def test_a_message_is_answered_inline_only_when_nothing_earlier_waits_for_the_app(
        protocol: GatewayWebSocketProtocol) -> None:
    answered, answer = _answerer()

    _message(protocol, "inline 1")  # before the app asks for answers: it goes to the app
    assert _queued(protocol) == ["inline 1"]
    protocol.scope["extensions"][ANSWER_INLINE](answer)
    _message(protocol, "inline 2")
    assert answered == ["inline 2"] and _queued(protocol) == []
    _message(protocol, "slow 3")  # not answerable: queued
    _message(protocol, "inline 4")  # behind "slow 3", which the app has not taken: it must not overtake it
    assert answered == ["inline 2"] and _queued(protocol) == ["slow 3", "inline 4"]
    _message(protocol, "inline 5")  # the app took everything: answered again
    _message(protocol, "inline " + "x" * INLINE_MAX_BYTES)  # too large to be an inline request
    assert answered == ["inline 2", "inline 5"] and _queued(protocol) == ["inline " + "x" * INLINE_MAX_BYTES]
    protocol.scope["extensions"][ANSWER_INLINE](None)  # the connection is ending
    _message(protocol, "inline 6")
    assert answered == ["inline 2", "inline 5"] and _queued(protocol) == ["inline 6"]
    assert protocol._has_spoken()


def _open(proto: GatewayWebSocketProtocol) -> None:
    """Give the protocol a websockets connection past its opening handshake, as uvicorn's ``handle_connect`` does."""
    conn = ServerProtocol()
    conn.receive_data(b"GET / HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    [request] = conn.events_received()
    conn.send_response(conn.accept(request))
    conn.data_to_send()
    proto.conn = conn


async def test_whole_frames_are_read_without_the_parser_and_the_rest_goes_through_it(
        protocol: GatewayWebSocketProtocol) -> None:
    _open(protocol)
    answered, answer = _answerer()

    protocol.scope["extensions"][ANSWER_INLINE](answer)
    parsed: list[bytes] = []  # what reaches websockets' parser
    receive_data = protocol.conn.receive_data
    protocol.conn.receive_data = lambda data: (parsed.append(bytes(data)), receive_data(data))  # type: ignore
    long = "inline " + "y" * 200  # a 16-bit length
    third = masked_frame("inline 3")
    protocol.data_received(masked_frame("inline 1") + masked_frame(long) + third[:4])
    assert answered == ["inline 1", long]
    assert parsed == []  # the whole frames were read by hand; the cut one is kept until its rest arrives
    protocol.data_received(third[4:])  # completed: read by hand too
    assert parsed == []
    assert answered == ["inline 1", long, "inline 3"] and _queued(protocol) == []
    protocol.data_received(masked_frame("slow 4") + masked_frame("inline 5") + masked_frame("inline 6"))
    assert answered == ["inline 1", long, "inline 3"]  # behind "slow 4": the app takes them in order
    assert _queued(protocol) == ["slow 4", "inline 5", "inline 6"]
    protocol.data_received(masked_frame("inline 7") + bytes((0x89, 0x80)) + os.urandom(4) + masked_frame("inline 8"))
    assert answered[-2:] == ["inline 7", "inline 8"]  # a ping between them went through websockets' parser
    assert protocol.transport.written == [b"\x8a\x00"]  # type: ignore[attr-defined]  # and got its pong


async def test_inline_answers_are_bounded_per_turn_and_reading_pauses_until_the_rest_is_read(
        protocol: GatewayWebSocketProtocol) -> None:
    """A client pipelining small requests gets ``INLINE_PER_TURN`` answers per event loop turn: the rest of its
    read waits, with reading paused, until the loop has run its other callbacks (issue #51, item 7)."""
    _open(protocol)
    answered, answer = _answerer()
    protocol.scope["extensions"][ANSWER_INLINE](answer)
    transport: Any = protocol.transport
    texts = [f"inline {n}" for n in range(2 * INLINE_PER_TURN + 3)]
    wire = b"".join(masked_frame(t) for t in texts)
    protocol.data_received(wire[:-3])  # the last frame cut
    assert answered == texts[:INLINE_PER_TURN] and transport.paused
    await asyncio.sleep(0)  # the next turn
    assert answered == texts[:2 * INLINE_PER_TURN] and transport.paused
    protocol.data_received(wire[-3:])  # read anyway (the app resumed reading): kept behind the rest
    await asyncio.sleep(0)
    assert answered == texts and not transport.paused and _queued(protocol) == []
    # On websockets' parser path (a frame the by-hand read leaves to it: a ping first), the same budget holds:
    # past it, frames go to the app's queue, in order.
    protocol.data_received(bytes((0x89, 0x80)) + os.urandom(4) + b"".join(masked_frame(t) for t in texts))
    assert answered == texts + texts[:INLINE_PER_TURN]
    assert _queued(protocol) == texts[INLINE_PER_TURN:]


async def test_a_stranger_whose_bytes_wait_unread_has_spoken(protocol: GatewayWebSocketProtocol) -> None:
    """A peer is idle (droppable by ``PreAuthSockets``) only if nothing of its has arrived: a connect frame still
    in the socket, because the event loop is behind a storm of joins, means it waits on us."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        protocol.transport.sock = ours  # type: ignore[attr-defined]
        assert not protocol._has_spoken()
        theirs.sendall(masked_frame('{"type":"req","id":"c","method":"connect"}'))
        assert protocol._has_spoken()
        ours.recv(4096)  # read (by the protocol, normally): nothing waits, and no whole message was handed over
        assert not protocol._has_spoken()
