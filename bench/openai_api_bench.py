"""OpenAI-compatible API benchmark: what the door adds to a turn over the web chat's, and 200 streams at once.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/openai_api_bench.py            # --samples 40 --streams 200; about two minutes

A real gateway (SQLite) whose agent is the stand-in CLI (``tests/support/fake_cli.py``, an echo), with
``api.openai.enabled`` and no request rate limit. Measured, interleaved one turn at a time, each in its own
conversation's session, from the request until the answer is whole in the client:

1. web chat: ``chat.send`` on an operator socket, until the run's final ``chat`` event (what the page waits for);
2. ``POST /v1/chat/completions`` whole, with the ``openai`` SDK (``AsyncOpenAI``);
3. the same with ``stream: true``, until ``data: [DONE]`` (and the time to the first content chunk).

Then ``--streams`` streamed completions at once, each a conversation of its own (so each is its own turn;
``agents.maxConcurrentRuns`` caps how many CLIs run at a time, ``--runs``): how many finished, how long the whole
took, each stream's time to its first content chunk and to its end (p50/p99), and the gateway's memory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402

from bench import report  # noqa: E402
from tests.support import FAKE_CLI  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.ws import RawClient, operator  # noqa: E402


async def webchat_turn(ws: RawClient, text: str) -> float:
    key = f"agent:main:webchat:bench-{uuid.uuid4().hex[:10]}"
    t0 = time.perf_counter()
    sent = await ws.call("chat.send", {"sessionKey": key, "message": text, "idempotencyKey": uuid.uuid4().hex})
    while True:
        ev = await ws.next_event("chat", timeout=60)
        payload = ev.get("payload") or {}
        if payload.get("runId") == sent["runId"] and payload.get("state") in ("final", "error", "aborted"):
            assert payload["state"] == "final", payload
            return (time.perf_counter() - t0) * 1000


async def api_whole(api: openai.AsyncOpenAI, text: str) -> float:
    t0 = time.perf_counter()
    done = await api.chat.completions.create(model="main", messages=[{"role": "user", "content": text}],
                                             extra_headers={"X-Remoteclaw-Conversation": uuid.uuid4().hex[:16]})
    assert done.choices[0].message.content == f"echo: {text}", done
    return (time.perf_counter() - t0) * 1000


async def api_stream(api: openai.AsyncOpenAI, text: str) -> tuple[float, float]:
    """(ms to the first content chunk, ms to the end of the stream)."""
    t0 = time.perf_counter()
    first: float | None = None
    stream = await api.chat.completions.create(model="main", messages=[{"role": "user", "content": text}],
                                               stream=True,
                                               extra_headers={"X-Remoteclaw-Conversation": uuid.uuid4().hex[:16]})
    got = ""
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            first = first if first is not None else time.perf_counter()
            got += chunk.choices[0].delta.content
    end = time.perf_counter()
    assert got == f"echo: {text}", got
    return ((first or end) - t0) * 1000, (end - t0) * 1000


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def main(samples: int, streams: int, runs: int, json_path: Path | None) -> None:
    config = {"agents": {"maxConcurrentRuns": runs, "list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "api": {"openai": {"enabled": True, "requestsPerMinute": 0}}, "logging": {"level": "warning"}}
    with tempfile.TemporaryDirectory() as tmp, GatewayProcess(Path(tmp) / "gw", config=config) as gw:
        ws = await operator(gw.url, gw.token or "")
        # the SDK's own connection pool holds 1,000 connections: enough for every stream at once
        api = openai.AsyncOpenAI(base_url=gw.http + "/v1", api_key=gw.token, max_retries=0, timeout=600)
        try:
            for _ in range(3):  # warm: imports, the first sandbox, the first spawn
                await webchat_turn(ws, "warm")
                await api_whole(api, "warm")
            web: list[float] = []
            whole: list[float] = []
            first: list[float] = []
            streamed: list[float] = []
            for i in range(samples):
                web.append(await webchat_turn(ws, f"hello {i}"))
                whole.append(await api_whole(api, f"hello {i}"))
                f, e = await api_stream(api, f"hello {i}")
                first.append(f)
                streamed.append(e)
            pid = gw.proc.pid if gw.proc is not None else os.getpid()
            before = rss_mb(pid)
            t0 = time.perf_counter()
            outcomes = await asyncio.gather(*(api_stream(api, f"many {i}") for i in range(streams)),
                                            return_exceptions=True)
            took = time.perf_counter() - t0
            after = rss_mb(pid)
        finally:
            await ws.close()
            await api.close()
    ok = [o for o in outcomes if isinstance(o, tuple)]
    failed = [o for o in outcomes if not isinstance(o, tuple)]
    figures: dict[str, Any] = {
        "machine": f"{os.cpu_count()} cpus, {platform.processor() or platform.machine()}, Python "
                   f"{platform.python_version()}, load {os.getloadavg()[0]:.1f}",
        "webchat_turn": report.latency(web), "api_whole": report.latency(whole),
        "api_stream_first_chunk": report.latency(first), "api_stream_end": report.latency(streamed),
        "added_whole_p50_ms": round(report.latency(whole)["p50_ms"] - report.latency(web)["p50_ms"], 2),
        "added_whole_p99_ms": round(report.latency(whole)["p99_ms"] - report.latency(web)["p99_ms"], 2),
        "added_stream_p50_ms": round(report.latency(streamed)["p50_ms"] - report.latency(web)["p50_ms"], 2),
        "added_stream_p99_ms": round(report.latency(streamed)["p99_ms"] - report.latency(web)["p99_ms"], 2),
        "concurrent": {"streams": streams, "maxConcurrentRuns": runs, "ok": len(ok), "failed": len(failed),
                       "errors": sorted({type(e).__name__ + ": " + str(e)[:120] for e in failed})[:5],
                       "wall_s": round(took, 2), "first_chunk": report.latency([o[0] for o in ok]),
                       "end": report.latency([o[1] for o in ok]), "rss_before_mb": round(before, 1),
                       "rss_after_mb": round(after, 1)},
    }
    for name in ("webchat_turn", "api_whole", "api_stream_first_chunk", "api_stream_end"):
        f = figures[name]
        print(f"{name:24} p50 {f['p50_ms']:8.1f} ms  p99 {f['p99_ms']:8.1f} ms  (n={f['n']})")
    print(f"added over the web chat: whole p50 {figures['added_whole_p50_ms']} ms, p99 {figures['added_whole_p99_ms']}"
          f" ms; streamed p50 {figures['added_stream_p50_ms']} ms, p99 {figures['added_stream_p99_ms']} ms")
    c = figures["concurrent"]
    print(f"{streams} streams at once (maxConcurrentRuns {runs}): {c['ok']} ok, {c['failed']} failed in "
          f"{c['wall_s']} s; first chunk p50 {c['first_chunk']['p50_ms']} ms p99 {c['first_chunk']['p99_ms']} ms; "
          f"end p50 {c['end']['p50_ms']} ms p99 {c['end']['p99_ms']} ms; gateway RSS {c['rss_before_mb']} -> "
          f"{c['rss_after_mb']} MB {c['errors'] or ''}")
    print(figures["machine"])
    report.write(json_path, figures)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--runs", type=int, default=8, help="agents.maxConcurrentRuns for the concurrent part")
    report.options(parser, {"samples": 5, "streams": 20})
    args = report.parse(parser)
    asyncio.run(main(args.samples, args.streams, args.runs, args.json))
