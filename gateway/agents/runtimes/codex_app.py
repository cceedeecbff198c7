"""Codex through ``codex app-server``: a JSON-RPC conversation over stdio, for the permission modes that ask.

``codex exec`` never asks for approval; the app-server asks its client. So when an agent's ``permissions`` is
``ask`` or ``ask-dangerous`` the Codex runtime starts ``codex app-server`` instead, and this parser is its
client: ``initialize``, then ``thread/start`` (or ``thread/resume``) with approval policy ``untrusted`` and the
``workspace-write`` sandbox, then ``turn/start`` with the prompt. Its notifications become our events as the
exec runtime's JSONL does (items started and completed, message deltas, token usage, the turn's end). Its
requests ``item/commandExecution/requestApproval`` and ``item/fileChange/requestApproval`` go to the person
through ``RunSpec.approve`` (the gateway's approvals service, in-process) and are answered from the decision:
allow-once is ``accept``, allow-always ``acceptForSession`` (and the service stores the rule), deny or no
decision in time ``decline``. Once the turn completes stdin is closed, and the app-server exits.

A command is asked as ``Bash`` with the command Codex's shell runs (``bash -lc '<this>'``) and its folder, so
an "allow always" rule is the same ``Bash(<command>)`` Claude Code's runs store; a file change is asked as
``Edit`` with each file's path and a diff count (``+3 -1``) and the diffs themselves.
"""

from __future__ import annotations

from typing import Any

from gateway.agents.runtimes.base import Event, RunSpec, Stdin
from gateway.agents.runtimes.conversation import RpcClient, file_changes, line

__all__ = ["APPROVAL_POLICY", "SANDBOX", "AppServerClient", "command_of", "initialize", "mcp_call_events"]

APPROVAL_POLICY = "untrusted"
"""Codex asks before anything outside its own list of safe read-only commands (``ls``, ``cat``, ...)."""
SANDBOX = "workspace-write"
"""What an approved command may touch: the workspace (and temp), as in Codex's own default for asking modes.
Inside the gateway's sandbox Codex's own cannot start (it is bubblewrap too): there ours confines it instead."""

_INIT, _THREAD, _TURN = 1, 2, 3
_SHELLS = ("bash", "sh", "zsh")
_DECISIONS = {"allow-once": "accept", "allow-always": "acceptForSession"}


def command_of(params: dict[str, Any]) -> str:
    """The command a person should read: the script Codex's shell wrapper runs, else the command line."""
    argv = params.get("proposedExecpolicyAmendment")
    if (isinstance(argv, list) and len(argv) == 3 and all(isinstance(a, str) for a in argv)
            and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1] in ("-lc", "-c")):
        return str(argv[2])
    actions = params.get("commandActions") or []
    if len(actions) == 1 and isinstance(actions[0], dict) and isinstance(actions[0].get("command"), str):
        return str(actions[0]["command"])
    return str(params.get("command") or "")


def initialize() -> bytes:
    """The first line on the app-server's stdin (``Invocation.stdin``); the rest follows its answers."""
    return line({"id": _INIT, "method": "initialize", "params": {
        "clientInfo": {"name": "remoteclaw", "title": "remoteclaw gateway", "version": "1"}, "capabilities": None}})


