"""What a load generator's WebSocket client costs it per request and answer, three clients side by side.

The crowd benchmarks (``bench/clients_fleet.py``) run their clients on the gateway's own cores, so a client's CPU
sits inside every latency they measure. Compared here, against ``bench/bare_ws.py``'s server (it answers each
message at once, in its own process, so only the client's CPU is counted): ``bench/lean_ws.py`` (RFC 6455 by
hand), the same ``asyncio.Protocol`` on websockets' sans-I/O ``ClientProtocol`` (``SansIoSocket`` below), and the
websockets asyncio client. 200 sockets, each sending ``health`` and waiting for its answer, 100 rounds; five
alternating repetitions, the median printed (docs/benchmarks.md has a run's figures)::

    .venv/bin/python -m bench.client_cost [--sockets 200] [--rounds 100] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

import orjson
import uvloop
from websockets.asyncio.client import ClientConnection, connect
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from bench import lean_ws


class Socket(Protocol):
    def send_text(self, payload: bytes) -> None: ...
    def close(self) -> None: ...


class SansIoSocket(asyncio.Protocol):
    """``bench.lean_ws.LeanSocket``'s interface on websockets' sans-I/O client: the library parses and frames."""

    def __init__(self, url: str, on_text: Callable[[bytes], None]) -> None:
        self.on_text = on_text
        self.transport: asyncio.Transport | None = None
        self.open: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.ws = ClientProtocol(parse_uri(url), max_size=None)
        self._parts: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport (uvloop's is not a subclass)
        self.ws.send_request(self.ws.connect())
        self._flush()

    def _flush(self) -> None:
        assert self.transport is not None
        for data in self.ws.data_to_send():
            if data:
                self.transport.write(data)
            else:
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.open.done():
            self.open.set_exception(exc or ConnectionError("closed during the opening handshake"))

    def send_text(self, payload: bytes) -> None:
        self.ws.send_text(payload)
        self._flush()

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.ws.send_close(1000)
            self._flush()
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        self.ws.receive_data(data)
        for event in self.ws.events_received():
            if isinstance(event, Frame):
                if event.opcode in (Opcode.TEXT, Opcode.CONT):
                    self._parts.append(bytes(event.data))
                    if event.fin:
                        parts, self._parts = self._parts, []
                        self.on_text(parts[0] if len(parts) == 1 else b"".join(parts))
            elif isinstance(event, Response) and not self.open.done():
                if self.ws.handshake_exc is not None:
                    self.open.set_exception(ConnectionError(str(self.ws.handshake_exc)))
                else:
                    self.open.set_result(None)
        self._flush()


class LibrarySocket:
    """The websockets asyncio client behind the same two calls: a reader task per socket, a task per send."""

    def __init__(self, ws: ClientConnection, on_text: Callable[[bytes], None]) -> None:
        self.ws = ws
        self.on_text = on_text
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for message in self.ws:
            self.on_text(message if isinstance(message, bytes) else message.encode())

    def send_text(self, payload: bytes) -> None:
        asyncio.get_running_loop().create_task(self.ws.send(payload, text=True))

    def close(self) -> None:
        self.reader.cancel()
        asyncio.get_running_loop().create_task(self.ws.close())


async def _open(kind: str, url: str, on_text: Callable[[bytes], None]) -> Socket:
    if kind == "lean":
        return await lean_ws.open_socket(url, on_text)
    if kind == "sans-io":
        parts = urlsplit(url)
        _t, sock = await asyncio.get_running_loop().create_connection(
            lambda: SansIoSocket(url, on_text), parts.hostname or "127.0.0.1", parts.port or 80)
        await sock.open
        return sock
    return LibrarySocket(await connect(url, compression=None, max_size=None), on_text)


async def _cost(kind: str, url: str, sockets: int, rounds: int) -> float:
    """Microseconds of this process's CPU per request and answer."""
    loop = asyncio.get_running_loop()
    waiting: dict[int, asyncio.Future[bytes]] = {}

    def answer(i: int) -> Callable[[bytes], None]:
        def on_text(message: bytes) -> None:
            future = waiting.pop(i, None)
            if future is not None and not future.done():
                future.set_result(message)
        return on_text

    crowd = [await _open(kind, url, answer(i)) for i in range(sockets)]
    await asyncio.sleep(0.2)  # the challenges arrive and are dropped
    frame = orjson.dumps({"type": "req", "id": "h", "method": "health"})
    cpu = time.process_time()
    for _ in range(rounds):
        answers = []
        for i, sock in enumerate(crowd):
            answers.append(waiting.setdefault(i, loop.create_future()))
            sock.send_text(frame)
        await asyncio.gather(*answers)
    cost = (time.process_time() - cpu) / (sockets * rounds) * 1e6
    for sock in crowd:
        sock.close()
    await asyncio.sleep(0.1)
    return cost


async def _main(args: argparse.Namespace, port: int) -> dict[str, Any]:
    for _ in range(100):  # the server's first listen
        try:
            _r, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            break
        except OSError:
            await asyncio.sleep(0.1)
    url = f"ws://127.0.0.1:{port}/"
    runs: dict[str, list[float]] = {"lean": [], "sans-io": [], "websockets": []}
    for _ in range(args.repeats):
        for kind, costs in runs.items():
            costs.append(await _cost(kind, url, args.sockets, args.rounds))
    return {kind: {"median_us": round(statistics.median(c), 1), "runs_us": [round(x, 1) for x in c]}
            for kind, c in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sockets", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "bench.bare_ws", "--serve", str(port)])
    try:
        print(json.dumps(uvloop.run(_main(args, port)), indent=2))
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
