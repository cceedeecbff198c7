"""A loopback fake of the Anthropic Messages API (``POST /v1/messages``, streaming SSE or JSON).

Scripted by the conversation itself, so one server serves every turn of a test:
- the first user text contains ``CALL <tool> <json args>`` and no tool result came back yet:
  answer with a ``tool_use`` of the first offered tool whose name ends with ``<tool>``;
- otherwise answer text: ``REPLY <text>`` in the prompt answers exactly ``<text>``; after a tool
  result the answer is ``THEN <text>`` from the prompt if given, else ``done: <first 200 chars of
  the result>``; else ``ok``;
- ``SLOW <s>`` in the newest user message: answer after s seconds (a turn still under way when the next
  message arrives).
Every request body is kept in ``requests`` for assertions (and their headers in ``seen_headers``).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from tests.support.fake_http import FakeHTTPServer, Reply, json_reply, script, sse_event

__all__ = ["FakeAnthropic"]


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if block.get("type") == "text":
            out.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            out += _texts(block.get("content"))
    return out


def plan(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for one request: ``{"text": ...}`` or ``{"tool": name, "input": {...}}``."""
    msgs = body.get("messages") or []
    starts = [i for i, m in enumerate(msgs) if m.get("role") == "user" and any(
        isinstance(b, str) or b.get("type") == "text" for b in (
            [m["content"]] if isinstance(m.get("content"), str) else m.get("content") or []))]
    msgs = msgs[starts[-1]:] if starts else msgs  # this turn only: a resumed session replays earlier turns
    first = "\n".join(t for m in msgs if m.get("role") == "user" for t in _texts(m.get("content")))
    results = [b for m in msgs if m.get("role") == "user" and isinstance(m.get("content"), list)
               for b in m["content"] if b.get("type") == "tool_result"]
    names = [t.get("name", "") for t in body.get("tools") or []]
    step = script(first, names, " ".join(_texts(results[-1].get("content"))) if results else None)
    return {"tool": step["tool"], "input": json.loads(step["args"])} if "tool" in step else step


def _message(body: dict[str, Any], step: dict[str, Any], n: int) -> dict[str, Any]:
    if "tool" in step:
        content = [{"type": "tool_use", "id": f"toolu_{n:04d}", "name": step["tool"], "input": step["input"]}]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": step["text"]}], "end_turn"
    return {"id": f"msg_{n:04d}", "type": "message", "role": "assistant", "model": body.get("model", "claude"),
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0,
                      "cache_creation_input_tokens": 0}}


def _sse(msg: dict[str, Any]) -> bytes:
    start = {**msg, "content": [], "stop_reason": None, "usage": {**msg["usage"], "output_tokens": 1}}
    parts = [sse_event("message_start", {"message": start})]
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            parts.append(sse_event("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}}))
            for piece in re.findall(r"\S+\s*|\s+", block["text"]):  # word by word, as the real API streams
                parts.append(sse_event("content_block_delta", {"index": i, "delta": {"type": "text_delta",
                                                                                     "text": piece}}))
        else:
            parts.append(sse_event("content_block_start", {"index": i, "content_block": {**block, "input": {}}}))
            parts.append(sse_event("content_block_delta", {"index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
        parts.append(sse_event("content_block_stop", {"index": i}))
    parts.append(sse_event("message_delta", {"delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                             "usage": {"output_tokens": msg["usage"]["output_tokens"]}}))
    parts.append(sse_event("message_stop", {}))
    return "".join(parts).encode()


_NOT_FOUND = json_reply(b'{"type":"error","error":{"type":"not_found_error","message":"no"}}', 404)


class FakeAnthropic(FakeHTTPServer):
    """``with FakeAnthropic() as api: env ANTHROPIC_BASE_URL=api.url``."""

    headers = {"request-id": "req_fake"}

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []
        self.oauth_tokens: dict[str, Any] | None = None
        """What ``POST /v1/oauth/token`` answers (a subscription login's refresh); each request is in ``refreshes``."""
        self.refreshes: list[dict[str, Any]] = []
        self.revoked: set[str] = set()
        """Bearer tokens answered 401 (a login's access token revoked before its stated expiry)."""

    def respond(self, method: str, path: str, raw: bytes) -> Reply | None:
        if method == "HEAD":
            return 200, b"", "text/plain"
        path = path.split("?")[0]
        if method == "POST" and path.endswith("/v1/oauth/token") and self.oauth_tokens is not None:
            self.record(self.refreshes, json.loads(raw or b"{}"))
            return json_reply(self.oauth_tokens)
        if method == "POST" and path.endswith("/count_tokens"):
            return json_reply(b'{"input_tokens": 100}')
        if method != "POST" or not path.endswith("/v1/messages"):
            return _NOT_FOUND
        if self.revoked and self.bearer in self.revoked:
            return json_reply(b'{"type":"error","error":{"type":"authentication_error","message":"revoked"}}', 401)
        body = json.loads(raw or b"{}")
        newest = next((m for m in reversed(body.get("messages") or []) if m.get("role") == "user"), {})
        if slow := re.search(r"SLOW ([\d.]+)", " ".join(_texts(newest.get("content")))):
            time.sleep(float(slow.group(1)))
        msg = _message(body, plan(body), self.record(self.requests, body))
        if body.get("stream"):
            return 200, _sse(msg), "text/event-stream"
        return json_reply(msg)
