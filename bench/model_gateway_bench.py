"""Model gateway benchmark: what fronting a run's model API adds, direct vs through the gateway's ``/model`` route.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python -m bench.model_gateway_bench            # --requests 200 --concurrent 50; ~1 min
    .venv/bin/python -m bench.model_gateway_bench --quick

An upstream on loopback (asyncio, no framework) answers every ``POST /v1/messages`` with the same ~100 KB
Anthropic SSE stream, chunked in 16 KB pieces. A real gateway runs one agent turn whose CLI (a stand-in that
writes its environment to a file, then waits) holds a live stand-in; the benchmark uses that stand-in and base
URL, as Claude Code would. Each request is timed to its first body byte and to its last, directly against the
upstream and through the gateway, one at a time and 50 at once (keep-alive connections, httpx). The gateway's
CPU per MB relayed comes from its ``/proc/<pid>/stat`` over the through-the-gateway runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench import report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.ws import operator  # noqa: E402

HOLDER = """import json, os, sys, time
ask = json.loads(sys.stdin.read())
with open(ask["out"], "w") as fh:
    json.dump(dict(os.environ), fh)
while os.path.exists(ask["out"]):
    time.sleep(0.05)
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "session_id": "b", "result": "done"}))
"""


def sse_body(size: int = 100_000) -> bytes:
    piece = ('event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
             '"delta":{"type":"text_delta","text":"%s"}}\n\n')
    out: list[bytes] = []
    total = i = 0
    while total < size:
        out.append((piece % f"token {i} ").encode())
        total += len(out[-1])
        i += 1
    return b"".join(out)


class Upstream:
    def __init__(self, body: bytes) -> None:
        self.body = body
        self.port = 0

    async def start(self) -> None:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"transfer-encoding: chunked\r\n\r\n")
                for i in range(0, len(self.body), 16_384):
                    chunk = self.body[i:i + 16_384]
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await writer.drain()
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


async def one(client: httpx.AsyncClient, url: str, headers: dict[str, str], expect: int) -> tuple[float, float]:
    body = {"model": "claude-bench", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "x"}]}
    t0 = time.perf_counter()
    first, got = None, 0
    async with client.stream("POST", url, json=body, headers=headers) as res:
        async for chunk in res.aiter_raw():
            if first is None:
                first = time.perf_counter()
            got += len(chunk)
    end = time.perf_counter()
    assert got == expect, (got, expect)
    return ((first or end) - t0) * 1000, (end - t0) * 1000


async def series(url: str, headers: dict[str, str], expect: int, *, requests: int, concurrent: int) -> dict[str, Any]:
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=concurrent + 5), timeout=60) as client:
        for _ in range(10):  # warm: connections open, code paths hot
            await one(client, url, headers, expect)
        samples: list[tuple[float, float]] = []
        per = max(1, requests // concurrent)

        async def worker() -> None:
            for _ in range(per):
                samples.append(await one(client, url, headers, expect))

        await asyncio.gather(*(worker() for _ in range(concurrent)))
    return {"first_byte": report.latency([s[0] for s in samples]), "end": report.latency([s[1] for s in samples])}


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def main(args: argparse.Namespace) -> dict[str, Any]:
    body = sse_body()
    up = Upstream(body)
    await up.start()
    upstream = f"http://127.0.0.1:{up.port}"
    tmp = Path(tempfile.mkdtemp(prefix="mgw-bench-"))
    holder = tmp / "holder.py"
    holder.write_text(HOLDER)
    (tmp / "io").mkdir()
    out = tmp / "io" / "env.json"  # a folder shown to the run read-write (a bind): its environment comes back here
    agent = {"id": "main", "runtime": "claude", "command": [sys.executable, str(holder)],
             "env": {"ANTHROPIC_BASE_URL": upstream, "ANTHROPIC_API_KEY": "sk-bench-real"}}
    sandbox = {"binds": [{"path": str(tmp / "io"), "writable": True}]}
    gw = GatewayProcess(tmp / "state", config={"agents": {"list": [agent], "defaults": {"sandbox": sandbox}}},
                        fork=False).start()
    results: dict[str, Any] = {"answer_bytes": len(body)}
    try:
        c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
        await c.call("chat.send", {"sessionKey": "agent:main:bench", "message": json.dumps({"out": str(out)}),
                                   "idempotencyKey": str(uuid.uuid4())})
        for _ in range(1200):  # the run is under way, its stand-in live, once the file is written
            if out.exists() and out.read_text():
                break
            await asyncio.sleep(0.05)
        env = json.loads(out.read_text())
        through = env["ANTHROPIC_BASE_URL"] + "/v1/messages"
        theirs = {"x-api-key": env["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"}
        mine = {"x-api-key": "sk-bench-real", "anthropic-version": "2023-06-01"}
        assert gw.proc is not None
        pid = int(gw.proc.pid)
        await series(through, theirs, len(body), requests=1, concurrent=1)  # the upstream client is made, once
        for n in (1, args.concurrent):
            requests = args.requests if n == 1 else max(args.requests, n * 4)
            direct = await series(upstream + "/v1/messages", mine, len(body), requests=requests, concurrent=n)
            before = cpu_s(pid)
            fronted = await series(through, theirs, len(body), requests=requests, concurrent=n)
            spent = cpu_s(pid) - before
            mb = (requests + 10) * len(body) / 1e6
            results[f"{n} concurrent"] = {
                "direct": direct, "through gateway": fronted,
                "added p50 first byte (ms)": round(fronted["first_byte"]["p50_ms"] - direct["first_byte"]["p50_ms"], 2),
                "added p50 end (ms)": round(fronted["end"]["p50_ms"] - direct["end"]["p50_ms"], 2),
                "gateway CPU per MB (ms)": round(spent * 1000 / mb, 2)}
        out.unlink()
        await c.close()
    finally:
        gw.stop()
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per series")
    parser.add_argument("--concurrent", type=int, default=50, help="streams at once in the second series")
    report.options(parser, {"requests": 20, "concurrent": 5})
    opts = report.parse(parser)
    figures = asyncio.run(main(opts))
    print(json.dumps(figures, indent=2))
    report.write(opts.json, figures)
