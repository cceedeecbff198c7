"""The OpenClaw-compatible gateway wire protocol, without I/O.

Everything here works on plain values: text frames in, frame dicts out. The
WebSocket driver (``gateway.server.app``) and the clients (``mcp_shim.client``, the
CLI) feed it. It imports only the standard library and orjson, so the MCP shim
(which starts for every agent run) can import it for almost nothing. The
pydantic models of the handshake live in ``gateway.protocol.connect_params``.

Error tree (mapped to wire codes in exactly one place, ``RpcError.shape``)::

    RpcError                      code = the class's ``code``
    ├── InvalidRequest            INVALID_REQUEST  (bad frame, unknown method, bad params)
    │   └── InvalidFrame          INVALID_REQUEST  (not a request frame; carries the id to answer with)
    ├── Forbidden                 FORBIDDEN        (missing scope, wrong role)
    ├── Unavailable               UNAVAILABLE      (not ready, not built yet, internal failure)
    ├── NotPaired                 NOT_PAIRED
    ├── NotLinked                 NOT_LINKED
    ├── ApprovalNotFound          APPROVAL_NOT_FOUND
    └── AgentTimeout              AGENT_TIMEOUT
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "CLOSE_INTERNAL",
    "CLOSE_POLICY",
    "CLOSE_PROTOCOL",
    "CLOSE_RESTART",
    "CLOSE_TOO_BIG",
    "MAX_PREAUTH_FRAME_BYTES",
    "PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOLS",
    "AgentTimeout",
    "ApprovalNotFound",
    "ErrorCode",
    "Forbidden",
    "InvalidFrame",
    "InvalidRequest",
    "NotLinked",
    "NotPaired",
    "RequestFrame",
    "RpcError",
    "Unavailable",
    "close_reason",
    "decode",
    "describe_validation_error",
    "encode",
    "error_frame",
    "event_frame",
    "ok_frame",
    "parse_request",
    "request_frame",
]

PROTOCOL_VERSION = 4
"""The protocol version we speak (the ``openclaw`` npm package 2026.9.x speaks 4)."""

SUPPORTED_PROTOCOLS = (3, 4)
"""Versions we accept: node hosts and probes may still ask for 3."""

MAX_PREAUTH_FRAME_BYTES = 64 * 1024
"""Frames before a successful ``connect`` are capped, so unauthenticated peers cannot make us buffer much."""

# WebSocket close codes the gateway uses (RFC 6455 section 7.4.1).
CLOSE_PROTOCOL = 1002
"""The client speaks no protocol version we do."""
CLOSE_POLICY = 1008
"""Refused: bad handshake, bad credentials, slow consumer."""
CLOSE_TOO_BIG = 1009
"""A frame over the limit (before ``connect``: ``MAX_PREAUTH_FRAME_BYTES``)."""
CLOSE_INTERNAL = 1011
"""The gateway failed; details stay in its log."""
CLOSE_RESTART = 1012
"""The gateway restarts in place: reconnect (after a ``shutdown`` event)."""


class ErrorCode(StrEnum):
    INVALID_REQUEST = "INVALID_REQUEST"
    FORBIDDEN = "FORBIDDEN"
    UNAVAILABLE = "UNAVAILABLE"
    NOT_PAIRED = "NOT_PAIRED"
    NOT_LINKED = "NOT_LINKED"
    APPROVAL_NOT_FOUND = "APPROVAL_NOT_FOUND"
    AGENT_TIMEOUT = "AGENT_TIMEOUT"


class RpcError(Exception):
    """An error that is answered to the client as an error frame."""

    code: ErrorCode = ErrorCode.UNAVAILABLE

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retryable: bool | None = None,
        retry_after_ms: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms

    def shape(self) -> dict[str, Any]:
        """The ``error`` object of a response frame."""
        out: dict[str, Any] = {"code": str(self.code), "message": self.message}
        if self.details is not None:
            out["details"] = self.details
        if self.retryable is not None:
            out["retryable"] = self.retryable
        if self.retry_after_ms is not None:
            out["retryAfterMs"] = self.retry_after_ms
        return out

    @classmethod
    def from_shape(cls, shape: dict[str, Any]) -> RpcError:
        """Rebuild an error received from the wire (used by clients)."""
        code = shape.get("code", "UNAVAILABLE")
        klass = _BY_CODE.get(code, RpcError)
        err = klass(
            str(shape.get("message", code)),
            details=shape.get("details"),
            retryable=shape.get("retryable"),
            retry_after_ms=shape.get("retryAfterMs"),
        )
        if klass is RpcError:
            err.code = code  # keep an unknown code as it came
        return err


class InvalidRequest(RpcError):
    code = ErrorCode.INVALID_REQUEST


class InvalidFrame(InvalidRequest):
    """A JSON text frame that is not a well-formed request.

    ``frame_id`` is what the answer's ``id`` should be: the frame's own id when it was a JSON
    scalar (even a number, as OpenClaw echoes it), else ``"invalid"``, so a client can still
    correlate the refusal with what it sent.
    """

    def __init__(self, message: str, *, frame_id: Any = "invalid") -> None:
        super().__init__(message)
        self.frame_id = frame_id


class Forbidden(RpcError):
    code = ErrorCode.FORBIDDEN


class Unavailable(RpcError):
    code = ErrorCode.UNAVAILABLE


class NotPaired(RpcError):
    code = ErrorCode.NOT_PAIRED


class NotLinked(RpcError):
    code = ErrorCode.NOT_LINKED


class ApprovalNotFound(RpcError):
    code = ErrorCode.APPROVAL_NOT_FOUND


class AgentTimeout(RpcError):
    code = ErrorCode.AGENT_TIMEOUT


_BY_CODE: dict[str, type[RpcError]] = {
    k.code.value: k
    for k in (InvalidRequest, Forbidden, Unavailable, NotPaired, NotLinked, ApprovalNotFound, AgentTimeout)
}


# ---------------------------------------------------------------------------
# codec


def encode(frame: Any) -> str:
    """Serialize a frame to JSON text (orjson; datetimes and pydantic models become JSON)."""
    return orjson.dumps(frame, default=_default).decode()


def decode(text: str | bytes) -> Any:
    """Parse JSON text; raises ``ValueError`` on malformed input."""
    return orjson.loads(text)


def _default(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)  # pydantic models, without importing pydantic here
    if dump is not None:
        return dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def request_frame(id: str, method: str, params: Any = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "req", "id": id, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def ok_frame(id: str, payload: Any = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "res", "id": id, "ok": True}
    if payload is not None:
        frame["payload"] = payload
    return frame


def error_frame(id: Any, error: RpcError) -> dict[str, Any]:
    return {"type": "res", "id": id, "ok": False, "error": error.shape()}


def event_head(event: str, payload: Any = None) -> str:
    """An event frame encoded up to its sequence number: ``head + str(seq) + "}"`` is the whole frame.

    A broadcast encodes its payload once this way and each connection only appends its own ``seq``,
    instead of re-encoding the same payload for every socket.
    """
    body = encode(event_frame(event, payload))
    return body[:-1] + ',"seq":'


def event_frame(event: str, payload: Any = None, seq: int | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "event", "event": event}
    if payload is not None:
        frame["payload"] = payload
    if seq is not None:
        frame["seq"] = seq
    return frame


# ---------------------------------------------------------------------------
# request frames


@dataclass(frozen=True, slots=True)
class RequestFrame:
    """A validated ``req`` frame."""

    id: str
    method: str
    params: Any = None


_REQ_KEYS = frozenset({"type", "id", "method", "params"})
_MAX_METHOD_CHARS = 256


def _echo_id(raw_id: Any) -> Any:
    if isinstance(raw_id, str | int | float | bool) and raw_id != "":
        return raw_id
    return "invalid"


def parse_request(text: str | bytes) -> RequestFrame:
    """Parse one text frame into a request.

    Frames are closed objects (unknown keys are refused), ids are non-empty strings.

    Raises:
        ValueError: the text is not JSON (the caller logs and ignores it, as OpenClaw does).
        InvalidFrame: JSON, but not a well-formed request frame; its ``frame_id`` is the id to answer with.
    """
    try:
        raw = decode(text)
    except orjson.JSONDecodeError as exc:
        if "depth limit" not in str(exc):
            raise
        # JSON, but nested past orjson's 1024 levels: answered (naming the id if we can find it), not ignored.
        raise InvalidFrame(f"invalid request frame: nests deeper than {MAX_FRAME_DEPTH} levels",
                           frame_id=_echo_id(_shallow_id(text))) from None
    if type(raw) is not dict:
        raise InvalidFrame("invalid request frame: at root: must be object")
    frame_id = raw.get("id")
    method = raw.get("method")
    # Micro-optimization: the well-formed case is checked first and in one expression.
    if (
        raw.get("type") == "req"
        and type(frame_id) is str
        and frame_id
        and type(method) is str
        and method
        and len(method) <= _MAX_METHOD_CHARS
        and len(raw) <= 4
        and _REQ_KEYS.issuperset(raw)
    ):
        return RequestFrame(frame_id, method, raw.get("params"))
    if raw.get("type") != "req":
        problem = "at /type: must be equal to constant 'req'"
    elif "id" not in raw:
        problem = "at root: must have required property 'id'"
    elif not isinstance(frame_id, str):
        problem = "at /id: must be string"
    elif not frame_id:
        problem = "at /id: must NOT have fewer than 1 characters"
    elif "method" not in raw:
        problem = "at root: must have required property 'method'"
    elif not isinstance(method, str):
        problem = "at /method: must be string"
    elif not method:
        problem = "at /method: must NOT have fewer than 1 characters"
    elif len(method) > _MAX_METHOD_CHARS:
        problem = f"at /method: must NOT have more than {_MAX_METHOD_CHARS} characters"
    else:
        extra = sorted(set(raw) - _REQ_KEYS)[0]
        problem = f"at root: unexpected property '{_clip(extra, 64)}'"
    raise InvalidFrame(f"invalid request frame: {problem}", frame_id=_echo_id(frame_id))


MAX_FRAME_DEPTH = 1024
"""How deep a frame may nest: orjson's limit (OpenClaw's ``JSON.parse`` has none that matters)."""


def _shallow_id(text: str | bytes, scan_limit: int = 1 << 20) -> Any:
    """The top-level ``"id"`` of a frame too deep to decode, found by a scan of its first MiB (None if absent)."""
    if isinstance(text, bytes):
        text = text[:scan_limit].decode(errors="replace")
    text = text[:scan_limit]
    decoder = json.JSONDecoder()
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            try:
                key, i = decoder.raw_decode(text, i)
            except ValueError:
                return None
            if depth == 1 and key == "id":
                rest = text[i:i + 1100].lstrip()
                if rest.startswith(":") and rest[1:].lstrip().startswith('"'):
                    value = rest[1:].lstrip()
                    try:
                        return decoder.raw_decode(value)[0]
                    except ValueError:
                        return None
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        i += 1
    return None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def close_reason(text: str) -> str:
    """A WebSocket close reason: at most 123 bytes of UTF-8, cut on a character boundary."""
    raw = text.encode()
    if len(raw) <= 123:
        return text
    return raw[:123].decode("utf-8", "ignore")


# ---------------------------------------------------------------------------
# validation messages in the style OpenClaw's AJV validators use


_TYPE_WORDS = {
    "int_type": "must be integer",
    "int_parsing": "must be integer",
    "int_from_float": "must be integer",
    "float_type": "must be number",
    "float_parsing": "must be number",
    "string_type": "must be string",
    "bool_type": "must be boolean",
    "bool_parsing": "must be boolean",
    "dict_type": "must be object",
    "model_type": "must be object",
    "model_attributes_type": "must be object",
    "list_type": "must be array",
    "none_required": "must be null",
}


def _pointer(loc: tuple[int | str, ...]) -> str:
    # Parts can be keys the client chose: clip them so an error never echoes a huge key back.
    return "/" + "/".join(_clip(str(p), 64) for p in loc) if loc else "root"


def describe_validation_error(exc: ValidationError) -> str:
    """Turn a pydantic error into ``at /field: must be integer`` (first problem, then a count)."""
    errors = exc.errors(include_url=False)
    parts: list[str] = []
    for err in errors[:3]:
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        kind = err["type"]
        if kind == "missing" and loc:
            parts.append(f"at {_pointer(loc[:-1])}: must have required property '{_clip(str(loc[-1]), 64)}'")
        elif kind == "extra_forbidden" and loc:
            parts.append(f"at {_pointer(loc[:-1])}: unexpected property '{_clip(str(loc[-1]), 64)}'")
        elif kind in _TYPE_WORDS:
            parts.append(f"at {_pointer(loc)}: {_TYPE_WORDS[kind]}")
        elif kind == "value_error":  # a model's own check: its message already says what is wrong
            parts.append(f"at {_pointer(loc)}: {str(err['msg']).removeprefix('Value error, ')}")
        else:
            parts.append(f"at {_pointer(loc)}: {err['msg'][0].lower()}{err['msg'][1:]}")
    if len(errors) > 3:
        parts.append(f"and {len(errors) - 3} more")
    return "; ".join(parts)
