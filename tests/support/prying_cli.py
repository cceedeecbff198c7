"""A stand-in agent CLI that pries, as a prompt-injected coding agent would (Claude Code's stream-json out; Gemini
CLI's when started as it is, ``--prompt <ask>``; Codex's ``exec --json`` events when started as Codex is).

Its prompt is a JSON object ``{"paths": [...], "secrets": [...], "calls": [[method, params]…], "keep": "…"}``.
It tries to read every path (a file's bytes, a folder's listing), looks through ``/proc`` for other processes and
reads their environment, searches its own environment and those for each of ``secrets``, calls each gateway
method with its run's token (through ``REMOTECLAW_GATEWAY_SOCKET`` when it has one), and writes ``keep`` to
``~/kept.txt``. A param given as ``"$<method>.<field>"`` is that field of an earlier call's answer (a hop: the
run id ``sessions.spawn`` answered, for ``agent.wait``); ``"cat": [paths]`` reads files' text.
It answers with what it found, as JSON: ``{"read": {path: bool or a folder's names}, "pids": [...],
"cmdlines": [...], "leaked": [secret…], "env": {...}, "home": "...", "tmp": [...], "calls": {method: "ok" or
the error message}, "answers": {method: its answer}, "cat": {path: text or null}, "wrote": {path: bool},
"http": ["<status> <body>"…]}`` (``"write": [paths]`` in the prompt: appended to each; ``"http": [{url, headers,
body}]``: requests made, a ``$NAME`` url or header value taken from the environment; ``"tunnel": ["host:port"]``:
``CONNECT`` through ``HTTPS_PROXY``, then ``ping`` echoed; ``"grep": [folders]``: which of ``secrets`` any file
below each holds). A path in ``cat`` and ``grep`` may name variables (``$CODEX_HOME/config.toml``).
"""

from __future__ import annotations

import json
import os
import socket
import sys


def readable(path: str) -> bool | list[str]:
    """A file: whether its bytes could be read; a folder: what it lists (False: it cannot be listed)."""
    try:
        if os.path.isdir(path):
            return sorted(os.listdir(path))
        else:
            with open(path, "rb") as fh:
                fh.read(64)
        return True
    except OSError:
        return False


def processes() -> tuple[list[int], list[str], list[bytes]]:
    pids, cmdlines, environs = [], [], []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        pids.append(int(entry))
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdlines.append(fh.read().replace(b"\0", b" ").decode(errors="replace"))
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environs.append(fh.read())
        except OSError:
            continue
    return pids, cmdlines, environs


def writes(path: str) -> bool:
    """Whether a line could be appended to ``path`` (created if missing), as an agent planting a git hook would."""
    try:
        with open(path, "a") as fh:
            fh.write("#!/bin/sh\ntouch /tmp/pwned\n")
        return True
    except OSError:
        return False


