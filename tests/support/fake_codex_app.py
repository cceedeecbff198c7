"""A stand-in for ``codex app-server`` (JSON-RPC over stdio, one message a line): the far side of the Codex runtime's
asking modes (``gateway.agents.runtimes.codex_app``).

``initialize`` → ``initialized`` → ``thread/start`` → ``turn/start`` with the prompt; for ``ask:<command>`` it sends
``item/commandExecution/requestApproval`` for ``bash -lc <command>`` and waits for the client's decision: ``accept``
(or ``acceptForSession``) runs it in its folder and answers ``ran: <output>``, anything else answers ``declined``.
Otherwise it answers ``echo: <prompt>``. It exits when its stdin closes. Each turn and decision is appended to
``$FAKE_CLI_LOG`` (``{codex, pid, cwd, prompt, decision}``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid

APPROVAL_ID = 900


def send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def log(entry: dict) -> None:
    path = os.environ.get("FAKE_CLI_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps({"codex": True, "pid": os.getpid(), "cwd": os.getcwd(), "at": time.time(), **entry})
                     + "\n")


def message(text: str) -> None:
    item = {"type": "agentMessage", "id": f"msg_{uuid.uuid4().hex[:6]}", "text": text}
    send({"method": "item/started", "params": {"item": {**item, "text": ""}}})
    send({"method": "item/agentMessage/delta", "params": {"delta": text}})
    send({"method": "item/completed", "params": {"item": item}})


def main() -> int:
    thread = f"thr_{uuid.uuid4().hex[:8]}"
    pending: dict[str, str] = {}
    for raw in sys.stdin:
        if not raw.strip():
            continue
        msg = json.loads(raw)
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            send({"id": rid, "result": {"userAgent": "fake-codex"}})
        elif method == "thread/start":
            send({"id": rid, "result": {"thread": {"id": thread}}})
            send({"method": "thread/started", "params": {"thread": {"id": thread}}})
        elif method == "turn/start":
            text = "".join(i.get("text", "") for i in params.get("input") or [] if isinstance(i, dict))
            log({"prompt": text})
            send({"id": rid, "result": {"turn": {"id": "turn_1", "status": "inProgress"}}})
            if m := re.search(r"ask:(.+)", text):
                pending["command"] = m.group(1).strip()
                send({"method": "item/started", "params": {"item": {
                    "type": "commandExecution", "id": "cmd_1", "command": pending["command"]}}})
                send({"id": APPROVAL_ID, "method": "item/commandExecution/requestApproval", "params": {
                    "threadId": thread, "turnId": "turn_1", "itemId": "cmd_1", "cwd": os.getcwd(),
                    "proposedExecpolicyAmendment": ["bash", "-lc", pending["command"]]}})
                continue
            message(f"echo: {text.strip()}")
            send({"method": "turn/completed", "params": {"turn": {"id": "turn_1", "status": "completed"}}})
        elif method is None and rid == APPROVAL_ID:
            decision = (msg.get("result") or {}).get("decision")
            log({"decision": decision})
            command = pending.pop("command", "")
            if decision in ("accept", "acceptForSession"):
                ran = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
                send({"method": "item/completed", "params": {"item": {
                    "type": "commandExecution", "id": "cmd_1", "status": "completed", "exitCode": ran.returncode,
                    "aggregatedOutput": ran.stdout}}})
                message(f"ran: {ran.stdout.strip()}")
            else:
                send({"method": "item/completed", "params": {"item": {
                    "type": "commandExecution", "id": "cmd_1", "status": "declined"}}})
                message("declined")
            send({"method": "thread/tokenUsage/updated", "params": {"tokenUsage": {"last": {
                "inputTokens": 12, "outputTokens": 4}}}})
            send({"method": "turn/completed", "params": {"turn": {"id": "turn_1", "status": "completed"}}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
