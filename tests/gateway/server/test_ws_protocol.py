"""``GatewayWebSocketProtocol``'s inline answers, on uvicorn's real protocol object: which complete messages are
answered on the spot and which go to the app's queue (the wire path is in tests/gateway/dispatch)."""

from __future__ import annotations

from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from gateway.server.ws_protocol import ANSWER_INLINE, INLINE_MAX_BYTES, GatewayWebSocketProtocol


async def _app(_scope: Any, _receive: Any, _send: Any) -> None:
    return None


class _Transport:
    """What the protocol calls on its transport when it queues a message (it stops reading until the app asks)."""

    def pause_reading(self) -> None:
        pass


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


def _queued(proto: GatewayWebSocketProtocol) -> list[str]:
    out = []
    while not proto.queue.empty():
        out.append(proto.queue.get_nowait()["text"])  # type: ignore[typeddict-item]
    return out


async def test_a_message_is_answered_inline_only_when_nothing_earlier_waits_for_the_app(
        protocol: GatewayWebSocketProtocol) -> None:
    answered: list[str] = []

    def answer(text: str) -> bool:
        if text.startswith("inline"):
            answered.append(text)
            return True
        return False

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
