"""Streaming through the model gateway: a long SSE answer arrives byte for byte (status and headers passed), and a
turn cancelled mid-answer cancels the upstream request (the upstream sees its client go)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.credentials.test_model_gateway import REAL_KEY, ask_model, gateway, pry
from tests.support.ws import operator


def long_sse(n: int = 2000) -> bytes:
    """~100 KB of Anthropic SSE, with odd bytes (CRs inside data, UTF-8) that a re-encoding would change."""
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ""}}
    parts = []
    for i in range(n):
        delta["delta"]["text"] = f"piece {i} é ✓"  # type: ignore[index]
        parts.append(f"event: content_block_delta\ndata: {json.dumps(delta, ensure_ascii=False)}\n\n")
    return ("".join(parts)).encode()


class Upstream:
    """A model API whose answer is ``body`` (sent in pieces, ``pause`` s apart); it notes a client that left."""

    def __init__(self, body: bytes, pause: float = 0.0) -> None:
        self.body, self.pause = body, pause
        self.headers: list[dict[str, str]] = []
        self.gone = threading.Event()
        up = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                up.headers.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("x-upstream", "kept")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    step = 16_384
                    for i in range(0, len(up.body), step):
                        piece = up.body[i:i + step]
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.flush()
                        time.sleep(up.pause)
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    up.gone.set()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream(long_sse())
    yield up
    up.close()


async def test_a_long_sse_answer_arrives_byte_for_byte(tmp_path: Path, upstream: Upstream) -> None:
    gw = gateway(tmp_path, upstream.url)
    try:
        found = await pry(gw, owner=False, http=[ask_model("long")])
    finally:
        gw.stop()
    status, _, body = found["http"][0].partition(" ")
    assert status == "200" and len(upstream.body) > 100_000
    assert body == upstream.body.decode(), "the stream changed on its way"
    assert upstream.headers[0]["x-api-key"] == REAL_KEY


@pytest.mark.parametrize("owner", [True, False], ids=["owner-loopback", "stranger-through-the-relay"])
async def test_a_cancelled_turn_cancels_the_upstream_request(tmp_path: Path, owner: bool) -> None:
    up = Upstream(long_sse(20_000), pause=0.5)  # ~1 MB, 16 KB every half second: half a minute of answer
    gw = gateway(tmp_path, up.url)
    key = f"agent:main:cancel:{uuid.uuid4().hex[:6]}"
    try:
        c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
        asker = c if owner else await operator(gw.url, gw.token or "", scopes=["operator.read", "operator.write"])
        acc = await asker.call("chat.send", {"sessionKey": key, "message": json.dumps({"http": [ask_model("slow")]}),
                                             "idempotencyKey": str(uuid.uuid4())})
        for _ in range(100):  # the answer has begun
            if up.headers:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1)
        await c.call("chat.abort", {"sessionKey": key})
        started = time.monotonic()
        gone = await asyncio.to_thread(up.gone.wait, 10)
        took = time.monotonic() - started
        await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 20000}, timeout=30)
        await c.close()
        if asker is not c:
            await asker.close()
    finally:
        gw.stop()
        up.close()
    assert gone and took < 5, took  # the upstream saw its client leave soon after the turn was stopped
