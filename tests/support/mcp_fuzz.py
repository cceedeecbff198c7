"""Random MCP JSON-RPC input for the fuzz tests of the shim's stdio and the gateway's ``/mcp`` endpoint.

``messages(tools)`` draws one line and the id its one answer must carry: garbage bytes, JSON that is not a
request, and requests in both protocol eras (the handshake era's methods; 2026-07-28's ``_meta`` envelope,
right, wrong and half-filled) with good and bad ids and params of every type. ``tools/call`` names every
listed tool and unknown ones; tools with side effects only ever get arguments that are not an object (so
validation refuses them before anything happens), the read-only ones any JSON.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import strategies as st

__all__ = ["messages", "well_formed"]

MODERN = "2026-07-28"
META = "io.modelcontextprotocol/protocolVersion"
READ_ONLY_TOOLS = ["agents_list", "sessions_list", "session_status", "sessions_history"]
"""Tools that only read: they get random object arguments too, so some calls reach the gateway."""
_ids = itertools.count()

json_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                | st.text(max_size=30))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=10)
not_objects = st.lists(json_scalars, max_size=3) | json_scalars



def _often(draw: st.DrawFn) -> bool:
    """True nine times in ten. (Hypothesis favours small integers, so the usual case is the small one.)"""
    return draw(st.integers(0, 9)) < 9


def _envelope(draw: st.DrawFn) -> dict[str, Any] | None:
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return None
    if kind == 1:
        return {META: MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    if kind == 2:
        return {META: draw(st.sampled_from([MODERN, "2025-11-25", "1999-01-01", ""]) | json_scalars)}
    return draw(st.dictionaries(st.text(max_size=40), json_values, max_size=3))


@st.composite
def messages(draw: st.DrawFn, tools: list[str]) -> tuple[bytes, Any | None]:
    """A line for the shim, and the id its one answer must carry (None: no answer, or one with id null)."""
    shape = draw(st.integers(0, 19))
    if shape == 19:
        return draw(st.binary(max_size=60).filter(lambda b: b"\n" not in b and b"\r" not in b)), None
    if shape == 18:
        keys = st.text(max_size=10).map(lambda k: "k" + k)  # never "method" or "id": not a request
        return json.dumps(draw(not_objects | st.dictionaries(keys, json_values, max_size=4))).encode(), None
    method = draw(st.sampled_from(["initialize", "ping", "tools/list", "tools/call", "server/discover",
                                   "notifications/initialized", "notifications/cancelled", "resources/list",
                                   "prompts/get"]) | st.text(max_size=20))
    version = "2.0" if _often(draw) else draw(st.just("1.0") | json_scalars)  # mostly well addressed
    message: dict[str, Any] = {"jsonrpc": version, "method": method}
    params: Any
    if method == "tools/call":
        name = draw(st.sampled_from(tools) | st.text(max_size=20))
        args = draw(json_values) if name in READ_ONLY_TOOLS else draw(not_objects)
        params = {"name": name, "arguments": args}
        if draw(st.booleans()):
            params["_meta"] = {"progressToken": draw(st.text(max_size=8) | st.integers())}
    elif method == "initialize":
        params = {"protocolVersion": draw(st.sampled_from(["2025-11-25", "2025-06-18", "2024-11-05", MODERN])
                                          | json_scalars)}
    else:
        objects = st.dictionaries(st.text(max_size=10), json_values, max_size=3)
        params = draw(objects | st.none()) if _often(draw) else draw(not_objects)
    envelope = _envelope(draw)
    if isinstance(params, dict) and envelope is not None:
        params = {**params, "_meta": {**params.get("_meta", {}), **envelope}}
    if params is not None:
        message["params"] = params
    has_id = _often(draw)
    expect: Any | None = None
    if has_id:
        good = _often(draw)
        message["id"] = f"f{next(_ids)}-{draw(st.text(max_size=6))}" if good else \
            draw(st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.lists(json_scalars))
        expect = message["id"] if good else None
    return json.dumps(message).encode(), expect


def well_formed(answer: dict[str, Any]) -> None:
    if "error" in answer:
        error = answer["error"]
        assert isinstance(error, dict) and isinstance(error.get("code"), int), answer
        assert isinstance(error.get("message"), str) and error["message"], answer
        assert "result" not in answer, answer
    else:
        assert "result" in answer and isinstance(answer["result"], dict), answer


