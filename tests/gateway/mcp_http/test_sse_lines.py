"""One MCP message is one SSE ``data:`` line, whatever its strings hold (found by the /mcp fuzzer: an unknown tool
named "\\u0085" came back in an error message that line readers split in two)."""

from __future__ import annotations

import json

from gateway.mcp_http.transport import _sse


def test_line_breaks_beyond_ascii_are_escaped_in_sse_data() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Unknown tool: a\u0085b\u2028c\u2029d"}}
    text = _sse(message).decode()
    lines = text.splitlines()  # splits on U+0085, U+2028 and U+2029 too, as many line readers do
    assert lines[0] == "event: message" and lines[1].startswith("data: ") and lines[2:] == [""], lines
    assert json.loads(lines[1][len("data: "):]) == message
