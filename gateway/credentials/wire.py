"""The usage an upstream's answer states, read as the bytes pass (they are passed on unchanged).

Anthropic Messages: ``message_start`` (input, cache, first output count) and ``message_delta`` (the output so
far); OpenAI Responses: ``response.completed``'s ``usage``; Chat Completions: a chunk's ``usage``; Gemini:
``usageMetadata`` (cumulative in each chunk). A JSON (not streamed) answer is read whole at its end. Only an
event that mentions usage is decoded, so a long answer costs a substring search per event.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["Meter"]

_MAX_JSON = 8 * 1024 * 1024


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


class Meter:
    """One answer's usage (``input`` uncached, ``output``, ``cacheRead``, ``cacheWrite``) and model."""

    def __init__(self, wire: str, content_type: str) -> None:
        self.wire = wire
        self.sse = "event-stream" in content_type
        self.usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        self.model: str | None = None
        self.priced = 0.0
        """What this answer's usage so far cost (``proxy`` adds the difference to its run's)."""
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> bool:
        """Take the next bytes of the answer; True when the usage changed."""
        if not self.sse:
            self._buf += chunk
            if len(self._buf) > _MAX_JSON:
                self._buf.clear()
            return False
        data = bytes(self._buf) + chunk if self._buf else chunk
        lf, crlf = data.rfind(b"\n\n"), data.rfind(b"\r\n\r\n")  # events end in LF LF or CRLF CRLF
        end = max(lf + 2 if lf >= 0 else 0, crlf + 4 if crlf >= 0 else 0)
        if not end:
            self._buf = bytearray(data[-_MAX_JSON:])
            return False
        complete, self._buf = data[:end], bytearray(data[end:])
        if b"sage" not in complete:  # no event here states usage ("usage", "usageMetadata"): nothing to decode
            return False
        if b"\r" in complete:
            complete = complete.replace(b"\r\n", b"\n")
        changed = False
        for event in complete.split(b"\n\n"):
            if b"sage" in event:
                for line in event.split(b"\n"):
                    if line.startswith(b"data:"):
                        changed |= self._read(line[5:].strip())
        return changed

    def finish(self) -> bool:
        """The end of the answer: a JSON answer is read now."""
        if self.sse or not self._buf:
            return False
        changed = self._read(bytes(self._buf))
        self._buf.clear()
        return changed

    def _read(self, data: bytes) -> bool:
        try:
            obj = json.loads(data)
        except ValueError:
            return False
        if not isinstance(obj, dict):
            return False
        before = dict(self.usage)
        if self.wire == "anthropic":
            self._anthropic(obj)
        elif self.wire == "gemini":
            self._gemini(obj)
        else:
            self._openai(obj)
        return before != self.usage

    def _anthropic(self, obj: dict[str, Any]) -> None:
        msg = obj.get("message") if obj.get("type") == "message_start" else obj
        if isinstance(msg, dict) and isinstance(msg.get("model"), str):
            self.model = msg["model"]
        usage = (msg or {}).get("usage") if isinstance(msg, dict) else None
        if not isinstance(usage, dict):
            usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else None
        if usage is None:
            return
        for ours, theirs in (("input", "input_tokens"), ("cacheRead", "cache_read_input_tokens"),
                             ("cacheWrite", "cache_creation_input_tokens"), ("output", "output_tokens")):
            if theirs in usage and usage[theirs] is not None:
                self.usage[ours] = _int(usage[theirs])

    def _openai(self, obj: dict[str, Any]) -> None:
        resp: dict[str, Any] = obj["response"] if isinstance(obj.get("response"), dict) else obj
        if isinstance(resp.get("model"), str):
            self.model = resp["model"]
        usage = resp.get("usage")
        if not isinstance(usage, dict):
            return
        if "input_tokens" in usage:  # Responses
            cached = _int((usage.get("input_tokens_details") or {}).get("cached_tokens"))
            self.usage.update(input=_int(usage["input_tokens"]) - cached, cacheRead=cached,
                              output=_int(usage.get("output_tokens")))
        elif "prompt_tokens" in usage:  # Chat Completions
            cached = _int((usage.get("prompt_tokens_details") or {}).get("cached_tokens"))
            self.usage.update(input=_int(usage["prompt_tokens"]) - cached, cacheRead=cached,
                              output=_int(usage.get("completion_tokens")))

    def _gemini(self, obj: dict[str, Any]) -> None:
        if isinstance(obj.get("response"), dict):  # Code Assist wraps the answer
            obj = obj["response"]
        if isinstance(obj.get("modelVersion"), str):
            self.model = obj["modelVersion"]
        usage = obj.get("usageMetadata")
        if not isinstance(usage, dict):
            return
        cached = _int(usage.get("cachedContentTokenCount"))
        self.usage.update(input=_int(usage.get("promptTokenCount")) - cached, cacheRead=cached,
                          output=_int(usage.get("candidatesTokenCount")) + _int(usage.get("thoughtsTokenCount")))
