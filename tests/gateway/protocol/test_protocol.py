"""The protocol core on plain values: no server, no sockets, no event loop."""

from __future__ import annotations

import orjson
import pytest
from pydantic import Field, ValidationError

from gateway.dispatch.dispatcher import ADMIN, APPROVALS, PAIRING, READ, WRITE, Params, grants
from gateway.protocol import (
    AgentTimeout,
    ApprovalNotFound,
    ErrorCode,
    Forbidden,
    InvalidFrame,
    InvalidRequest,
    NotLinked,
    NotPaired,
    RpcError,
    Unavailable,
    close_reason,
    decode,
    describe_validation_error,
    encode,
    error_frame,
    event_frame,
    ok_frame,
    parse_request,
    request_frame,
)
from gateway.protocol.connect_params import ConnectParams


def _frame_error(frame: object) -> InvalidFrame:
    with pytest.raises(InvalidFrame) as info:
        parse_request(orjson.dumps(frame))
    return info.value


# -- frames ------------------------------------------------------------------------------------


def test_well_formed_request_parses() -> None:
    frame = parse_request('{"type":"req","id":"a1","method":"health","params":{"x":1}}')
    assert (frame.id, frame.method, frame.params) == ("a1", "health", {"x": 1})
    assert parse_request(b'{"type":"req","id":"a","method":"m"}').params is None


def test_non_json_is_a_value_error_not_an_rpc_error() -> None:
    for text in ("not json", "{", "", "\x00", '{"a":1}}'):
        with pytest.raises(ValueError):
            parse_request(text)


@pytest.mark.parametrize(
    ("frame", "message", "echo"),
    [
        ([1, 2], "at root: must be object", "invalid"),
        ("req", "at root: must be object", "invalid"),
        ({"type": "res", "id": "a", "method": "m"}, "at /type: must be equal to constant 'req'", "a"),
        ({"type": "req", "method": "m"}, "at root: must have required property 'id'", "invalid"),
        ({"type": "req", "id": 7, "method": "m"}, "at /id: must be string", 7),
        ({"type": "req", "id": 2.5, "method": "m"}, "at /id: must be string", 2.5),
        ({"type": "req", "id": ["x"], "method": "m"}, "at /id: must be string", "invalid"),
        ({"type": "req", "id": None, "method": "m"}, "at /id: must be string", "invalid"),
        ({"type": "req", "id": "", "method": "m"}, "at /id: must NOT have fewer than 1 characters", "invalid"),
        ({"type": "req", "id": "a"}, "at root: must have required property 'method'", "a"),
        ({"type": "req", "id": "a", "method": 3}, "at /method: must be string", "a"),
        ({"type": "req", "id": "a", "method": ""}, "at /method: must NOT have fewer than 1 characters", "a"),
        ({"type": "req", "id": "a", "method": "m" * 300}, "at /method: must NOT have more than 256 characters", "a"),
        ({"type": "req", "id": "a", "method": "m", "extra": 1}, "at root: unexpected property 'extra'", "a"),
    ],
)
def test_malformed_frames_name_the_problem_and_the_id_to_answer(frame: object, message: str, echo: object) -> None:
    err = _frame_error(frame)
    assert err.code == ErrorCode.INVALID_REQUEST
    assert err.message == f"invalid request frame: {message}"
    assert err.frame_id == echo
    assert error_frame(err.frame_id, err)["id"] == echo


def test_huge_unexpected_key_is_clipped_in_the_message() -> None:
    err = _frame_error({"type": "req", "id": "a", "method": "m", "k" * 10_000: 1})
    assert len(err.message) < 200


def test_frame_builders() -> None:
    assert request_frame("1", "health") == {"type": "req", "id": "1", "method": "health"}
    assert request_frame("1", "m", {"a": 1})["params"] == {"a": 1}
    assert ok_frame("1") == {"type": "res", "id": "1", "ok": True}
    assert ok_frame("1", {"a": 1})["payload"] == {"a": 1}
    assert ok_frame("1", [])["payload"] == []  # an empty payload is still a payload
    assert event_frame("tick", {"ts": 1}, 5) == {"type": "event", "event": "tick", "payload": {"ts": 1}, "seq": 5}
    assert event_frame("x") == {"type": "event", "event": "x"}


