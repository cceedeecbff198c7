"""Inside a sandbox with a network of its own: loopback ports that lead to the gateway, then the agent's CLI.

A run with ``network: none`` or ``loopback`` has a loopback of its own, where the gateway's port is not. The MCP
shim reaches the gateway through the relay socket bound into the sandbox (``relay.GatewayRelay``), but an agent
CLI only speaks HTTP to a host and port (``ANTHROPIC_BASE_URL``, ``HTTPS_PROXY``). So the sandbox starts this
script first: it listens on ``127.0.0.1:<port>`` inside, pipes each connection to its Unix socket, starts the CLI
as its child with the same stdio and passes signals on; it exits with the CLI's status.

Run as a file (``python -I -S portal.py PORT=SOCKET ... -- argv``), standard library only: it starts with every
run, before the CLI, so it imports nothing of the gateway.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading

_CHUNK = 65_536


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(_CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                s.shutdown(how)


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        try:
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            up.connect(path)
        except OSError:
            conn.close()
            continue
        for a, b in ((conn, up), (up, conn)):
            threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def main(args: list[str]) -> int:
    split = args.index("--")
    for spec in args[:split]:
        port, _, path = spec.partition("=")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(128)
        threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    child = subprocess.Popen(args[split + 1:])
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda n, _f: child.send_signal(n))
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main(sys.argv[1:]))
