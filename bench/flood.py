"""One client floods the gateway with ``health``; how long does another client's connect + ``health`` take?

Run from the repo root::

    .venv/bin/python -m bench.flood                      # 200 rounds quiet, 200 under the flood
    .venv/bin/python -m bench.flood --rounds 500 --root /path/to/another/checkout

The flooder is a process of its own (``--flooder``, also used by tests/gateway/server/test_fairness.py): an
authenticated operator socket written with raw, pipelined, masked ``health`` frames as fast as the kernel takes
them, its answers read as fast as they come (so it is never closed as a slow consumer). It prints, when stopped,
how many answers were ``ok`` and how many ``RATE_LIMITED``. The second client opens a fresh socket, connects
and calls ``health`` once per round, one round after another; its p50/p99 are printed with and without the flood.
See docs/benchmarks.md ("Fairness").
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from websockets.speedups import apply_mask

from bench.client import BenchClient
from bench.procs import stop_tree
from bench.targets import ROOT, RemoteClawTarget

__all__ = ["connect_and_health", "open_operator", "start_flooder", "stop_flooder"]

PROTOCOL = 3
BLOCK = 512
"""``health`` frames per write: enough that the gateway always has a full read waiting."""


def _masked(payload: bytes) -> bytes:
    key = os.urandom(4)
    size = len(payload)
    head = bytes((0x81, 0x80 | size)) if size < 126 else bytes((0x81, 0xFE)) + size.to_bytes(2, "big")
    return head + key + apply_mask(payload, key)


def _read_frame(sock: socket.socket, buf: bytearray) -> bytes:
    """The next whole server frame's payload (unmasked, unfragmented: what the gateway sends)."""
    while True:
        if len(buf) >= 2:
            size, at = buf[1] & 0x7F, 2
            if size == 126 and len(buf) >= 4:
                size, at = int.from_bytes(buf[2:4], "big"), 4
            elif size == 127 and len(buf) >= 10:
                size, at = int.from_bytes(buf[2:10], "big"), 10
            if (size < 126 or at > 2) and len(buf) >= at + size:
                payload = bytes(buf[at:at + size])
                del buf[:at + size]
                return payload
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed during the handshake")
        buf += chunk