def test_codec_round_trip_and_pydantic_models() -> None:
    class M(Params):
        a: int
        b: str | None = None

    text = encode({"m": M(a=1), "s": {1}, "t": (1, 2), "u": "ü"})
    assert decode(text) == {"m": {"a": 1}, "s": [1], "t": [1, 2], "u": "ü"}
    with pytest.raises(TypeError):
        encode({"x": object()})


# -- errors ------------------------------------------------------------------------------------


def test_error_shapes_and_codes() -> None:
    err = Unavailable("busy", details={"code": "X"}, retryable=True, retry_after_ms=250)
    assert err.shape() == {"code": "UNAVAILABLE", "message": "busy", "details": {"code": "X"},
                           "retryable": True, "retryAfterMs": 250}
    assert InvalidRequest("bad").shape() == {"code": "INVALID_REQUEST", "message": "bad"}
    expected = {
        InvalidRequest: "INVALID_REQUEST", Forbidden: "FORBIDDEN", Unavailable: "UNAVAILABLE",
        NotPaired: "NOT_PAIRED", NotLinked: "NOT_LINKED", ApprovalNotFound: "APPROVAL_NOT_FOUND",
        AgentTimeout: "AGENT_TIMEOUT",
    }
    for klass, code in expected.items():
        assert klass("m").shape()["code"] == code
        assert isinstance(RpcError.from_shape(klass("m").shape()), klass)
    frame = error_frame("9", Forbidden("missing scope: operator.admin"))
    assert frame == {"type": "res", "id": "9", "ok": False,
                     "error": {"code": "FORBIDDEN", "message": "missing scope: operator.admin"}}


def test_from_shape_keeps_unknown_codes_and_fields() -> None:
    err = RpcError.from_shape({"code": "SOMETHING_NEW", "message": "m", "retryAfterMs": 5, "details": {"a": 1}})
    assert type(err) is RpcError
    assert err.shape() == {"code": "SOMETHING_NEW", "message": "m", "details": {"a": 1}, "retryAfterMs": 5}


def test_close_reason_fits_the_websocket_limit() -> None:
    assert close_reason("short") == "short"
    cut = close_reason("é" * 100)
    assert len(cut.encode()) <= 123 and cut == "é" * 61


# -- validation messages -----------------------------------------------------------------------


class _Sample(Params):
    limit: int = 10
    name: str = Field(min_length=1)
    nested: dict[str, int] = Field(default_factory=dict)
    flag: bool = False


def _describe(data: object) -> str:
    with pytest.raises(ValidationError) as info:
        _Sample.model_validate(data)
    return describe_validation_error(info.value)


def test_validation_messages_name_the_field() -> None:
    assert _describe({"name": "a", "limit": "ten"}) == "at /limit: must be integer"
    assert _describe({}) == "at root: must have required property 'name'"
    assert _describe({"name": "a", "bogus": 1}) == "at root: unexpected property 'bogus'"
    assert _describe({"name": "a", "nested": {"k": "x"}}) == "at /nested/k: must be integer"
    assert _describe({"name": "a", "flag": "maybe"}) == "at /flag: must be boolean"
    assert _describe({"name": ""}).startswith("at /name: string should have at least 1 character")
    assert _describe([1]) == "at root: must be object"


def test_validation_messages_are_bounded() -> None:
    many = {f"x{i}": i for i in range(10)} | {"name": "a"}
    text = _describe(many)
    assert text.endswith("and 7 more") and text.count("unexpected property") == 3
    long_key = _describe({"name": "a", "nested": {"k" * 5000: "x"}})
    assert len(long_key) < 150


def test_connect_params_validation_message() -> None:
    with pytest.raises(ValidationError) as info:
        ConnectParams.model_validate({"minProtocol": 3, "maxProtocol": 4, "client": {"id": "t"}})
    assert describe_validation_error(info.value) == "at /client: must have required property 'mode'"


# -- scopes ------------------------------------------------------------------------------------


def test_scope_implications() -> None:
    assert grants(frozenset({ADMIN}), READ) and grants(frozenset({ADMIN}), PAIRING)
    assert grants(frozenset({ADMIN}), APPROVALS) and grants(frozenset({ADMIN}), WRITE)
    assert grants(frozenset({WRITE}), READ)
    assert not grants(frozenset({READ}), WRITE)
    assert not grants(frozenset({WRITE}), ADMIN)
    assert not grants(frozenset({WRITE}), PAIRING)
    assert not grants(frozenset({PAIRING}), READ)
    assert grants(frozenset({APPROVALS}), APPROVALS) and not grants(frozenset(), READ)
