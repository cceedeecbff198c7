"""The usage each upstream's answer states, read as the bytes pass in pieces of any size."""

from __future__ import annotations

import json

import pytest

from gateway.credentials.wire import Meter


def _sse(events: list[tuple[str | None, dict]], sep: str = "\n\n") -> bytes:
    return "".join((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}{sep}"
                   for name, data in events).encode()


ANTHROPIC = _sse([("message_start", {"type": "message_start", "message": {"model": "claude-x", "usage": {
    "input_tokens": 100, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 5, "output_tokens": 1}}}),
    ("content_block_delta", {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "hi"}}),
    ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 20}})])
RESPONSES = _sse([("response.output_text.delta", {"type": "response.output_text.delta", "delta": "hi"}),
                  ("response.completed", {"type": "response.completed", "response": {"model": "gpt-x", "usage": {
                      "input_tokens": 40, "input_tokens_details": {"cached_tokens": 8}, "output_tokens": 7}}})])
CHAT = _sse([(None, {"choices": [{"delta": {"content": "hi"}}], "model": "m"}),
             (None, {"choices": [], "model": "m", "usage": {"prompt_tokens": 12, "completion_tokens": 3}})])
GEMINI = _sse([(None, {"candidates": [], "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 1}}),
               (None, {"candidates": [], "modelVersion": "gemini-2.5-flash", "usageMetadata": {
                   "promptTokenCount": 50, "candidatesTokenCount": 4, "thoughtsTokenCount": 2,
                   "cachedContentTokenCount": 10}})], sep="\r\n\r\n")


@pytest.mark.parametrize(("wire", "body", "usage", "model"), [
    ("anthropic", ANTHROPIC, {"input": 100, "output": 20, "cacheRead": 30, "cacheWrite": 5}, "claude-x"),
    ("openai", RESPONSES, {"input": 32, "output": 7, "cacheRead": 8, "cacheWrite": 0}, "gpt-x"),
    ("openai", CHAT, {"input": 12, "output": 3, "cacheRead": 0, "cacheWrite": 0}, "m"),
    ("gemini", GEMINI, {"input": 40, "output": 6, "cacheRead": 10, "cacheWrite": 0}, "gemini-2.5-flash")],
    ids=["anthropic", "responses", "chat", "gemini"])
@pytest.mark.parametrize("piece", [1, 7, 16_384])
def test_usage_read_from_a_stream_cut_anywhere(wire: str, body: bytes, usage: dict, model: str, piece: int) -> None:
    meter = Meter(wire, "text/event-stream; charset=utf-8")
    for i in range(0, len(body), piece):
        meter.feed(body[i:i + piece])
    meter.finish()
    assert meter.usage == usage and meter.model == model


def test_a_json_answer_is_read_at_its_end() -> None:
    meter = Meter("anthropic", "application/json")
    body = json.dumps({"model": "claude-x", "usage": {"input_tokens": 9, "output_tokens": 2}}).encode()
    assert not meter.feed(body[:10]) and not meter.feed(body[10:])
    assert meter.finish() and meter.usage["input"] == 9 and meter.usage["output"] == 2
