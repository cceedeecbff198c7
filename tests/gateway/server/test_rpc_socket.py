"""``RpcSocket``, our driver of the RPC WebSocket over websockets' sans-I/O ``ServerProtocol``, fed real bytes on a
recording transport: the hand-off of other paths to uvicorn, inline answers and their order, the per-turn budget,
the pre-``connect`` frame cap and its lift at a message boundary, and hostile frames answered exactly as websockets
(and uvicorn, for UTF-8) answer them. The wire path is in tests/gateway/dispatch and tests/gateway/server."""

from __future__ import annotations

import ast
import asyncio
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState
from websockets.protocol import State
from websockets.server import ServerProtocol

from gateway.protocol import MAX_PREAUTH_FRAME_BYTES
from gateway.server.rpc_socket import INLINE_MAX_BYTES, INLINE_PER_TURN, RpcSocket, rpc_socket_class
from tests.support.ws import masked_frame

UPGRADE = ("GET {path} HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n{extra}"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
FULL_SIZE = 1 << 20


class _Transport:
    """What the socket calls on its transport, recorded."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.sock: socket.socket | None = None
        self.paused = False
        self.closed = False
        self.protocol: Any = None

    def get_extra_info(self, name: str) -> Any:
        return {"socket": self.sock, "peername": ("127.0.0.1", 50000)}.get(name)

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    abort = close

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def get_write_buffer_size(self) -> int:
        return 0

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol


class _Endpoint:
    rpc_paths = frozenset({"/", "/ws"})

    def __init__(self) -> None:
        self.sockets: list[RpcSocket] = []

    def origin_ok(self, origin: str | None, host: str | None, *, path: str, remote: str) -> bool:
        return origin != "http://evil.example"

    async def serve(self, sock: RpcSocket) -> None:
        self.sockets.append(sock)
        await asyncio.Event().wait()  # the app holds the socket open


async def _app(_scope: Any, _receive: Any, _send: Any) -> None:
    return None


def _socket(endpoint: _Endpoint | None = None) -> tuple[RpcSocket, _Transport]:
    config = uvicorn.Config(_app, lifespan="off", ws_max_size=FULL_SIZE)
    config.load()
    sock = rpc_socket_class(endpoint or _Endpoint())(config, ServerState(), {})
    transport = _Transport()
    sock.connection_made(transport)  # type: ignore[arg-type]
    return sock, transport


@pytest.fixture(autouse=True)
async def _stop_endpoints() -> Any:
    yield
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task():
            task.cancel()


def _long_frame(payload: bytes, opcode: int = 0x81) -> bytes:
    """A masked frame with a 64-bit length (``masked_frame`` writes up to 16 bits)."""
    key = os.urandom(4)
    return (bytes((opcode, 0xFF)) + len(payload).to_bytes(8, "big") + key
            + bytes(b ^ key[i % 4] for i, b in enumerate(payload)))


@pytest.fixture
async def opened() -> tuple[RpcSocket, _Transport]:
    sock, transport = _socket()
    sock.data_received(UPGRADE.format(path="/", extra="").encode())
    assert transport.written[0].startswith(b"HTTP/1.1 101 ")
    transport.written.clear()
    return sock, transport


def _answerer() -> tuple[list[str], Callable[[str], bool]]:
    """An inline answer that takes the messages starting with ``inline``, and the list of those it took."""
    answered: list[str] = []

    def answer(text: str) -> bool:
        if text.startswith("inline"):
            answered.append(text)
            return True
        return False

    return answered, answer


async def _taken(sock: RpcSocket) -> list[str]:
    """The messages queued for the app, taken as the app would."""
    out: list[str] = []
    while True:
        try:
            text = await asyncio.wait_for(sock.receive_text(), 0.01)
        except TimeoutError:
            return out
        if text is None:
            return out
        out.append(text)


async def test_another_path_is_handed_to_uvicorns_own_protocol() -> None:
    sock, transport = _socket()
    sock.data_received(UPGRADE.format(path="/mcp", extra="").encode())
    assert isinstance(transport.protocol, WebSocketsSansIOProtocol)
    assert transport.protocol.transport is transport  # it took the transport and the request
    assert transport.written == []  # nothing answered by us


async def test_a_foreign_origin_is_refused_403_and_the_endpoint_never_runs() -> None:
    endpoint = _Endpoint()
    sock, transport = _socket(endpoint)
    sock.data_received(UPGRADE.format(path="/ws", extra="Origin: http://evil.example\r\n").encode())
    await asyncio.sleep(0)
    assert transport.written[0].startswith(b"HTTP/1.1 403 ") and transport.closed
    assert endpoint.sockets == []


async def test_an_upgrade_websockets_refuses_is_answered_and_closed() -> None:
    sock, transport = _socket()
    sock.data_received(UPGRADE.format(path="/", extra="").replace("Sec-WebSocket-Version: 13", "X: y").encode())
    assert transport.written[0].startswith(b"HTTP/1.1 400 ") and transport.closed


async def test_a_message_is_answered_inline_only_when_nothing_earlier_waits_for_the_app(
        opened: tuple[RpcSocket, _Transport]) -> None:
    sock, transport = opened
    answered, answer = _answerer()
    sock.data_received(masked_frame("inline 1"))  # before the app asks for answers: it goes to the app
    assert await _taken(sock) == ["inline 1"]
    sock.answer_inline(answer)
    sock.data_received(masked_frame("inline 2"))
    assert answered == ["inline 2"] and await _taken(sock) == []
    # "inline 4" is behind "slow 3", which the app has not taken: it must not overtake it
    sock.data_received(masked_frame("slow 3") + masked_frame("inline 4"))
    assert answered == ["inline 2"] and transport.paused  # reading waits for the app
    assert await _taken(sock) == ["slow 3", "inline 4"] and not transport.paused
    large = "inline " + "x" * INLINE_MAX_BYTES  # too large to be an inline request
    sock.data_received(masked_frame("inline 5") + masked_frame(large))
    assert answered == ["inline 2", "inline 5"] and await _taken(sock) == [large]
    sock.data_received(masked_frame("inline 7") + bytes((0x89, 0x80)) + os.urandom(4) + masked_frame("inline 8"))
    assert answered[-2:] == ["inline 7", "inline 8"]  # a ping between them: websockets answered it
    assert transport.written == [b"\x8a\x00"]
    sock.answer_inline(None)  # the connection is ending
    sock.data_received(masked_frame("inline 6"))
    assert await _taken(sock) == ["inline 6"]
    assert sock.peer_spoke()


async def test_fragments_and_frames_cut_anywhere_make_the_same_messages(opened: tuple[RpcSocket, _Transport]) -> None:
    sock, _transport = opened
    answered, answer = _answerer()
    sock.answer_inline(answer)
    wire = (masked_frame("inline a") + masked_frame("inl", 0x01) + bytes((0x89, 0x80)) + os.urandom(4)
            + masked_frame("ine b", 0x80) + masked_frame("slow c") + masked_frame(b"bin", 0x82))
    for byte in wire:  # one byte per read
        sock.data_received(bytes((byte,)))
    assert answered == ["inline a", "inline b"]
    assert await _taken(sock) == ["slow c", "bin"]


async def test_inline_answers_are_bounded_per_turn_and_reading_pauses_until_the_rest_is_read(
        opened: tuple[RpcSocket, _Transport]) -> None:
    """A client pipelining small requests gets ``INLINE_PER_TURN`` answers per event loop turn: the rest of its
    read waits, with reading paused, until the loop has run its other callbacks (issue #51, item 7)."""
    sock, transport = opened
    answered, answer = _answerer()
    sock.answer_inline(answer)
    texts = [f"inline {n}" for n in range(2 * INLINE_PER_TURN + 3)]
    wire = b"".join(masked_frame(t) for t in texts)
    sock.data_received(wire[:-3])  # the last frame cut
    assert answered == texts[:INLINE_PER_TURN] and transport.paused
    await asyncio.sleep(0)  # the next turn
    assert answered == texts[:2 * INLINE_PER_TURN] and transport.paused
    sock.data_received(wire[-3:])  # read anyway: kept behind the rest
    await asyncio.sleep(0)
    assert answered == texts and not transport.paused and await _taken(sock) == []


async def test_a_strangers_big_frame_is_refused_from_its_header_and_the_cap_lifts_between_messages(
        opened: tuple[RpcSocket, _Transport]) -> None:
    sock, transport = opened
    big = _long_frame(b"x" * (MAX_PREAUTH_FRAME_BYTES + 1))
    connect = masked_frame("connect")
    rest = masked_frame(" done", 0x80)
    sock.data_received(connect + masked_frame("half", 0x01) + rest[:4])  # a fragmented message, a frame cut
    assert await _taken(sock) == ["connect"]
    sock.lift_frame_limit()  # logged in: the rest of the open message is still read under the old cap
    sock.data_received(rest[4:] + big)
    assert await _taken(sock) == ["half done", "x" * (MAX_PREAUTH_FRAME_BYTES + 1)]
    assert not transport.closed

    stranger, transport = _socket()
    stranger.data_received(UPGRADE.format(path="/", extra="").encode())
    transport.written.clear()
    stranger.data_received(big[:10])  # only its length: refused at once, payload unread
    [close] = transport.written
    assert close[0] == 0x88 and close[2:4] == (1009).to_bytes(2, "big") and transport.closed
    assert await _taken(stranger) == []


async def test_a_stranger_whose_bytes_wait_unread_has_spoken(opened: tuple[RpcSocket, _Transport]) -> None:
    """A peer is idle (droppable by ``PreAuthSockets``) only if nothing of its has arrived: a connect frame still
    in the socket, because the event loop is behind a storm of joins, means it waits on us."""
    sock, transport = opened
    ours, theirs = socket.socketpair()
    with ours, theirs:
        transport.sock = ours
        assert not sock.peer_spoke()
        theirs.sendall(masked_frame('{"type":"req","id":"c","method":"connect"}'))
        assert sock.peer_spoke()
        ours.recv(4096)  # read (by the socket, normally): nothing waits, and no whole message was handed over
        assert not sock.peer_spoke()


HOSTILE = {
    "unmasked": b"\x81\x02hi",
    "reserved bits": masked_frame(b"x", 0xC1),
    "unknown opcode": masked_frame(b"x", 0x83),
    "control frame too long": masked_frame(b"x" * 200, 0x89),
    "fragmented control frame": masked_frame(b"x", 0x09),
    "continuation with nothing open": masked_frame(b"x", 0x80),
    "new message inside a fragmented one": masked_frame(b"a", 0x01) + masked_frame(b"b"),
    "close with a bad code": masked_frame(b"\x03\xe7", 0x88),
    "close with one byte": masked_frame(b"\x03", 0x88),
    "close with a bad UTF-8 reason": masked_frame(b"\x03\xe8\xff", 0x88),
    "close": masked_frame(b"\x03\xe8bye", 0x88),
    "too big after login": b"\x81\xff" + (FULL_SIZE + 1).to_bytes(8, "big") + os.urandom(4),
    "64-bit length": b"\x81\xff" + (1 << 62).to_bytes(8, "big") + os.urandom(4),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
async def test_hostile_frames_are_answered_as_websockets_answers_them(
        name: str, opened: tuple[RpcSocket, _Transport]) -> None:
    sock, transport = opened
    answered, answer = _answerer()
    sock.lift_frame_limit()
    sock.answer_inline(answer)
    reference = ServerProtocol(state=State.OPEN, max_size=FULL_SIZE)
    reference.receive_data(HOSTILE[name])
    expected = b"".join(reference.data_to_send())
    sock.data_received(HOSTILE[name])
    assert b"".join(transport.written) == expected and expected.startswith(b"\x88")
    assert transport.closed  # the server closes the TCP connection
    assert await _taken(sock) == [] and answered == []


async def test_invalid_utf8_text_is_closed_1007_as_uvicorn_does(opened: tuple[RpcSocket, _Transport]) -> None:
    sock, transport = opened
    sock.data_received(masked_frame(b"\xff\xfe"))
    assert transport.written == [b"\x88\x02\x03\xef"] and transport.closed
    assert await sock.receive_text() is None


async def test_our_close_waits_for_the_peers_answer_and_ends_the_apps_reading(
        opened: tuple[RpcSocket, _Transport]) -> None:
    sock, transport = opened
    sock.write(["one", "two"])
    assert transport.written == [b"\x81\x03one\x81\x03two"]  # websockets framed them
    sock.close(1008, "slow consumer")
    assert transport.written[-1] == b"\x88\x0f\x03\xf0slow consumer" and not transport.closed
    assert await sock.receive_text() is None and not sock.ready()
    sock.data_received(masked_frame(b"late", 0x81))  # discarded: past our close
    sock.data_received(masked_frame(b"\x03\xf0", 0x88))  # the peer's answer: the closing handshake is done
    assert transport.closed


def test_the_server_package_reads_no_private_attribute_of_another_object() -> None:
    """No ``obj._name`` except on ``self``/``cls``, and no generator internals (``gi_*``), anywhere in
    gateway/server/: what the socket relies on is the libraries' documented surface."""
    root = Path(__file__).parents[3] / "gateway" / "server"
    found: list[str] = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute):
                continue
            name = node.attr
            # ours, or the sys module's documented _current_frames (loop_watch)
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls", "sys")
            private = name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
            if (private and not own) or name.startswith("gi_") or name == "__self__" or name == "__code__":
                found.append(f"{path.name}:{node.lineno} .{name}")
    assert found == []