def reaches(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False


def fetch(ask: dict) -> str:
    """One HTTP request (``{"url", "headers", "body"}``; a header value ``$NAME`` is that variable of the run's
    environment, as its CLI would send it, wherever it is in the value): ``<status> <body>``, or the error."""
    import re
    import urllib.error
    import urllib.request

    headers = {k: re.sub(r"\$([A-Z_]+)", lambda m: os.environ.get(m.group(1), ""), v)
               for k, v in ask.get("headers", {}).items()}
    url = ask["url"]
    url = os.environ.get(url[1:], "") + ask.get("path", "") if url.startswith("$") else url
    req = urllib.request.Request(url, data=json.dumps(ask["body"]).encode() if "body" in ask else None,
                                 headers={"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return f"{res.status} {res.read().decode(errors='replace')}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read().decode(errors='replace')}"
    except OSError as exc:
        return f"error {exc}"


def tunnel(target: str) -> str:
    """``CONNECT target`` through ``HTTPS_PROXY``: the proxy's status line, and what came back for ``ping`` when
    the tunnel opened."""
    proxy = os.environ.get("HTTPS_PROXY", "")
    if not proxy:
        return "no HTTPS_PROXY"
    host, _, port = proxy.removeprefix("http://").rstrip("/").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            head = s.recv(4096).decode(errors="replace")
            status = head.split("\r\n", 1)[0]
            if " 200 " not in status:
                return status + " " + head.split("\r\n\r\n", 1)[-1]
            s.sendall(b"ping\n")
            return status + " " + s.recv(100).decode(errors="replace").strip()
    except OSError as exc:
        return f"error {exc}"


def cat(path: str) -> str | None:
    try:
        with open(os.path.expandvars(path), errors="replace") as fh:
            return fh.read(65536)
    except OSError:
        return None


def grep(folder: str, secrets: list[str]) -> list[str]:
    """Which of ``secrets`` some readable file below ``folder`` holds."""
    found: set[str] = set()
    for root, _dirs, files in os.walk(os.path.expandvars(folder)):
        for name in files:
            try:
                with open(os.path.join(root, name), "rb") as fh:
                    data = fh.read(4 * 1024 * 1024)
            except OSError:
                continue
            found.update(s for s in secrets if s.encode() in data)
    return sorted(found)


def _hop(params: dict, answers: dict[str, object]) -> dict:
    """``params`` with each ``"$<method>.<field>"`` value replaced by that field of an earlier answer."""
    out = {}
    for key, value in params.items():
        if isinstance(value, str) and value.startswith("$") and "." in value:
            method, _, name = value[1:].rpartition(".")
            got = answers.get(method)
            value = got.get(name) if isinstance(got, dict) else None
        out[key] = value
    return out


def call_gateway(calls: list[list], answers: dict[str, object]) -> dict[str, str]:
    """Each method called with the run's own token, as the MCP shim would (its answer: ok, or the error; what it
    answered in ``answers``)."""
    from websockets.sync.client import connect, unix_connect

    url, sock = os.environ["REMOTECLAW_GATEWAY_URL"], os.environ.get("REMOTECLAW_GATEWAY_SOCKET")
    out: dict[str, str] = {}
    with (unix_connect(sock, url, open_timeout=5) if sock else connect(url, open_timeout=5)) as ws:
        ws.recv(timeout=5)  # connect.challenge
        ws.send(json.dumps({"type": "req", "id": "c", "method": "connect", "params": {
            "minProtocol": 3, "maxProtocol": 3, "role": "operator", "scopes": ["operator.write"],
            "auth": {"token": os.environ["REMOTECLAW_GATEWAY_TOKEN"]},
            "client": {"id": "pry", "version": "1", "platform": "linux", "mode": "backend"}}}))
        for i, (method, params) in enumerate([["", {}], *calls]):
            if i:
                ws.send(json.dumps({"type": "req", "id": str(i), "method": method,
                                    "params": _hop(params, answers)}))
            while True:
                frame = json.loads(ws.recv(timeout=60))
                if frame.get("type") == "res" and frame.get("id") == (str(i) if i else "c"):
                    break
            if i:
                out[method] = "ok" if frame["ok"] else frame["error"]["message"]
                answers[method] = frame.get("payload") if frame["ok"] else frame.get("error")
    return out


def main() -> int:
    gemini = "--prompt" in sys.argv  # started as Gemini CLI (the prompt in argv): it answers in Gemini's events
    ask = json.loads(sys.argv[sys.argv.index("--prompt") + 1] if gemini else sys.stdin.read())
    if ask.get("keep"):
        with open(os.path.expanduser("~/kept.txt"), "w") as fh:
            fh.write(ask["keep"])
    pids, cmdlines, environs = processes()
    answers: dict[str, object] = {}
    seen = b"\n".join([*environs, *(f"{k}={v}".encode() for k, v in os.environ.items())])
    found = {
        "read": {p: readable(p) for p in ask.get("paths", [])},
        "pids": pids,
        "cmdlines": cmdlines,
        "leaked": [s for s in ask.get("secrets", []) if s.encode() in seen],
        "env": dict(os.environ),
        "home": os.path.expanduser("~"),
        "tmp": sorted(os.listdir("/tmp")),
        "calls": call_gateway(ask["calls"], answers) if ask.get("calls") else {},
        "answers": answers,
        "cat": {p: cat(p) for p in ask.get("cat", [])},
        "tcp": {f"{h}:{p}": reaches(h, p) for h, p in ask.get("tcp", [])},
        "http": [fetch(a) for a in ask.get("http", [])],
        "tunnel": {t: tunnel(t) for t in ask.get("tunnel", [])},
        "wrote": {p: writes(p) for p in ask.get("write", [])},
        "grep": {p: grep(p, ask.get("secrets", [])) for p in ask.get("grep", [])},
    }
    reply = json.dumps(found)
    lines = ({"type": "init", "session_id": "pry"}, {"type": "message", "role": "assistant", "content": reply},
             {"type": "result", "status": "success", "stats": {}}) if gemini else (
        {"type": "system", "subtype": "init", "session_id": "pry"},
        {"type": "result", "subtype": "success", "is_error": False, "session_id": "pry", "result": reply})
    if "exec" in sys.argv[1:] and "--json" in sys.argv:  # started as Codex: its ``exec --json`` events
        lines = ({"type": "thread.started", "thread_id": "pry"},
                 {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": reply}},
                 {"type": "turn.completed", "usage": {"input_tokens": 0, "output_tokens": 0}})
    for obj in lines:
        sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
