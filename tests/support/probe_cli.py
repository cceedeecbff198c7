"""A stand-in agent CLI (Claude-style argv and stream-json) that probes what the run was given.

While running it connects to the gateway with the token from its environment, asking for every
operator scope, tries a few methods, and appends to ``$PROBE_LOG``: the scopes granted, the error code
(or "ok") of each method tried, its ``REMOTECLAW_*`` variables, and the mode of its ``--mcp-config``
file. Then it answers like a CLI that is done.
"""

from __future__ import annotations

import json
import os
import stat
import sys

from websockets.sync.client import connect

SCOPES = ["operator.admin", "operator.read", "operator.write", "operator.approvals", "operator.pairing"]


TRIES = {
    "sessions.list": {},
    "chat.history": {"sessionKey": "agent:main:main"},  # the owner's main conversation
    "node.invoke": {"nodeId": "n1", "command": "system.run", "idempotencyKey": "k1"},
    "browser.request": {"method": "GET", "path": "/"},
    "config.get": {},
    "logs.tail": {"limit": 1},
    # a message in the owner's main conversation (none has this id: an owner run gets NOT_FOUND)
    "message.delete": {"channel": "webchat", "to": "agent:main:main", "messageId": "999999999"},
}


def _answer(ws: object, req_id: str) -> dict:
    while True:
        frame = json.loads(ws.recv(timeout=5))  # type: ignore[attr-defined]
        if frame.get("type") == "res" and frame.get("id") == req_id:
            return frame


def probe(url: str, token: str) -> tuple[object, dict[str, object]]:
    with connect(url, open_timeout=5) as ws:
        json.loads(ws.recv(timeout=5))  # connect.challenge
        ws.send(json.dumps({"type": "req", "id": "c", "method": "connect", "params": {
            "minProtocol": 3, "maxProtocol": 3, "role": "operator", "scopes": SCOPES, "auth": {"token": token},
            "client": {"id": "probe", "version": "1", "platform": "linux", "mode": "backend"}}}))
        frame = _answer(ws, "c")
        if not frame["ok"]:
            return frame["error"], {}
        tried: dict[str, object] = {}
        for method, params in TRIES.items():
            ws.send(json.dumps({"type": "req", "id": method, "method": method, "params": params}))
            res = _answer(ws, method)
            tried[method] = "ok" if res["ok"] else (res["error"].get("details") or {}).get("code", res["error"]["code"])
            if method == "sessions.list" and res["ok"]:
                tried["sessions.list.keys"] = sorted(s["key"] for s in res["payload"]["sessions"])
        return frame["payload"]["auth"]["scopes"], tried


if __name__ == "__main__":
    argv = sys.argv[1:]
    sys.stdin.read()
    env = {k: v for k, v in os.environ.items() if k.startswith("REMOTECLAW_")}
    cfg = argv[argv.index("--mcp-config") + 1]
    scopes, tried = probe(env["REMOTECLAW_GATEWAY_URL"], env["REMOTECLAW_GATEWAY_TOKEN"])
    record = {"scopes": scopes, "tried": tried, "env": env, "mcpConfigMode": stat.S_IMODE(os.stat(cfg).st_mode)}
    with open(os.environ["PROBE_LOG"], "a") as fh:
        fh.write(json.dumps(record) + "\n")
    for obj in ({"type": "system", "subtype": "init", "session_id": "s"},
                {"type": "result", "subtype": "success", "is_error": False, "session_id": "s", "result": "done"}):
        sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
