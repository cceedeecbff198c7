"""Gemini CLI through ``gemini --acp`` (Agent Client Protocol, JSON-RPC over stdio), for the permission modes that ask.

In headless mode (``--prompt``) Gemini treats "ask" as deny, so the ``ask`` and ``ask-dangerous`` modes start it
with ``--acp`` in its default approval mode and this client drives it: ``initialize``, ``session/new`` (or
``session/load`` to resume; the history it replays is not this turn's and is skipped: Gemini 0.61 streams it
after answering the load, so the prompt goes once the replay has been quiet for a moment), then
``session/prompt``, whose answer (``stopReason``, token counts under ``_meta.quota``) ends the turn. Its
``session/update`` notifications become our events (message and thought chunks, tool calls and their
updates). Its ``session/request_permission`` goes to the person through ``RunSpec.approve``: allow-once picks
the option of kind ``allow_once``, allow-always ``allow_always`` (the service stores the rule), deny or no
decision ``reject_once``. Gemini's own default mode lets its read-only tools run without asking; our MCP
server is trusted in the project settings.

A shell command is asked as ``Bash`` with its command line (the same rules as the other runtimes), an edit
as ``Edit`` with its files and diffs, anything else under Gemini's tool name with its title.
"""

from __future__ import annotations

import asyncio
import difflib
from typing import Any

from gateway.agents.runtimes.base import Event, RunSpec, Stdin
from gateway.agents.runtimes.conversation import RpcClient, file_changes, line

__all__ = ["AcpClient", "initialize"]

_INIT, _SESSION, _PROMPT = 1, 2, 3
REPLAY_QUIET_S = 0.5
"""After ``session/load``: how long without a replayed update counts as the end of the history."""
_KINDS = {"allow-once": "allow_once", "allow-always": "allow_always"}


