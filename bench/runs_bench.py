"""Run-queue and executor benchmark: overhead from a message to the CLI process starting, and runs/second.

Starts a real gateway (temporary state dir, loopback port) whose agent CLI is a tiny shell stand-in
that stamps its start time, prints Claude-style stream-json and exits. Measures:

- overhead: client sends ``agent`` -> the stand-in's first instruction runs (RPC, session rows,
  queue, workspace, config files, spawn). Target: at most 50 ms at the median.
- throughput: S sessions each run N/S turns back to back (the cap allows ``--cap`` at once): runs/second.

``--sandbox off`` runs the same with the agent runs' sandbox off (``agents.defaults.sandbox.mode``): the
difference is what the sandbox costs a run (docs/sandbox.md).

Usage: .venv/bin/python bench/runs_bench.py [--runs 200] [--sessions 8] [--samples 40] [--sandbox all|off]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.ws import operator  # noqa: E402

STAND_IN = """#!/bin/sh
date +%s%N >> "$BENCH_STAMPS"
cat > /dev/null
echo '{"type":"system","subtype":"init","session_id":"bench-session"}'
echo '{"type":"result","subtype":"success","is_error":false,"session_id":"bench-session","result":"ok",\
"usage":{"input_tokens":1,"output_tokens":1}}'
"""


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--cap", type=int, default=4)
    ap.add_argument("--sandbox", choices=("all", "off"), default="all", help="agent runs' sandbox mode")
    report.options(ap, {"runs": 16, "sessions": 4, "samples": 5})
    args = report.parse(ap)
    d = Path(tempfile.mkdtemp(prefix="runs-bench-"))
    cli = d / "stand-in.sh"
    cli.write_text(STAND_IN)
    cli.chmod(0o755)
    stamps = d / "stamps"
    stamps.touch()
    sandbox = {"mode": args.sandbox, "binds": [{"path": str(stamps), "writable": True}]}
    cfg = {"agents": {"list": [{"id": "main", "command": [str(cli)]}], "maxConcurrentRuns": args.cap,
                      "defaults": {"sandbox": sandbox}},
           "logging": {"level": "warning", "consoleLevel": "warning"}}
    with GatewayProcess(d / "gw", config=cfg, env={"BENCH_STAMPS": str(stamps)}) as gw:
        c = await operator(gw.url, gw.token or "")
        overhead = []
        for i in range(args.samples + 3):
            n_before = len(stamps.read_text().splitlines())
            t0 = time.time_ns()
            acc = await c.call("agent", {"message": "hi", "sessionKey": "agent:main:bench:latency",
                                         "idempotencyKey": str(uuid.uuid4())})
            await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 10_000})
            started = int(stamps.read_text().splitlines()[n_before])
            if i >= 3:  # warm-up
                overhead.append((started - t0) / 1e6)
        per = max(args.runs // args.sessions, 1)

        async def session_loop(n: int) -> int:
            done = 0
            for _ in range(per):
                acc = await c.call("agent", {"message": "go", "sessionKey": f"agent:main:bench:s{n}",
                                             "idempotencyKey": str(uuid.uuid4())})
                res = await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 60_000}, timeout=70)
                done += res["status"] == "ok"
            return done

        t0 = time.perf_counter()
        ok = sum(await asyncio.gather(*(session_loop(n) for n in range(args.sessions))))
        elapsed = time.perf_counter() - t0
        total = per * args.sessions
        await c.close()
    overhead.sort()
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}; sandbox {args.sandbox}")
    print(f"overhead message->CLI start: median {statistics.median(overhead):.1f} ms, "
          f"p90 {overhead[int(len(overhead) * 0.9)]:.1f} ms, min {overhead[0]:.1f} ms ({len(overhead)} samples)")
    print(f"throughput: {total} runs ({ok} ok), {args.sessions} sessions each sending its next message when the "
          f"last run ends, cap {args.cap}: {elapsed:.2f} s = {total / elapsed:.1f} runs/s")
    report.write(args.json, {"overhead_median_ms": round(statistics.median(overhead), 1),
                             "overhead_p90_ms": round(overhead[int(len(overhead) * 0.9)], 1),
                             "overhead_min_ms": round(overhead[0], 1), "samples": len(overhead),
                             "runs": total, "runs_ok": ok, "sessions": args.sessions, "cap": args.cap,
                             "runs_per_s": round(total / elapsed, 1), "sandbox": args.sandbox})


if __name__ == "__main__":
    asyncio.run(main())
