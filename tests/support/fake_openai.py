"""A loopback fake of the OpenAI Responses API (``POST /v1/responses``, streaming SSE), for Codex, and of
Chat Completions (``POST /v1/chat/completions``, streaming or not), for OpenAI-compatible clients like OpenCode.

Scripted by the conversation like ``fake_anthropic``: ``CALL <tool> <json>`` in the user text makes
the first answer a call of the offered tool whose name ends with ``<tool>``; after its output comes
back the answer is ``THEN <text>`` from the prompt if given (chat only), else ``done: <output>``;
``REPLY <text>`` answers ``<text>``; else ``ok``. A chat request that offers no tools (a client's
helper call, e.g. a session title) is answered ``Fake title``. Responses bodies are kept in
``requests``, chat bodies in ``chat_requests``.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.fake_http import FakeHTTPServer, Reply, json_reply, script, sse_data, sse_event

__all__ = ["FakeOpenAI"]


def _user_text(items: list[dict[str, Any]]) -> str:
    out = []
    for it in items:
        if it.get("type", "message") == "message" and it.get("role") == "user":
            content = it.get("content")
            if isinstance(content, str):
                out.append(content)
            else:
                out += [c.get("text", "") for c in content or [] if c.get("type") in ("input_text", "text")]
    return "\n".join(out)


def _tools(tools: list[dict[str, Any]]) -> list[tuple[str | None, str]]:
    """(namespace, name) of every offered function; Codex groups MCP tools in ``namespace`` entries."""
    out: list[tuple[str | None, str]] = []
    for t in tools or []:
        if t.get("type") == "namespace":
            out += [(t.get("name"), sub["name"]) for sub in t.get("tools") or [] if sub.get("name")]
        elif t.get("name"):
            out.append((None, t["name"]))
    return out


def plan(body: dict[str, Any]) -> dict[str, Any]:
    items = body.get("input") or []
    last_user = max((i for i, it in enumerate(items) if it.get("type", "message") == "message"
                     and it.get("role") == "user"), default=0)
    items = items[last_user:]  # this turn only: earlier turns come along when a session is resumed
    outputs = [it for it in items if it.get("type") == "function_call_output"]
    result = None
    if outputs:
        out = outputs[-1].get("output")
        result = out if isinstance(out, str) else json.dumps(out)
    offered = _tools(body.get("tools") or [])
    step = script(_user_text(items), [n for _, n in offered], result, then=False)
    if "tool" in step:
        namespace = next(ns for ns, n in offered if n == step["tool"])
        return {"tool": step["tool"], "namespace": namespace, "arguments": step["args"]}
    return step


def _sse(body: dict[str, Any], step: dict[str, Any], n: int) -> bytes:
    rid = f"resp_{n:04d}"
    if "tool" in step:
        item = {"type": "function_call", "id": f"fc_{n:04d}", "call_id": f"call_{n:04d}", "name": step["tool"],
                "arguments": step["arguments"], "status": "completed"}
        if step.get("namespace"):
            item["namespace"] = step["namespace"]
    else:
        item = {"type": "message", "id": f"msg_{n:04d}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": step["text"], "annotations": []}]}
    usage = {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 20}, "output_tokens": 30,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 150}
    resp = {"id": rid, "object": "response", "status": "in_progress", "model": body.get("model"), "output": []}
    parts = [sse_event("response.created", {"response": resp}),
             sse_event("response.output_item.added", {"output_index": 0, "item": {**item, "status": "in_progress"}})]
    if "text" in step:
        delta = {"output_index": 0, "content_index": 0, "item_id": item["id"], "delta": step["text"]}
        parts.append(sse_event("response.output_text.delta", delta))
    parts.append(sse_event("response.output_item.done", {"output_index": 0, "item": item}))
    parts.append(sse_event("response.completed", {"response": {**resp, "status": "completed", "output": [item],
                                                               "usage": usage}}))
    return "".join(parts).encode()


def _chat_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict) and c.get("type") == "text")


def plan_chat(body: dict[str, Any]) -> dict[str, Any]:
    msgs = body.get("messages") or []
    names = [t.get("function", {}).get("name", "") for t in body.get("tools") or []]
    if not names:
        return {"text": "Fake title"}
    starts = [i for i, m in enumerate(msgs) if m.get("role") == "user" and _chat_text(m.get("content")).strip()]
    msgs = msgs[starts[-1]:] if starts else msgs  # this turn only: a resumed session replays earlier turns
    text = "\n".join(_chat_text(m.get("content")) for m in msgs if m.get("role") == "user")
    results = [m for m in msgs if m.get("role") == "tool"]
    step = script(text, names, _chat_text(results[-1].get("content")) if results else None)
    return {"tool": step["tool"], "arguments": step["args"]} if "tool" in step else step


def _chat(body: dict[str, Any], step: dict[str, Any], n: int) -> tuple[bytes, str]:
    """The answer as SSE chunks (``stream: true``) or one ``chat.completion`` object."""
    cid, model = f"chatcmpl-{n:04d}", body.get("model") or "fake"
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
             "prompt_tokens_details": {"cached_tokens": 20}}
    if "tool" in step:
        call = {"id": f"call_{n:04d}", "type": "function",
                "function": {"name": step["tool"], "arguments": step["arguments"]}}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": step["text"]}, "stop"
    if not body.get("stream"):
        obj = {"id": cid, "object": "chat.completion", "created": 1767225600, "model": model,
               "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}
        return json.dumps(obj).encode(), "application/json"
    head = {"id": cid, "object": "chat.completion.chunk", "created": 1767225600, "model": model}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        return sse_data({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})

    parts = [chunk({"role": "assistant", "content": ""})]
    if "tool" in step:
        parts.append(chunk({"tool_calls": [{"index": 0, **message["tool_calls"][0]}]}))
    else:
        text = step["text"]
        cut = max(1, len(text) // 2)
        parts += [chunk({"content": text[:cut]})] + ([chunk({"content": text[cut:]})] if text[cut:] else [])
    parts.append(chunk({}, finish))
    parts.append(sse_data({**head, "choices": [], "usage": usage}))
    parts.append(sse_data("[DONE]"))
    return "".join(parts).encode(), "text/event-stream"


_NOT_FOUND = json_reply(b'{"error":{"message":"not found"}}', 404)


class FakeOpenAI(FakeHTTPServer):
    """``with FakeOpenAI() as api:`` then point a provider's ``base_url`` at ``api.url + "/v1"``."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []
        self.chat_requests: list[dict[str, Any]] = []

    def respond(self, method: str, path: str, raw: bytes) -> Reply | None:
        path = path.split("?")[0]
        if method == "GET":
            return json_reply(b'{"object":"list","data":[],"models":[]}') if path.endswith("/models") else _NOT_FOUND
        if method != "POST":
            return None
        if path.endswith("/chat/completions"):
            body = json.loads(raw or b"{}")
            return 200, *_chat(body, plan_chat(body), self.record(self.chat_requests, body))
        if not path.endswith("/responses"):
            return _NOT_FOUND
        body = json.loads(raw or b"{}")
        return 200, _sse(body, plan(body), self.record(self.requests, body)), "text/event-stream"
