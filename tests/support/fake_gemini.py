"""A loopback fake of the Gemini API (``models/<m>:streamGenerateContent?alt=sse`` and ``:generateContent``).

Scripted by the conversation like ``fake_anthropic``: ``CALL <tool> <json>`` in the user text makes
the first answer a ``functionCall`` of the offered function whose name ends with ``<tool>``; after
its ``functionResponse`` comes back the answer is ``THEN <text>`` if the prompt has one, else
``done: <response>``; ``REPLY <text>`` answers ``<text>``; else ``ok``. Requests that ask for JSON
(the CLI's own helper calls, e.g. "who speaks next") get ``{}``-shaped JSON text. Every model
request is kept in ``requests`` (with the model name under ``_model``) and every path in ``paths``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support.fake_http import FakeHTTPServer, Reply, json_reply, script, sse_data

__all__ = ["FakeGemini"]


def _is_user_text(content: dict[str, Any]) -> bool:
    return content.get("role", "user") == "user" and any("text" in p for p in content.get("parts") or [])


def _texts(contents: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for c in contents if c.get("role", "user") == "user"
                     for p in c.get("parts") or [] if isinstance(p.get("text"), str))


def _functions(body: dict[str, Any]) -> list[str]:
    return [f.get("name", "") for t in body.get("tools") or [] for f in t.get("functionDeclarations") or []]


def plan(body: dict[str, Any]) -> dict[str, Any]:
    """The model turn for one request: ``{"text": ...}`` or ``{"call": name, "args": {...}}``."""
    contents = body.get("contents") or []
    cfg = body.get("generationConfig") or {}
    if cfg.get("responseMimeType") == "application/json" or cfg.get("responseJsonSchema") or cfg.get("responseSchema"):
        return {"text": json.dumps({"reasoning": "the model answered; the user speaks next",
                                    "next_speaker": "user", "model_choice": "flash"})}
    starts = [i for i, c in enumerate(contents) if _is_user_text(c)]
    turn = contents[starts[-1]:] if starts else contents  # this turn only: a resumed session replays earlier ones
    responses = [p["functionResponse"] for c in turn for p in c.get("parts") or [] if "functionResponse" in p]
    result = None
    if responses:
        out = responses[-1].get("response")
        result = out if isinstance(out, str) else json.dumps(out)
    step = script(_texts(turn), _functions(body), result)
    return {"call": step["tool"], "args": json.loads(step["args"])} if "tool" in step else step


def _usage(n_out: int) -> dict[str, int]:
    return {"promptTokenCount": 120, "candidatesTokenCount": n_out, "totalTokenCount": 120 + n_out,
            "cachedContentTokenCount": 20}


def _chunks(step: dict[str, Any], model: str) -> list[dict[str, Any]]:
    """The streamed ``GenerateContentResponse`` chunks; their concatenation is the whole answer."""
    base = {"modelVersion": model, "responseId": "fake-resp"}
    if "call" in step:
        part = {"functionCall": {"name": step["call"], "args": step["args"]}}
        return [{**base, "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP",
                                         "index": 0}], "usageMetadata": _usage(10)}]
    text = step["text"]
    cut = max(1, len(text) // 2)
    first = {**base, "candidates": [{"content": {"role": "model", "parts": [{"text": text[:cut]}]}, "index": 0}]}
    last = {**base, "candidates": [{"content": {"role": "model", "parts": [{"text": text[cut:]}]},
                                    "finishReason": "STOP", "index": 0}], "usageMetadata": _usage(8)}
    return [first, last] if text[cut:] else [{**last, "candidates": [{**last["candidates"][0], "content": {
        "role": "model", "parts": [{"text": text}]}}]}]


def _merge(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    last = chunks[-1]
    return {**last, "candidates": [{**last["candidates"][0], "content": {"role": "model", "parts": parts}}]}


class FakeGemini(FakeHTTPServer):
    """``with FakeGemini() as api:`` then ``GOOGLE_GEMINI_BASE_URL=api.url`` and any ``GEMINI_API_KEY``."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []

    def respond(self, method: str, path: str, raw: bytes) -> Reply | None:
        not_found = json_reply({"error": {"code": 404, "message": f"no route {path}", "status": "NOT_FOUND"}}, 404)
        if method == "GET":
            return json_reply(b'{"models": []}') if path.split("?")[0].endswith("/models") else not_found
        if method != "POST":
            return None
        m = re.search(r"/models/([^/:]+):(\w+)", path)
        if not m:
            return not_found
        model, action = m.groups()
        body = json.loads(raw or b"{}")
        if action == "countTokens":
            return json_reply(b'{"totalTokens": 100}')
        if action not in ("generateContent", "streamGenerateContent"):
            return not_found
        self.record(self.requests, {**body, "_model": model, "_action": action})
        chunks = _chunks(plan(body), model)
        if action == "generateContent":
            return json_reply(_merge(chunks))
        return 200, "".join(sse_data(c, "\r\n\r\n") for c in chunks).encode(), "text/event-stream"

    def model_requests(self) -> list[dict[str, Any]]:
        """The conversation requests (those that offer tools), not the CLI's helper calls."""
        with self._lock:
            return [r for r in self.requests if r.get("tools")]
