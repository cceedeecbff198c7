"""The floor the gateway's RPC socket is measured against: a bare ``asyncio.Protocol`` over websockets' sans-I/O
``ServerProtocol`` that answers ``connect`` and ``health`` with no work (issue #54: the gateway stays within 15 %
of it, ``health`` sequential and 50 in flight, with the client of ``bench/gateway_bench.py``).

    .venv/bin/python -m bench.bare_ws                  # serve on a free port in a subprocess, measure, print JSON
    .venv/bin/python -m bench.bare_ws --serve 18790    # only serve (uvloop)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
from typing import Any, cast

import orjson
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.server import ServerProtocol

from bench.client import BenchClient
from bench.gateway_bench import _pipelined, _sequential


class BareSocket(asyncio.Protocol):
    """Handshake, a challenge, then every text message answered at once: what any server must do, and nothing
    the gateway adds (no dispatch, no access check, no budgets)."""

    def __init__(self) -> None:
        self.ws = ServerProtocol(max_size=1 << 20)
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        ws = self.ws
        ws.receive_data(data)
        for event in ws.events_received():
            if isinstance(event, Request):
                ws.send_response(ws.accept(event))
                ws.send_text(b'{"type":"event","event":"connect.challenge","payload":{"nonce":"n","ts":0}}')
            elif isinstance(event, Frame) and event.opcode in (Opcode.TEXT, Opcode.BINARY):
                frame = orjson.loads(event.data)
                payload: dict[str, Any] = {"ok": True, "ts": int(time.time() * 1000)}
                ws.send_text(orjson.dumps({"type": "res", "id": frame.get("id"), "ok": True, "payload": payload}))
        out = ws.data_to_send()
        assert self.transport is not None
        self.transport.write(b"".join(out))
        if out and out[-1] == b"":
            self.transport.close()


async def _serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(BareSocket, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


async def _measure(url: str, calls: int, pipelined: int, in_flight: int) -> dict[str, Any]:
    client = await BenchClient.connect(url, "token")
    try:
        await client.call("health")
        return {"health_seq": await _sequential(client, "health", calls),
                "health_pipelined": await _pipelined(client, "health", pipelined, in_flight)}
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--serve", type=int, default=None, help="only serve on this port")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--pipelined", type=int, default=10000)
    p.add_argument("--in-flight", type=int, default=50)
    args = p.parse_args(argv)
    import uvloop

    if args.serve is not None:
        uvloop.run(_serve(args.serve))
        return 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "bench.bare_ws", "--serve", str(port)])
    try:
        time.sleep(1.0)
        result = asyncio.run(_measure(f"ws://127.0.0.1:{port}/", args.calls, args.pipelined, args.in_flight))
    finally:
        proc.terminate()
        proc.wait()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
