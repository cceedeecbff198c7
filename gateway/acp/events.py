"""The gateway's run events as an ACP editor needs them: the new text of each ``chat`` delta, the plan a runtime
reported, and an ACP tool kind for a tool name. No I/O: ``server`` feeds events in and sends what comes out."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

__all__ = ["RunEvents", "plan_entries", "tool_kind"]

PlanStatus = Literal["pending", "in_progress", "completed"]
_MARKS: dict[str, PlanStatus] = {"[x]": "completed", "[~]": "in_progress", "[ ]": "pending"}
_KINDS = {"Bash": "execute", "Edit": "edit", "Write": "edit", "MultiEdit": "edit", "Read": "read", "Glob": "search",
          "Grep": "search", "LS": "search", "WebFetch": "fetch", "WebSearch": "fetch", "TodoWrite": "think"}


class RunEvents:
    """One prompt's gateway run: its events in order, and how much of the reply the editor has been sent.

    ``chat`` deltas carry the whole reply so far (``message.text``); the editor gets only what is new. A delta that
    rewrites the text (``replace``: a new block after a tool call) is sent from where it differs."""

    def __init__(self, run_id: str, session_id: str) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self.queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self.sent = ""

    def delta(self, payload: dict[str, Any]) -> str:
        """The text of a ``chat`` delta the editor has not seen yet."""
        text = _text(payload)
        piece = _after(self.sent, text)
        if piece is None:  # the reply so far was rewritten: send it on after a break
            piece = "\n\n" + text
        self.sent = self.sent if not piece else text
        return piece

    def rest(self, payload: dict[str, Any]) -> str:
        """What the final ``chat`` event's reply adds to what was streamed (a reply that never streamed: all)."""
        text = _text(payload)
        if not self.sent:
            return text
        return _after(self.sent, text) or ""


def _after(sent: str, text: str) -> str | None:
    """What ``text`` adds to ``sent``; "" when nothing (the same, or only its trailing blanks trimmed, as the
    complete block that follows the streamed pieces is); None when ``text`` does not continue ``sent``."""
    if text.startswith(sent):
        return text[len(sent):]
    base = sent.rstrip()
    if not text.startswith(base):
        return None
    piece, trailing = text[len(base):], sent[len(base):]
    return piece[len(trailing):] if piece.startswith(trailing) else piece.lstrip()


def _text(payload: dict[str, Any]) -> str:
    message = payload.get("message") or {}
    text = message.get("text") if isinstance(message, dict) else None
    return text if isinstance(text, str) else ""


def plan_entries(thought: str) -> list[tuple[str, PlanStatus]]:
    """A plan as ``runtime: acp`` reports one (``Plan:`` then ``[x] step`` lines): its steps; [] for other text."""
    lines = thought.splitlines()
    if not lines or lines[0].strip() != "Plan:":
        return []
    out = []
    for line in lines[1:]:
        line = line.strip()
        mark = next((m for m in _MARKS if line.startswith(m + " ")), None)
        if mark is not None:
            out.append((line[len(mark) + 1:].strip(), _MARKS[mark]))
    return out


def tool_kind(name: Any) -> Any:
    """The ACP kind of one of our tool names (``Bash`` → execute, ``Edit`` → edit…); ``other`` when unknown."""
    head = str(name or "").split(":", 1)[0].split("(", 1)[0].strip()
    return _KINDS.get(head, "other")
