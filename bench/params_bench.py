"""Params validation benchmark: what strict, schema-held params cost per request, in process.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/params_bench.py          # ~10 s

Times the dispatcher's params step for three calls, 20,000 times each (median of 5 rounds, microseconds per
call): the lax ``model_validate`` the dispatcher used before, and ``validate_wire`` (strict, on the JSON form)
after ``drop_ignored`` (OpenClaw fields we accept and ignore, each checked against OpenClaw's schema):

- ``logs.tail {limit: 50}``: a small model, nothing ignored;
- ``sessions.list`` as OpenClaw's Control UI sends it (four fields of ours, three ignored ones);
- ``cron.add`` with a full job (an open object read by ``gateway.cron.jobs``; nothing dropped).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from gateway.dispatch.registry import drop_ignored, registry, validate_wire  # noqa: E402
from gateway.methods import load_all  # noqa: E402

CALLS: dict[str, dict[str, Any]] = {
    "logs.tail": {"limit": 50},
    "sessions.list": {"configuredAgentsOnly": True, "archived": False, "includeDerivedTitles": True,
                      "includeLastMessage": True, "agentId": "main", "limit": 50, "sortBy": "updatedAt"},
    "cron.add": {"name": "digest", "schedule": {"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Berlin"},
                 "sessionTarget": "isolated", "wakeMode": "now",
                 "payload": {"kind": "agentTurn", "message": "summarise my inbox"},
                 "delivery": {"mode": "announce", "channel": "last"}},
}
N = 20_000
ROUNDS = 5


def _time(fn: Callable[[], Any], n: int = N) -> float:
    """Median microseconds per call over ROUNDS rounds of n calls."""
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=N, help=f"calls per round ({N})")
    report.options(parser, {"calls": 2000})
    args = report.parse(parser)
    n = args.calls
    load_all()
    figures: dict[str, Any] = {}
    print(f"{'method':16} {'lax (old)':>10} {'strict':>10}   (µs per call, median of {ROUNDS} x {n})")
    for name, raw in CALLS.items():
        spec = registry.get(name)
        assert spec is not None
        strict = _time(lambda spec=spec, raw=raw: validate_wire(spec.params, drop_ignored(spec.name, spec.params,
                                                                                             raw)), n)
        ours = {k: v for k, v in raw.items() if k in spec.params.model_fields} if name == "sessions.list" else raw
        lax = _time(lambda spec=spec, ours=ours: spec.params.model_validate(ours), n)
        print(f"{name:16} {lax:10.1f} {strict:10.1f}")
        figures[name] = {"lax_us": round(lax, 2), "strict_us": round(strict, 2)}
    report.write(args.json, figures)


if __name__ == "__main__":
    main()