def initialize() -> bytes:
    """The first line on Gemini's stdin (``Invocation.stdin``): we offer no file system or terminal of our own."""
    return line({"jsonrpc": "2.0", "id": _INIT, "method": "initialize", "params": {
        "protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                                     "terminal": False}}})


def _text(content: Any) -> str:
    """The text of ACP content: a block, or a tool call's list of ``{type: content, content: block}``."""
    if isinstance(content, dict):
        if content.get("type") == "text":
            return str(content.get("text") or "")
        return _text(content.get("content")) if content.get("type") == "content" else ""
    if isinstance(content, list):
        return "\n".join(t for t in (_text(c) for c in content) if t)
    return ""


def _diffs(content: Any) -> list[dict[str, Any]]:
    """A tool call's diff blocks in the shape ``file_changes`` reads (a unified diff per file)."""
    out = []
    for c in content or []:
        if isinstance(c, dict) and c.get("type") == "diff":
            old, new = str(c.get("oldText") or ""), str(c.get("newText") or "")
            diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "before", "after"))
            out.append({"path": c.get("path"), "kind": {"type": "add"} if not old else None, "diff": diff})
    return out


def tool_name(call: dict[str, Any]) -> str:
    """Gemini's name of the tool: its call ids are ``<tool>__<tool>_<time>_<n>``."""
    cid = str(call.get("toolCallId") or "")
    return cid.split("__", 1)[0] if "__" in cid else str(call.get("title") or "tool")


class AcpClient(RpcClient):
    """The client side of one ``gemini --acp`` turn."""

    def __init__(self, feed: Stdin, spec: RunSpec) -> None:
        super().__init__(feed, spec)
        self.session_id: str | None = None
        self.loading = bool(spec.resume_id)
        self.usage: dict[str, int] = {}
        self._text: list[str] = []
        self._thought: list[str] = []
        self._calls: set[str] = set()
        self._quiet: asyncio.TimerHandle | None = None

    def send(self, obj: dict[str, Any]) -> None:
        super().send({"jsonrpc": "2.0", **obj})

    def feed_obj(self, obj: dict[str, Any]) -> list[Event]:
        method = obj.get("method")
        if method is None and "id" in obj:
            return self._response(obj)
        params = obj.get("params") or {}
        if "id" in obj:
            return self._request(obj["id"], str(method), params)
        if method == "session/update":
            if not self.loading:
                return self._update(params.get("update") or {})
            if self._quiet is not None:  # the history still streams in: wait for its end
                self._after_replay()
        return []

    def _flush(self) -> list[Event]:
        out = []
        if self._thought:
            out.append(Event("thinking", text="".join(self._thought)))
        if self._text:
            out.append(Event("text", text="".join(self._text)))
        self._text, self._thought = [], []
        return out

    def _response(self, obj: dict[str, Any]) -> list[Event]:
        rid, err = obj.get("id"), obj.get("error")
        if err is not None:
            msg = str((err or {}).get("message") or err)
            details = (err.get("data") or {}).get("details") if isinstance(err, dict) else None
            if isinstance(details, str) and details.strip():
                msg = f"{msg}: {details.strip().splitlines()[0]}"
            if rid == _SESSION and self.spec.resume_id:  # "Invalid session identifier": the driver starts afresh
                msg = f"session {self.spec.resume_id} could not be loaded ({msg})"
            return [*self._flush(), Event("error", text=msg),
                    Event("done", session_id=self.session_id, usage=self.usage, is_error=True)]
        result = obj.get("result") or {}
        if rid == _INIT:
            params = {"cwd": str(self.spec.workspace), "mcpServers": []}  # ours is in the project settings
            if self.spec.resume_id:
                self.send({"id": _SESSION, "method": "session/load",
                           "params": {"sessionId": self.spec.resume_id, **params}})
            else:
                self.send({"id": _SESSION, "method": "session/new", "params": params})
        elif rid == _SESSION:
            self.session_id = result.get("sessionId") or self.spec.resume_id
            if self.loading:
                self._after_replay()
            else:
                self._prompt()
        elif rid == _PROMPT:
            tokens = ((result.get("_meta") or {}).get("quota") or {}).get("token_count") or {}
            self.usage = {"input": int(tokens.get("input_tokens") or 0),
                          "output": int(tokens.get("output_tokens") or 0), "cacheRead": 0, "cacheWrite": 0}
            out = self._flush()
            stop = result.get("stopReason")
            if stop in ("cancelled", "refusal"):
                return [*out, Event("error", text=f"the turn ended: {stop}"),
                        Event("done", session_id=self.session_id, usage=self.usage, is_error=True)]
            return [*out, Event("done", session_id=self.session_id, usage=self.usage)]
        return []

    def _prompt(self) -> None:
        self.loading, self._quiet = False, None
        self.send({"id": _PROMPT, "method": "session/prompt", "params": {
            "sessionId": self.session_id, "prompt": [{"type": "text", "text": self.spec.prompt}]}})

    def _after_replay(self) -> None:
        """Send the prompt once the loaded session's history has stopped coming: Gemini (0.61) answers
        ``session/load`` first and streams the history after it, so the end of the replay is a quiet moment."""
        if self._quiet is not None:
            self._quiet.cancel()
        self._quiet = asyncio.get_running_loop().call_later(REPLAY_QUIET_S, self._prompt)

    def finish(self) -> None:
        if self._quiet is not None:
            self._quiet.cancel()
        super().finish()

    def _update(self, u: dict[str, Any]) -> list[Event]:
        kind = u.get("sessionUpdate")
        if kind == "agent_message_chunk":
            text = _text(u.get("content"))
            self._text.append(text)
            return [Event("text_delta", text=text)] if text else []
        if kind == "agent_thought_chunk":
            self._thought.append(_text(u.get("content")))
            return []
        if kind == "tool_call":
            return self._tool_use(u)
        if kind == "tool_call_update" and u.get("status") in ("completed", "failed"):
            result = Event("tool_result", tool_id=u.get("toolCallId"), tool_name=tool_name(u),
                           tool_output=_text(u.get("content")), is_error=u.get("status") == "failed")
            return [*self._tool_use(u), result]
        return []

    def _tool_use(self, call: dict[str, Any]) -> list[Event]:
        """A tool call, once (Gemini may announce it first in a permission request, or only in its update)."""
        cid = str(call.get("toolCallId") or "")
        if cid in self._calls:
            return []
        self._calls.add(cid)
        return [*self._flush(), Event("tool_use", tool_id=cid, tool_name=tool_name(call),
                                      tool_input=call.get("rawInput") or {"title": call.get("title")})]

    def _request(self, rid: Any, method: str, p: dict[str, Any]) -> list[Event]:
        if method != "session/request_permission":
            self.send({"id": rid, "error": {"code": -32601, "message": f"{method} is not supported by this client"}})
            return []
        call = p.get("toolCall") or {}
        options = [o for o in p.get("options") or [] if isinstance(o, dict)]
        if call.get("kind") == "execute":
            ask: tuple[str, dict[str, Any]] = ("Bash", {"command": call.get("title")})
        elif call.get("kind") == "edit":
            ask = ("Edit", file_changes(_diffs(call.get("content")), self.spec.workspace))
        else:
            ask = (tool_name(call), {"description": call.get("title"), "detail": _text(call.get("content")) or None})

        def answer(decision: str | None) -> dict[str, Any]:
            want = _KINDS.get(str(decision), "reject_once")
            chosen = next((o for o in options if o.get("kind") == want), None)
            if chosen is None:
                return {"result": {"outcome": {"outcome": "cancelled"}}}
            return {"result": {"outcome": {"outcome": "selected", "optionId": chosen.get("optionId")}}}

        self.ask_person(rid, *ask, answer)
        return self._tool_use(call)
