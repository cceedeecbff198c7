"""Crash recovery benchmark: from restart to the first recovered turn starting, with 100 interrupted sessions.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/recovery_bench.py        # --sessions 100; ~20 s

A real gateway whose agent CLI is a tiny shell stand-in (it stamps the time it starts, then works for a
minute) gets one message in each of 100 sessions: ``agents.maxConcurrentRuns`` (4) turns run, the rest
queue. Then ``kill -9``, and a restart on the same state: the time measured is from spawning the new
process to the first stand-in started by recovery, plus how long until every session's turn is back in
the queue (the ``recovered`` log line), so the cost of recovery itself shows apart from process start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.ws import operator  # noqa: E402

STAND_IN = """#!/bin/sh
date +%s%N >> "$BENCH_STAMPS"
cat > /dev/null
sleep 60
"""


def stamps(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=100)
    report.options(ap, {"sessions": 10})
    args = report.parse(ap)
    d = Path(tempfile.mkdtemp(prefix="recovery-bench-"))
    cli = d / "stand-in.sh"
    cli.write_text(STAND_IN)
    cli.chmod(0o755)
    stamp_file = d / "stamps"
    cfg = {"agents": {"list": [{"id": "main", "command": [str(cli)]}]},
           "gateway": {"shutdownGraceSeconds": 0}, "logging": {"level": "info"}}
    gw = GatewayProcess(d / "gw", config=cfg, env={"BENCH_STAMPS": str(stamp_file)})
    gw.start()
    client = await operator(gw.url, gw.token or "")
    for i in range(args.sessions):
        await client.call("chat.send", {"sessionKey": f"agent:main:bench:s{i}", "message": f"job {i}",
                                        "idempotencyKey": f"k{i}"})
    while len(stamps(stamp_file)) < 4:  # noqa: ASYNC110 - polling a file the stand-ins write
        await asyncio.sleep(0.05)
    await client.close()
    assert gw.proc is not None
    gw.proc.kill()
    gw.proc.wait()
    gw.proc = None
    before = len(stamps(stamp_file))
    t0 = time.time_ns()
    gw.start()
    while len(stamps(stamp_file)) <= before:  # noqa: ASYNC110 - polling a file the stand-ins write
        await asyncio.sleep(0.01)
    first_ms = (stamps(stamp_file)[before] - t0) / 1e6
    logs = (d / "gw" / "logs" / "gateway.log").read_text().splitlines()
    rec = [json.loads(line) for line in logs if "recovered the turns" in line][-1]
    client = await operator(gw.url, gw.token or "")
    status = await client.call("status")
    await client.close()
    gw.stop(timeout=20)
    print(f"sessions: {args.sessions} (4 running, {args.sessions - 4} queued at the kill)")
    print(f"restart -> first recovered turn started: {first_ms:.0f} ms")
    print(f"recovered: {status['recoveredAtStart']}  (log: {rec.get('timestamp', '')})")
    report.write(args.json, {"sessions": args.sessions, "restart_to_first_turn_ms": round(first_ms),
                             "recovered": status["recoveredAtStart"]})


if __name__ == "__main__":
    asyncio.run(main())