def open_operator(url: str, token: str) -> socket.socket:
    """A blocking socket past ``hello-ok`` as an operator with the gateway token, frames by hand."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    sock = socket.create_connection((host, port), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("closed during the upgrade")
        head += chunk
    if not head.startswith(b"HTTP/1.1 101"):
        raise ConnectionError(head.split(b"\r\n", 1)[0].decode())
    buf = bytearray(head.split(b"\r\n\r\n", 1)[1])
    _read_frame(sock, buf)  # connect.challenge
    params = {"minProtocol": PROTOCOL, "maxProtocol": PROTOCOL, "role": "operator",
              "client": {"id": "flood", "version": "1.0", "platform": "linux", "mode": "cli"},
              "scopes": ["operator.read"], "auth": {"token": token}}
    sock.sendall(_masked(json.dumps({"type": "req", "id": "c", "method": "connect", "params": params}).encode()))
    while True:
        frame = json.loads(_read_frame(sock, buf))
        if frame.get("type") == "res":
            if not frame.get("ok"):
                raise ConnectionError(f"connect refused: {frame.get('error')}")
            return sock


_MARKERS = (("ok", b'"id":"f","ok":true'), ("limited", b'"code":"RATE_LIMITED"'))
"""What the flooder counts in its answers (the gateway writes JSON without spaces)."""


class _Stopped(Exception):
    """SIGTERM, in the flooder."""


def _flood(url: str, token: str) -> None:
    """The flooder process: write ``health`` until SIGTERM, then print the answers it counted as JSON."""
    sock = open_operator(url, token)
    sock.settimeout(None)
    block = b"".join(_masked(b'{"type":"req","id":"f","method":"health"}') for _ in range(BLOCK))
    stop = threading.Event()
    counts: dict[str, Any] = {"sent": 0, "ok": 0, "limited": 0, "bytes": 0, "closed": False}

    def write() -> None:
        try:
            while not stop.is_set():
                sock.sendall(block)
                counts["sent"] += BLOCK
        except OSError:
            stop.set()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()

    def stopped(*_: Any) -> None:
        raise _Stopped

    signal.signal(signal.SIGTERM, stopped)
    print("flooding", flush=True)
    tail = b""
    try:
        while True:
            try:
                chunk = sock.recv(1 << 20)  # blocking, like the writer: a timeout here would be the writer's too
            except OSError:
                chunk = b""
            if not chunk:
                counts["closed"] = True
                signal.pause()
            counts["bytes"] += len(chunk)
            seen = tail + chunk  # a marker cut in two by the read is counted once, from the joined bytes
            for key, marker in _MARKERS:
                counts[key] += seen.count(marker) - tail.count(marker)
            tail = chunk[-40:]
    except _Stopped:
        pass
    print(json.dumps(counts), flush=True)
    os._exit(0)  # the writer may be blocked in sendall


def start_flooder(url: str, token: str, *, python: str = sys.executable) -> subprocess.Popen[str]:
    """Start the flooder process; returns once it is connected and flooding."""
    proc = subprocess.Popen([python, "-m", "bench.flood", "--flooder", url, token], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "flooding":
        proc.kill()
        raise RuntimeError(f"flooder did not start: {line!r}")
    return proc


def stop_flooder(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """Stop the flooder; what it counted (``sent``, ``ok``, ``limited`` answers, ``bytes`` read)."""
    proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


async def connect_and_health(url: str, token: str, timeout: float = 30.0) -> float:
    """Seconds for a fresh socket's connect (upgrade, challenge, ``connect``) and one ``health``."""
    t0 = time.perf_counter()
    client = await BenchClient.connect(url, token, timeout=timeout)
    try:
        await client.call("health", timeout=timeout)
        return time.perf_counter() - t0
    finally:
        await client.close()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _rounds(url: str, token: str, n: int) -> dict[str, Any]:
    took = [await connect_and_health(url, token) for _ in range(n)]
    return {"n": n, "p50_ms": round(statistics.median(took) * 1000, 2), "p99_ms": round(_pct(took, 0.99) * 1000, 2),
            "max_ms": round(max(took) * 1000, 2)}


async def _bench(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="flood-bench-") as tmp:
        target = RemoteClawTarget("remoteclaw", Path(tmp) / "state", root=args.root)
        target.prepare()
        proc = target.launch(Path(tmp) / "gateway.log")
        try:
            for _ in range(500):
                try:
                    await connect_and_health(target.url, target.token, timeout=2)
                    break
                except (OSError, TimeoutError, Exception):
                    await asyncio.sleep(0.05)
            await _rounds(target.url, target.token, 20)  # warm
            quiet = await _rounds(target.url, target.token, args.rounds)
            print(f"connect + health, quiet:      {quiet}", flush=True)
            flooder = start_flooder(target.url, target.token, python=args.python)
            try:
                await asyncio.sleep(1.0)
                loud = await _rounds(target.url, target.token, args.rounds)
            finally:
                counts = stop_flooder(flooder)
            print(f"connect + health, with flood: {loud}", flush=True)
            print(f"flooder's answers: {counts}", flush=True)
        finally:
            stop_tree(proc)


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--flooder":
        _flood(sys.argv[2], sys.argv[3])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=200, help="connect + health rounds, quiet and flooded")
    p.add_argument("--root", type=Path, default=ROOT, help="the checkout whose gateway is measured")
    p.add_argument("--python", default=sys.executable, help="the flooder's interpreter")
    asyncio.run(_bench(p.parse_args()))


if __name__ == "__main__":
    main()
