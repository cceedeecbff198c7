"""The answers in OpenAI's shapes: a chat completion and its ``chat.completion.chunk`` stream, a response and its
``response.*`` events, the model list. Values only: ``routes`` sends them.

Ids come from the run: ``chatcmpl-<runId>``, ``resp_<runId>``, ``msg_<runId>``. A response id is therefore a
handle on its session (``previous_response_id`` finds the session of the run) that grants nothing by itself:
continuing it is decided by the access model like any turn in that session.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.openai_api.turns import Usage

__all__ = ["RESPONSE_PREFIX", "chat_chunk", "completion", "model_entry", "response_object", "sse",
           "sse_event"]

RESPONSE_PREFIX = "resp_"


def sse(data: dict[str, Any]) -> bytes:
    """One ``data:`` line (orjson escapes no line break into raw text, so one message is always one line)."""
    return b"data: " + orjson.dumps(data) + b"\n\n"


def sse_event(name: str, data: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def model_entry(agent_id: str, created: int) -> dict[str, Any]:
    return {"id": agent_id, "object": "model", "created": created, "owned_by": "remoteclaw"}


def _chat_usage(usage: Usage) -> dict[str, Any]:
    return {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total, "prompt_tokens_details": {"cached_tokens": usage.cached_tokens}}


def completion(run_id: str, model: str, created: int, text: str, usage: Usage) -> dict[str, Any]:
    return {"id": f"chatcmpl-{run_id}", "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": _chat_usage(usage), "system_fingerprint": None}


def chat_chunk(run_id: str, model: str, created: int, *, delta: dict[str, Any] | None = None,
               finish: str | None = None, usage: Usage | None = None, with_usage: bool = False) -> dict[str, Any]:
    """One chunk; the usage chunk (``usage`` given) has no choices, and with ``include_usage`` every other chunk
    carries ``usage: null``, as OpenAI sends them."""
    chunk: dict[str, Any] = {"id": f"chatcmpl-{run_id}", "object": "chat.completion.chunk", "created": created,
                             "model": model, "system_fingerprint": None}
    if usage is not None:
        chunk["choices"] = []
        chunk["usage"] = _chat_usage(usage)
        return chunk
    chunk["choices"] = [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}]
    if with_usage:
        chunk["usage"] = None
    return chunk


def message_item(run_id: str, text: str, status: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" or text else []
    return {"type": "message", "id": f"msg_{run_id}", "status": status, "role": "assistant", "content": content}


def response_object(run_id: str, model: str, created: int, *, status: str, text: str = "",
                    usage: Usage | None = None, previous: str | None = None, user: str | None = None,
                    error: dict[str, Any] | None = None) -> dict[str, Any]:
    output = [message_item(run_id, text, "completed")] if status == "completed" else []
    return {
        "id": f"{RESPONSE_PREFIX}{run_id}", "object": "response", "created_at": created, "status": status,
        "model": model, "output": output, "output_text": text if status == "completed" else "",
        "previous_response_id": previous, "error": error, "incomplete_details": None, "instructions": None,
        "metadata": {}, "parallel_tool_calls": False, "tool_choice": "auto", "tools": [], "temperature": None,
        "top_p": None, "text": {"format": {"type": "text"}}, "truncation": "disabled", "user": user,
        "usage": None if usage is None else {
            "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "total_tokens": usage.total, "input_tokens_details": {"cached_tokens": usage.cached_tokens},
            "output_tokens_details": {"reasoning_tokens": 0}},
    }
