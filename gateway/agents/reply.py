"""Shaping a turn's final text into what a chat receives, and noticing when a tool already sent it."""

from __future__ import annotations

import re
from typing import Any

from gateway.agents.runtimes.prompt import SILENT_REPLY
from gateway.runs import Origin

__all__ = ["clean_reply", "is_duplicate", "one_line"]

_REPLY_TAG = re.compile(r"\[\[\s*reply_to(?:_current|\s*:\s*([^\]\s]+))\s*\]\]", re.IGNORECASE)
_WS = re.compile(r"\s+")


def clean_reply(text: str) -> tuple[str, bool, str | None]:
    """``(text without reply tags, silent?, reply-to id or "current")``."""
    reply_to: str | None = None
    m = _REPLY_TAG.search(text)
    if m:
        reply_to = m.group(1) or "current"
    body = _REPLY_TAG.sub("", text).strip()
    return body, body in ("", SILENT_REPLY), reply_to


def _norm(text: str | None) -> str:
    return _WS.sub(" ", (text or "").strip()).lower()


def is_duplicate(reply: str, effects: list[dict[str, Any]], origin: Origin) -> bool:
    """Whether a message tool already sent ``reply`` (or a text containing it) to the reply's chat."""
    want = _norm(reply)
    if not want:
        return False
    for fx in effects:
        if fx.get("type") != "message_sent":
            continue
        channel = fx.get("provider") or fx.get("channel")
        if channel not in (None, origin.channel) or str(fx.get("to") or origin.to) != str(origin.to):
            continue
        sent = _norm(fx.get("text"))
        if sent and (sent == want or want in sent or (len(sent) > 20 and sent in want)):
            return True
    return False


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters (for failure notices in a chat)."""
    line = _WS.sub(" ", text).strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"
