"""Replicas benchmark: one gateway against two behind the same PostgreSQL and Redis.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/replicas_bench.py         # --listeners 1000 --runs 20; ~2 min

For each topology (one replica; two replicas, clients spread over both):

1. **RPC throughput**: 8 clients, each keeping 50 ``health`` calls in flight for 5 s; calls per second.
2. **Event fan-out**: ``--listeners`` operator sockets (spread over the replicas) plus one *slow* client that
   never reads its socket. ``--runs`` agent turns (a stand-in CLI echoing 2 KB) are started one after
   another; for each turn's final ``chat`` event, every listener's arrival time is compared with the first
   arrival: the spread is how long one broadcast takes to reach everybody (target p99 ≤ 50 ms), and it is
   measured with the slow client connected (it must stall no one). With two replicas, half the listeners
   get the event through Redis. A first, uncounted turn warms both sides up. The listeners all live in this
   one client process, on the same two cores as the gateways, so the spread is an upper bound.

``node.invoke`` across replicas is measured by ``bench/node_bench.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import platform
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from bench.client import BenchClient  # noqa: E402
from tests.support import FAKE_CLI  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.postgres import fresh_database  # noqa: E402

REDIS_URL = "redis://127.0.0.1:6379/0"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def throughput(urls: list[str], token: str, seconds: float = 5.0) -> float:
    clients = [await BenchClient.connect(urls[i % len(urls)], token) for i in range(8)]
    done = 0
    stop = time.perf_counter() + seconds

    async def pump(c: BenchClient) -> None:
        nonlocal done
        async def one() -> None:
            nonlocal done
            while time.perf_counter() < stop:
                await c.request("health")
                done += 1
        await asyncio.gather(*(one() for _ in range(50)))

    started = time.perf_counter()
    await asyncio.gather(*(pump(c) for c in clients))
    rate = done / (time.perf_counter() - started)
    for c in clients:
        await c.ws.close()
    return rate


async def fan_out(urls: list[str], token: str, listeners: int, runs: int) -> dict[str, Any]:
    arrivals: dict[str, list[float]] = {}
    complete: dict[str, asyncio.Event] = {}

    def listen(frame: dict[str, Any], at: float) -> None:
        payload = frame.get("payload") or {}
        if frame.get("event") == "chat" and payload.get("state") == "final":
            got = arrivals.setdefault(payload["runId"], [])
            got.append(at)
            if len(got) == listeners:
                complete.setdefault(payload["runId"], asyncio.Event()).set()

    socks = []
    for i in range(listeners):
        c = await BenchClient.connect(urls[i % len(urls)], token)
        c.on_event = listen
        socks.append(c)
    slow = await BenchClient.connect(urls[0], token)
    assert slow._reader is not None
    slow._reader.cancel()  # connected, never reads again: its socket buffers fill up
    driver = await BenchClient.connect(urls[0], token)
    gc.collect()
    gc.freeze()  # 1,000 sockets' objects are long-lived: keep the client's own collector out of the timings
    spreads: list[float] = []
    message = "x" * 2000
    for turn in range(runs + 1):  # the first turn warms up both sides (1,000 sockets' first frames) and is not counted
        sent = await driver.call("chat.send", {"sessionKey": "agent:main:fanout", "message": message,
                                               "idempotencyKey": uuid.uuid4().hex})
        await driver.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 30_000}, timeout=40)
        with contextlib.suppress(TimeoutError):  # what did not arrive is counted as missing below
            await asyncio.wait_for(complete.setdefault(sent["runId"], asyncio.Event()).wait(), 10)
        got = arrivals.get(sent["runId"], [])
        if turn == 0:
            continue
        first = min(got)
        spreads += [(t - first) * 1000 for t in got]
    missing = runs * listeners - len(spreads)
    health = await driver.call("health")  # the gateway still answers with the slow client attached
    for c in (*socks, slow, driver):
        await c.ws.close()
    return {"p50": statistics.median(spreads), "p99": pct(spreads, 0.99), "max": max(spreads),
            "missing": missing, "served": bool(health.get("ok"))}


async def topology(root: Path, db_url: str, replicas: int, args: Any) -> dict[str, Any]:
    token = "bench-" + secrets.token_hex(12)
    env = {"REMOTECLAW_DATABASE_URL": db_url, "REMOTECLAW_REDIS_URL": REDIS_URL,
           "REMOTECLAW_REDIS_PREFIX": f"rc-bench-{secrets.token_hex(4)}"}
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
           "gateway": {"requestRate": {"perSecond": 0}}}  # each client keeps 50 calls in flight: past 1,000/s
    gateways = [GatewayProcess(root / f"r{i}", config=cfg, env=env, token=token).start(30) for i in range(replicas)]
    try:
        urls = [g.url for g in gateways]
        await asyncio.sleep(1)  # every replica subscribed to Redis
        rate = await throughput(urls, token)
        spread = await fan_out(urls, token, args.listeners, args.runs)
        print(f"{replicas} replica(s): health {rate:,.0f} calls/s; fan-out to {args.listeners} listeners + 1 "
              f"slow: spread p50 {spread['p50']:.1f} ms, p99 {spread['p99']:.1f} ms, max {spread['max']:.1f} ms, "
              f"missing {spread['missing']}, still serving: {spread['served']}")
        return {"health_per_s": round(rate), "fanout_p50_ms": round(spread["p50"], 1),
                "fanout_p99_ms": round(spread["p99"], 1), "fanout_max_ms": round(spread["max"], 1),
                "missing": spread["missing"], "served": spread["served"]}
    finally:
        for g in gateways:
            g.stop()


async def main(args: Any) -> None:
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="replicas-bench-") as tmp:
        figures: dict[str, Any] = {}
        for replicas in (1, 2):
            with fresh_database() as db:
                figures[f"replicas_{replicas}"] = await topology(Path(tmp) / str(replicas), db, replicas, args)
    report.write(args.json, figures)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listeners", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    report.options(parser, {"listeners": 100, "runs": 3})
    try:
        import uvloop  # the measuring client is on the same cores: keep its own overhead low

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main(report.parse(parser)))