class AppServerClient(RpcClient):
    """The client side of one ``codex app-server`` turn: what to send next, and the person's answers."""

    def __init__(self, feed: Stdin, spec: RunSpec) -> None:
        super().__init__(feed, spec)
        self.thread_id: str | None = None
        self.usage: dict[str, int] = {}
        self.items: dict[str, dict[str, Any]] = {}
        """Items seen started, by id: a file-change request names only its item, whose changes are here."""

    def feed_obj(self, obj: dict[str, Any]) -> list[Event]:
        """Events for one JSON-RPC message; sends what the conversation needs next."""
        method = obj.get("method")
        if method is None and "id" in obj:
            return self._response(obj)
        if isinstance(method, str) and "id" in obj:
            self._request(obj["id"], method, obj.get("params") or {})
            return []
        return self._notification(str(method), obj.get("params") or {})

    # -- our requests' answers ------------------------------------------------------------------

    def _response(self, obj: dict[str, Any]) -> list[Event]:
        rid, err = obj.get("id"), obj.get("error")
        if err is not None:
            what = {_INIT: "initialize", _THREAD: "thread/resume" if self.spec.resume_id else "thread/start",
                    _TURN: "turn/start"}.get(rid if isinstance(rid, int) else -1, "a request")
            msg = str((err or {}).get("message") or err)
            if rid == _THREAD and self.spec.resume_id and "no rollout" in msg.lower():
                msg = f"session {self.spec.resume_id} not found ({msg})"  # the driver then starts afresh
            return [Event("error", text=f"{what} failed: {msg}"),
                    Event("done", session_id=self.thread_id, usage=self.usage, is_error=True)]
        result = obj.get("result") or {}
        if rid == _INIT:
            self.send({"method": "initialized"})
            params: dict[str, Any] = {"cwd": str(self.spec.workspace), "approvalPolicy": APPROVAL_POLICY,
                                      "sandbox": "danger-full-access" if self.spec.sandboxed else SANDBOX}
            if self.spec.resume_id:
                self.send({"id": _THREAD, "method": "thread/resume",
                           "params": {"threadId": self.spec.resume_id, **params}})
            else:
                self.send({"id": _THREAD, "method": "thread/start", "params": params})
        elif rid == _THREAD:
            self.thread_id = ((result.get("thread") or {}).get("id")) or self.spec.resume_id
            prompt = {"type": "text", "text": self.spec.prompt, "text_elements": []}
            self.send({"id": _TURN, "method": "turn/start", "params": {"threadId": self.thread_id, "input": [prompt]}})
        return []

    # -- its notifications ----------------------------------------------------------------------

    def _notification(self, method: str, p: dict[str, Any]) -> list[Event]:
        if method == "thread/started":
            self.thread_id = (p.get("thread") or {}).get("id") or self.thread_id
        elif method == "item/started" or method == "item/completed":
            item = p.get("item") or {}
            if method == "item/started" and item.get("id"):
                self.items[str(item["id"])] = item
            return _item_events(item, completed=method == "item/completed")
        elif method == "item/agentMessage/delta" and p.get("delta"):
            return [Event("text_delta", text=str(p["delta"]))]
        elif method == "thread/tokenUsage/updated":
            last = (p.get("tokenUsage") or {}).get("last") or {}
            cached = int(last.get("cachedInputTokens") or 0)
            for key, value in (("input", int(last.get("inputTokens") or 0) - cached),
                               ("output", int(last.get("outputTokens") or 0)), ("cacheRead", cached),
                               ("cacheWrite", int(last.get("cacheWriteInputTokens") or 0))):
                self.usage[key] = self.usage.get(key, 0) + value
        elif method == "error" and not p.get("willRetry"):
            return [Event("error", text=str((p.get("error") or {}).get("message") or "error"))]
        elif method == "turn/completed":
            turn = p.get("turn") or {}
            if turn.get("status") == "completed":
                return [Event("done", session_id=self.thread_id, usage=self.usage)]
            msg = ((turn.get("error") or {}).get("message")) or f"turn {turn.get('status') or 'failed'}"
            return [Event("error", text=str(msg)),
                    Event("done", session_id=self.thread_id, usage=self.usage, is_error=True)]
        return []

    # -- its requests: the person decides -------------------------------------------------------

    def _request(self, rid: Any, method: str, p: dict[str, Any]) -> None:
        if method == "item/commandExecution/requestApproval":
            ask = ("Bash", {"command": command_of(p), "cwd": p.get("cwd"), "reason": p.get("reason")})
        elif method == "item/fileChange/requestApproval":
            changes = (self.items.get(str(p.get("itemId"))) or {}).get("changes") or []
            ask = ("Edit", {**file_changes(changes, self.spec.workspace), "reason": p.get("reason"),
                            "grantRoot": p.get("grantRoot")})
        else:  # nothing else is asked of us in these modes (our MCP tools are approved in the config)
            self.send({"id": rid, "error": {"code": -32601, "message": f"{method} is not supported by this client"}})
            return
        self.ask_person(rid, *ask, _answer)


def _answer(decision: str | None) -> dict[str, Any]:
    return {"result": {"decision": _DECISIONS.get(str(decision), "decline")}}


def _item_events(item: dict[str, Any], *, completed: bool) -> list[Event]:
    itype, iid = item.get("type"), item.get("id")
    if itype == "agentMessage" and completed and item.get("text"):
        return [Event("text", text=str(item["text"]))]
    if itype == "reasoning" and completed:
        text = "\n".join(str(t) for t in (item.get("summary") or []) + (item.get("content") or []) if t)
        return [Event("thinking", text=text)] if text else []
    if itype == "commandExecution":
        if not completed:
            return [Event("tool_use", tool_id=iid, tool_name="shell", tool_input={"command": item.get("command")})]
        status = item.get("status")
        output = item.get("aggregatedOutput")
        if status == "declined":
            output = "declined by the person"
        return [Event("tool_result", tool_id=iid, tool_name="shell", tool_output=output,
                      is_error=status in ("failed", "declined") or item.get("exitCode") not in (0, None))]
    if itype == "fileChange":
        paths = [c.get("path") for c in item.get("changes") or [] if isinstance(c, dict)]
        if not completed:
            return [Event("tool_use", tool_id=iid, tool_name="apply_patch", tool_input={"paths": paths})]
        return [Event("tool_result", tool_id=iid, tool_name="apply_patch", tool_output=item.get("status"),
                      is_error=item.get("status") != "completed")]
    if itype == "mcpToolCall":
        return mcp_call_events(item, completed=completed)
    return []


def mcp_call_events(item: dict[str, Any], *, completed: bool) -> list[Event]:
    """A call of an MCP tool (ours): the same fields in ``codex exec``'s ``mcp_tool_call`` and the app-server's
    ``mcpToolCall``."""
    iid, name = item.get("id"), f"mcp__{item.get('server')}__{item.get('tool')}"
    if not completed:
        return [Event("tool_use", tool_id=iid, tool_name=name, tool_input=item.get("arguments"))]
    err = item.get("error")
    result = item.get("result") or {}
    content = result.get("content") if isinstance(result, dict) else result
    text = "\n".join(str(c.get("text", "")) for c in content or [] if isinstance(c, dict) and c.get("type") == "text")
    return [Event("tool_result", tool_id=iid, tool_name=name,
                  tool_output=(err or {}).get("message") if err else text,
                  is_error=bool(err) or item.get("status") == "failed")]
