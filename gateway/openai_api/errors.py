"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``, with ``param`` naming the field.

Every refusal of the API is an ``ApiError`` raised where it is found and turned into a response in one place
(``response``). A gateway ``RpcError`` met on the way (the access model's ``Forbidden``, a method's
``InvalidRequest``) is mapped by ``from_rpc``: its ``details.field`` becomes the request field it came from.

OpenAI's SDKs retry 408, 409, 429 and 5xx answers by themselves, which for a POST that started a turn would send
the message twice: answers after which a retry would do that carry ``x-should-retry: false``.
"""

from __future__ import annotations

import math
from typing import Any

import orjson
from starlette.responses import Response

from gateway.protocol import RpcError

__all__ = ["ApiError", "error_body", "from_rpc", "response"]


class ApiError(Exception):
    """One refusal: its HTTP status and the four fields of OpenAI's error object."""

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None, retry: bool | None = None,
                 retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.retry = retry
        """``x-should-retry``: None leaves it to the client's own rules."""
        self.retry_after_s = retry_after_s


def error_body(exc: ApiError) -> dict[str, Any]:
    return {"error": {"message": exc.message, "type": exc.type, "param": exc.param, "code": exc.code}}


def response(exc: ApiError) -> Response:
    headers: dict[str, str] = {}
    if exc.retry is not None:
        headers["x-should-retry"] = "true" if exc.retry else "false"
    if exc.retry_after_s is not None:
        headers["retry-after"] = str(max(1, math.ceil(exc.retry_after_s)))
        headers["retry-after-ms"] = str(max(1, math.ceil(exc.retry_after_s * 1000)))
    if exc.status == 401:
        headers["www-authenticate"] = 'Bearer realm="remoteclaw"'
    return Response(orjson.dumps(error_body(exc)), status_code=exc.status, media_type="application/json",
                    headers=headers)


_STATUS = {"INVALID_REQUEST": 400, "FORBIDDEN": 403, "UNAVAILABLE": 503, "AGENT_TIMEOUT": 504}
_TYPES = {400: "invalid_request_error", 403: "permission_error", 404: "invalid_request_error",
          429: "rate_limit_error", 503: "server_error", 504: "timeout"}


def from_rpc(exc: RpcError, fields: dict[str, str]) -> ApiError:
    """A gateway error as the API's: ``fields`` maps the gateway method's params to the request's fields."""
    details = exc.details if isinstance(exc.details, dict) else {}
    field = details.get("field")
    param = fields.get(field, field) if isinstance(field, str) else None
    status = _STATUS.get(exc.code, 500)
    code = details.get("code") if isinstance(details.get("code"), str) else exc.code.lower()
    message = exc.message
    if isinstance(field, str) and param != field:
        message = message.replace(field, param or field, 1)
    if code == "RATE_LIMITED":
        status = 429
    return ApiError(status, message, type=_TYPES.get(status, "server_error"), param=param, code=str(code).lower(),
                    retry=exc.retryable if status >= 500 else None,
                    retry_after_s=exc.retry_after_ms / 1000 if exc.retry_after_ms else None)
