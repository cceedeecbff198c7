"""Cron benchmark: idle cost of many jobs, firing lateness, and ``cron.list`` latency.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/cron_bench.py             # --jobs 10000 --due 1000; ~2 min

A real gateway (SQLite) gets ``--jobs`` enabled jobs far in the future (``0 0 1 1 *``) and:

1. **idle CPU**: the gateway process's CPU time over 30 s with all of them enabled (the timer sleeps until
   the earliest one; nothing polls);
2. **cron.list**: latency of 200 calls (first page of 200 jobs; and a text query), one at a time;
3. **lateness**: ``--due`` more jobs falling due within one minute (spread evenly over it), each an agent turn
   of a shell stand-in that answers at once; lateness is each run's recorded start minus the time it was due,
   with ``cron.maxConcurrentRuns`` 32.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.ws import RawClient, operator  # noqa: E402

STAND_IN = """#!/bin/sh
cat > /dev/null
echo '{"type":"system","subtype":"init","session_id":"s1","model":"stand-in","tools":[]}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s1"}'
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def add_many(c: RawClient, jobs: list[dict], in_flight: int = 50) -> list[str]:
    sem = asyncio.Semaphore(in_flight)

    async def one(job: dict) -> str:
        async with sem:
            return (await c.call("cron.add", job))["id"]

    return await asyncio.gather(*(one(j) for j in jobs))


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--due", type=int, default=1_000)
    ap.add_argument("--idle-seconds", type=float, default=30.0)
    report.options(ap, {"jobs": 200, "due": 20, "idle_seconds": 3.0})
    args = report.parse(ap)
    d = Path(tempfile.mkdtemp(prefix="cron-bench-"))
    cli = d / "stand-in.sh"
    cli.write_text(STAND_IN)
    cli.chmod(0o755)
    cfg = {"agents": {"list": [{"id": "main", "command": [str(cli)]}], "maxConcurrentRuns": 32},
           "cron": {"maxConcurrentRuns": 32}, "logging": {"level": "warning", "consoleLevel": "warning"}}
    gw = GatewayProcess(d / "gw", config=cfg)
    gw.start()
    assert gw.proc is not None
    c = await operator(gw.url, gw.token or "")
    t0 = time.perf_counter()
    await add_many(c, [{"name": f"yearly {i}", "schedule": {"kind": "cron", "expr": "0 0 1 1 *"},
                        "payload": {"kind": "agentTurn", "message": f"job {i}"}, "delivery": {"mode": "none"}}
                       for i in range(args.jobs)])
    added_s = time.perf_counter() - t0
    await asyncio.sleep(2)
    cpu0, w0 = cpu_seconds(gw.proc.pid), time.perf_counter()
    await asyncio.sleep(args.idle_seconds)
    idle = (cpu_seconds(gw.proc.pid) - cpu0) / (time.perf_counter() - w0) * 100

    page, search = [], []
    for i in range(200):
        s = time.perf_counter()
        await c.call("cron.list", {"limit": 200})
        page.append((time.perf_counter() - s) * 1000)
        s = time.perf_counter()
        await c.call("cron.list", {"query": f"yearly {i * 37}", "limit": 50})
        search.append((time.perf_counter() - s) * 1000)

    start = int(time.time() * 1000) + 15_000
    spacing = 60_000 / args.due
    due_ids = await add_many(c, [{"name": f"due {i}", "schedule": {"kind": "at", "atMs": int(start + i * spacing)},
                                  "payload": {"kind": "agentTurn", "message": f"due {i}"},
                                  "delivery": {"mode": "none"}} for i in range(args.due)])
    # Measure without disturbing: nothing is asked while the jobs fire; the history is read afterwards.
    await asyncio.sleep(max(0.0, (start + 60_000) / 1000 - time.time()) + 3)
    deadline = time.time() + 120
    while time.time() < deadline:
        status = await c.call("cron.status", {})
        if status["running"] == 0 and status["firedSinceStart"] >= args.due:
            break
        await asyncio.sleep(1)
    late: list[float] = []
    pending = []
    for job_id in due_ids:
        entries = (await c.call("cron.runs", {"id": job_id}))["entries"]
        if entries and entries[-1]["status"] != "running":
            late.append(entries[-1]["startedAtMs"] - entries[-1]["scheduledForMs"])
        else:
            pending.append(job_id)
    await c.close()
    gw.stop(timeout=30)
    print(f"jobs: {args.jobs} enabled (+{args.due} due within a minute); added in {added_s:.1f} s "
          f"({args.jobs / added_s:.0f}/s, 50 in flight)")
    print(f"idle CPU with {args.jobs} jobs: {idle:.2f} % of a core over {args.idle_seconds:.0f} s")
    print(f"cron.list first 200 of {args.jobs + 0}: p50 {statistics.median(page):.1f} ms, p99 {pct(page, 0.99):.1f} ms")
    print(f"cron.list with a query: p50 {statistics.median(search):.1f} ms, p99 {pct(search, 0.99):.1f} ms")
    if late:
        print(f"lateness of {len(late)} firings: p50 {statistics.median(late):.0f} ms, p99 {pct(late, 0.99):.0f} ms, "
              f"max {max(late):.0f} ms" + (f"; {len(pending)} never finished" if pending else ""))
    report.write(args.json, {
        "jobs": args.jobs, "due": args.due, "add_per_s": round(args.jobs / added_s), "idle_cpu_pct": round(idle, 2),
        "list_p50_ms": round(statistics.median(page), 1), "list_p99_ms": round(pct(page, 0.99), 1),
        "query_p50_ms": round(statistics.median(search), 1), "query_p99_ms": round(pct(search, 0.99), 1),
        "late_p50_ms": round(statistics.median(late)) if late else None,
        "late_p99_ms": round(pct(late, 0.99)) if late else None, "never_finished": len(pending)})


if __name__ == "__main__":
    asyncio.run(main())
