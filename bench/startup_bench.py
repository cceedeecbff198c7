"""Start-up cost of the gateway by install: core only (no extras) beside every extra, side by side.

Capabilities should cost nothing until they are used, so both installs should start alike. For each install it
measures launch -> first successful connect (median over repeated launches on a state dir that already exists:
an ordinary restart), resident memory after idling, and the import profile of one start (``-X importtime``:
self time summed by top-level package, and whether any optional library was loaded).

Run from the repo root::

    .venv/bin/python -m bench.startup_bench                      # builds .cache/core-venv-* on first use
    .venv/bin/python -m bench.startup_bench --root /path/to/other/checkout   # e.g. before a change

The core venv is the one ``tests/test_core_install.py`` uses (``tests/support/core_venv.py``, an editable
install); ``--root`` runs another source tree with the same two interpreters. Results: printed, and
``bench/.results/startup-*.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench import report
from bench.gateway_bench import _launch, machine
from bench.procs import stop_tree, tree_rss_mb
from bench.targets import ROOT, RemoteClawTarget
from tests.support.core_venv import core_python

OPTIONAL = ("av", "telegram", "discord", "playwright", "asyncpg", "redis", "numpy", "openai", "pocketsphinx",
            "elevenlabs", "edge_tts", "alembic", "jsonschema")
"""Libraries a plain start should not need (alembic: only when a migration is due; jsonschema: plugin manifests)."""


def import_profile(python: Path, root: Path, state: Path) -> dict[str, Any]:
    """One start under ``-X importtime``: ms of self time per top-level package, and optional libraries loaded."""
    target = RemoteClawTarget("profile", state, python=str(python), root=root)
    env = target.env()
    argv = [str(python), "-X", "importtime", *target.server_argv()[1:]]
    proc = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, text=True)
    time.sleep(6)  # started and idle by then on this machine; the profile covers everything imported so far
    stop_tree(proc)
    _, err = proc.communicate(timeout=30)
    per_package: Counter[str] = Counter()
    modules = 0
    for line in err.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if found:
            modules += 1
            per_package[found.group(2).split(".")[0]] += int(found.group(1))
    return {"modules": modules, "import_ms": round(sum(per_package.values()) / 1000, 1),
            "top": {k: round(v / 1000, 1) for k, v in per_package.most_common(12)},
            "optional_loaded": sorted(m for m in OPTIONAL if m in per_package)}


async def measure(name: str, python: Path, root: Path, launches: int, idle: float) -> dict[str, Any]:
    state = Path(tempfile.mkdtemp(prefix=f"rc-startup-{name}-"))
    target = RemoteClawTarget(name, state, python=str(python), root=root)
    target.prepare()
    log = state / "gateway.log"
    try:
        proc, _ = await _launch(target, log)  # first start: migrations, bytecode
    except Exception as exc:  # a tree that cannot start (before #26, core) is a result
        return {"error": f"{type(exc).__name__}: {exc}", "log": log.read_text(errors="replace")[-600:]}
    stop_tree(proc)
    times = []
    for _ in range(launches):
        proc, took = await _launch(target, log)
        times.append(took)
        if len(times) < launches:
            stop_tree(proc)
    await asyncio.sleep(idle)
    rss = tree_rss_mb(proc.pid)
    stop_tree(proc)
    return {"start_median_s": round(statistics.median(times), 3), "start_min_s": round(min(times), 3),
            "idle_rss_mb": round(rss, 1), "profile": import_profile(python, root, state)}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    installs = {"core": core_python, "all extras": lambda: Path(sys.executable)}
    installs = {name: find for name, find in installs.items() if name.split()[0] in args.installs}
    out: dict[str, Any] = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "machine": machine(),
                           "root": str(args.root), "installs": {}}
    for name, find in installs.items():
        python = find()
        print(f"== {name} ({python})", flush=True)
        result = await measure(name.replace(" ", "-"), python, args.root, args.launches, args.idle)
        out["installs"][name] = result
        print(json.dumps(result, indent=2), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, default=ROOT, help="source tree to start (default: this one)")
    p.add_argument("--launches", type=int, default=7, help="restarts timed per install (7)")
    p.add_argument("--installs", nargs="+", choices=("core", "all"), default=["core", "all"],
                   help="which installs to start (both)")
    p.add_argument("--idle", type=float, default=5.0, help="seconds idle before reading RSS (5)")
    p.add_argument("--out", "--json", type=Path, default=None,
                   help="result file (default bench/.results/startup-<time>.json)")
    report.options(p, {"launches": 2, "idle": 1.0}, json_flag=False)
    args = report.parse(p, argv)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    result = asyncio.run(main_async(args))
    results = ROOT / "bench" / ".results"
    results.mkdir(parents=True, exist_ok=True)
    path = args.out or results / f"startup-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
