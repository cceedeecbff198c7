"""A stand-in ACP agent (Agent Client Protocol, JSON-RPC over stdio): the far side for ``runtime: acp`` turns.

It speaks the wire itself, one JSON message a line, as an agent does: ``initialize``, ``session/new`` (no
``session/load``), ``session/prompt``; and acts on directives in the prompt:

- ``ask:<command>`` ask the client (``session/request_permission``, kind ``execute``) about running ``<command>``
  and, if an allow option is chosen, run it with ``sh -c`` in its folder, the call shown as a ``tool_call`` and its
  update; then answer ``ran: <its output>`` or ``declined``;
- ``sleep:<s>`` think for s seconds, a thought chunk every 0.25 s meanwhile.

Otherwise it answers ``echo: <prompt>``, in two message chunks. ``session/cancel`` ends the prompt with
``cancelled``. It exits when its stdin closes; with ``--linger`` it stays up after that, as Gemini CLI's ``--acp``
does while its MCP server runs (the runner stops it ``LINGER_S`` after stdin closed).
Every prompt and every decision is appended to ``$FAKE_CLI_LOG``
(``{acp, pid, cwd, home, prompt, decision}``).
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import uuid

_OUT = threading.Lock()
_inbox: queue.Queue[dict | None] = queue.Queue()
_answers: dict[int, queue.Queue[dict]] = {}
_cancelled = threading.Event()


def send(obj: dict) -> None:
    with _OUT:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **obj}) + "\n")
        sys.stdout.flush()


def log(entry: dict) -> None:
    path = os.environ.get("FAKE_CLI_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps({"acp": True, "pid": os.getpid(), "cwd": os.getcwd(), "home": os.environ.get("HOME"),
                                 "at": time.time(), **entry}) + "\n")


def update(sid: str, upd: dict) -> None:
    send({"method": "session/update", "params": {"sessionId": sid, "update": upd}})


def ask(sid: str, command: str) -> dict:
    """``session/request_permission`` for a shell command; the client's answer."""
    rid = 1000 + len(_answers)
    _answers[rid] = queue.Queue()
    call = {"toolCallId": "call_1", "title": command, "kind": "execute", "status": "pending",
            "rawInput": {"command": command}}
    update(sid, {"sessionUpdate": "tool_call", **call})
    send({"id": rid, "method": "session/request_permission", "params": {"sessionId": sid, "toolCall": call, "options": [
        {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
        {"optionId": "always", "name": "Always", "kind": "allow_always"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"}]}})
    return _answers[rid].get()


def prompt(rid: int, sid: str, text: str) -> None:
    log({"prompt": text})
    if m := re.search(r"sleep:([\d.]+)", text):
        until = time.monotonic() + float(m.group(1))
        while time.monotonic() < until and not _cancelled.is_set():
            time.sleep(0.25)
            update(sid, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "."}})
    if _cancelled.is_set():
        send({"id": rid, "result": {"stopReason": "cancelled"}})
        return
    reply = f"echo: {text.strip()}"
    if m := re.search(r"ask:(.+)", text):
        command = m.group(1).strip()
        answer = ask(sid, command)
        outcome = (answer.get("result") or {}).get("outcome") or {}
        chosen = outcome.get("optionId") if outcome.get("outcome") == "selected" else None
        log({"decision": chosen or "cancelled", "command": command})
        if chosen in ("yes", "always"):
            ran = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False)
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed",
                         "content": [{"type": "content", "content": {"type": "text", "text": ran.stdout}}]})
            reply = f"ran: {ran.stdout.strip()}"
        else:
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "failed"})
            reply = "declined"
    half = len(reply) // 2
    for piece in (reply[:half], reply[half:]):
        update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": piece}})
    send({"id": rid, "result": {"stopReason": "end_turn",
                                "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}}})


def reader() -> None:
    for raw in sys.stdin:
        if raw.strip():
            _inbox.put(json.loads(raw))
    _inbox.put(None)


def main() -> int:
    threading.Thread(target=reader, daemon=True).start()
    sid = ""
    while (msg := _inbox.get()) is not None:
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method is None and rid in _answers:  # the client's answer to our request
            _answers[rid].put(msg)
        elif method == "initialize":
            send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": False},
                                        "authMethods": []}})
        elif method == "session/new":
            sid = f"fake-{uuid.uuid4().hex[:8]}"
            log({"session": sid, "mcp": [s.get("name") for s in params.get("mcpServers") or []]})
            send({"id": rid, "result": {"sessionId": sid}})
        elif method == "session/prompt":
            text = "".join(b.get("text", "") for b in params.get("prompt") or [] if isinstance(b, dict))
            _cancelled.clear()
            threading.Thread(target=prompt, args=(rid, sid, text), daemon=True).start()
        elif method == "session/cancel":
            _cancelled.set()
        elif rid is not None:
            send({"id": rid, "error": {"code": -32601, "message": f"{method} is not supported"}})
    if "--linger" in sys.argv[1:]:
        time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
