"""What every fuzz test of the gateway's WebSocket RPC checks: answers are well-formed, the gateway lives.

Shared by ``tests/gateway/server/test_fuzz.py`` (random frames) and the fuzzers of each method's params, the config
writes, A2UI and chat input: one closed set of error codes, one shape of answer, one ``health`` check after.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

__all__ = ["ERROR_CODES", "check_response", "fresh_health", "huge_text", "int64_values", "json_scalars",
           "json_values"]

ERROR_CODES = {"INVALID_REQUEST", "FORBIDDEN", "UNAVAILABLE", "NOT_PAIRED", "NOT_LINKED", "APPROVAL_NOT_FOUND",
               "AGENT_TIMEOUT"}
"""The closed set of error codes a gateway answer may carry (``gateway.protocol.ErrorCode``)."""

json_scalars = (st.none() | st.booleans() | st.integers()
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)
int64_scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
                 | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40))
int64_values = st.recursive(int64_scalars, lambda inner: st.lists(inner, max_size=4)
                            | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)
"""JSON values whose integers fit 64 bits: what a client sending with orjson (``RawClient``) can carry."""
huge_text = st.builds(lambda ch, n: ch * n, st.characters(codec="utf-8"), st.integers(1, 50_000))


def check_response(res: dict[str, Any]) -> None:
    """A response frame: ``ok`` true with a payload, or an error of a known code with a message."""
    assert res["type"] == "res" and isinstance(res["ok"], bool), res
    assert set(res) <= {"type", "id", "ok", "payload", "error"}, res
    if not res["ok"]:
        err = res["error"]
        assert err["code"] in ERROR_CODES, err
        assert isinstance(err["message"], str) and err["message"], err
        assert set(err) <= {"code", "message", "details", "retryable", "retryAfterMs"}, err


async def fresh_health(gw: GatewayProcess) -> dict[str, Any]:
    """``health`` on a new connection: the gateway still accepts and answers after what it was sent."""
    assert gw.proc is not None and gw.proc.poll() is None, gw.output()
    client = await operator(gw.url, gw.token or "")
    try:
        return await client.call("health")
    finally:
        await client.close()
