"""Benchmark our gateway against the real OpenClaw gateway, with one client for both.

Run from the repo root (after ``scripts/install-openclaw``)::

    .venv/bin/python -m bench.gateway_bench            # both gateways, ~3-5 minutes
    .venv/bin/python -m bench.gateway_bench --only remoteclaw --quick

Each run writes ``bench/.results/<UTC time>.json`` and prints a table with the ratios.
See docs/benchmarks.md for what each number means.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench.client import BenchClient, HandshakeError
from bench.procs import stop_tree, tree_rss_mb
from bench.targets import ROOT, OpenClawTarget, RemoteClawTarget, Target

RESULTS = ROOT / "bench" / ".results"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


async def _until_connected(target: Target, proc: subprocess.Popen[bytes], t0: float, limit: float) -> float:
    """Seconds from launch until a full handshake succeeds (polling every 10 ms)."""
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{target.name} exited with {proc.returncode} during start")
        try:
            client = await BenchClient.connect(target.url, target.token, timeout=2.0)
        except (OSError, HandshakeError, TimeoutError):
            if time.perf_counter() - t0 > limit:
                raise TimeoutError(f"{target.name} not reachable after {limit:.0f}s") from None
            await asyncio.sleep(0.01)
            continue
        elapsed = time.perf_counter() - t0
        await client.close()
        return elapsed


async def _launch(target: Target, log: Path) -> tuple[subprocess.Popen[bytes], float]:
    t0 = time.perf_counter()
    proc = target.launch(log)
    try:
        return proc, await _until_connected(target, proc, t0, limit=120)
    except BaseException:
        stop_tree(proc)
        raise


async def _connects(target: Target, n: int) -> dict[str, Any]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        client = await BenchClient.connect(target.url, target.token)
        times.append(time.perf_counter() - t)
        await client.close()
    return {"n": n, "median_ms": _ms(statistics.median(times)), "p95_ms": _ms(_pct(times, 0.95))}


async def _sequential(client: BenchClient, method: str, n: int) -> dict[str, Any]:
    times = []
    start = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        await client.call(method)
        times.append(time.perf_counter() - t)
    total = time.perf_counter() - start
    return {"n": n, "p50_ms": _ms(_pct(times, 0.5)), "p95_ms": _ms(_pct(times, 0.95)),
            "req_per_s": round(n / total, 1)}


async def _pipelined(client: BenchClient, method: str, n: int, in_flight: int) -> dict[str, Any]:
    """``n`` calls with ``in_flight`` outstanding at all times on one socket."""
    remaining = n

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await client.call(method, timeout=60)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    total = time.perf_counter() - start
    return {"n": n, "in_flight": in_flight, "req_per_s": round(n / total, 1)}


def _cold_cli(target: Target, n: int) -> dict[str, Any]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        out = subprocess.run(target.cli_argv("health"), env=target.env(), cwd=target.cwd(),
                             capture_output=True, timeout=120, check=False)
        times.append(time.perf_counter() - t)
        if out.returncode != 0:
            raise RuntimeError(f"{target.name} CLI failed ({out.returncode}): {out.stderr.decode()[-500:]}")
        orjson.loads(out.stdout)  # it must print JSON
    return {"n": n, "median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3)}


async def run_target(target: Target, args: argparse.Namespace, log: Path) -> dict[str, Any]:
    print(f"== {target.name} {target.version()}", flush=True)
    target.prepare()
    if isinstance(target, RemoteClawTarget) and (target.root / "gateway/server/request_rate.py").exists():
        # One socket's throughput is what is measured here: ours limits a socket to gateway.requestRate (1,000
        # requests/s by default; OpenClaw has no such limit), which this bench lifts (docs/benchmarks.md).
        (target.state / "remoteclaw.json").write_text('{"gateway": {"requestRate": {"perSecond": 0}}}')
    result: dict[str, Any] = {"version": target.version()}
    # First launch: empty state (migrations, first-run setup). Second: the state it left behind.
    proc, first = await _launch(target, log)
    stop_tree(proc)
    if isinstance(target, RemoteClawTarget):  # that first launch also wrote the bytecode cache
        proc, first = await _launch(target, log)
        stop_tree(proc)
    proc, warm = await _launch(target, log)
    result["start_first_s"] = round(first, 3)
    result["start_s"] = round(warm, 3)
    print(f"   start: first {first:.2f}s, again {warm:.2f}s", flush=True)
    try:
        await asyncio.sleep(args.idle)
        result["idle_rss_mb"] = round(tree_rss_mb(proc.pid), 1)
        print(f"   idle RSS after {args.idle:.0f}s: {result['idle_rss_mb']} MiB", flush=True)
        result["connect"] = await _connects(target, args.connects)
        print(f"   connect+handshake: {result['connect']}", flush=True)
        client = await BenchClient.connect(target.url, target.token)
        try:
            await client.call("health")  # warm-up
            result["health_seq"] = await _sequential(client, "health", args.calls)
            print(f"   health sequential: {result['health_seq']}", flush=True)
            result["health_pipelined"] = await _pipelined(client, "health", args.pipelined, args.in_flight)
            print(f"   health pipelined: {result['health_pipelined']}", flush=True)
        finally:
            await client.close()
        result["rss_after_load_mb"] = round(tree_rss_mb(proc.pid), 1)
        result["cli_health"] = await asyncio.to_thread(_cold_cli, target, args.cold)
        print(f"   cold CLI health: {result['cli_health']}", flush=True)
    finally:
        stop_tree(proc)
    return result


def _ratios(ours: dict[str, Any], ref: dict[str, Any]) -> dict[str, float]:
    def r(a: float, b: float) -> float:
        return round(a / b, 2) if b else float("nan")

    return {
        "start_speedup": r(ref["start_s"], ours["start_s"]),
        "start_first_speedup": r(ref["start_first_s"], ours["start_first_s"]),
        "memory_fraction": r(ours["idle_rss_mb"], ref["idle_rss_mb"]),
        "connect_speedup": r(ref["connect"]["median_ms"], ours["connect"]["median_ms"]),
        "health_seq_throughput": r(ours["health_seq"]["req_per_s"], ref["health_seq"]["req_per_s"]),
        "health_pipelined_throughput": r(ours["health_pipelined"]["req_per_s"],
                                         ref["health_pipelined"]["req_per_s"]),
        "cli_speedup": r(ref["cli_health"]["median_s"], ours["cli_health"]["median_s"]),
    }


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        mem_kb = 0
    node = ""
    try:
        from bench.targets import find_openclaw

        node = subprocess.run([str(find_openclaw()[0]), "--version"], capture_output=True, text=True,
                              check=False).stdout.strip()
    except (OSError, FileNotFoundError):
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "ram_gib": round(mem_kb / 1024 / 1024, 1),
            "python": platform.python_version(), "node": node, "kernel": platform.release(),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()]}


def _table(results: dict[str, Any]) -> str:
    ours, ref = results.get("remoteclaw"), results.get("openclaw")
    rows = [
        ("launch -> first connect (s)", "start_s", None),
        ("  same, empty state dir (s)", "start_first_s", None),
        ("idle RSS, tree (MiB)", "idle_rss_mb", None),
        ("connect+handshake median (ms)", "connect", "median_ms"),
        ("health sequential p50 (ms)", "health_seq", "p50_ms"),
        ("health sequential p95 (ms)", "health_seq", "p95_ms"),
        ("health sequential (req/s)", "health_seq", "req_per_s"),
        ("health 50 in flight (req/s)", "health_pipelined", "req_per_s"),
        ("cold CLI `gateway call health` (s)", "cli_health", "median_s"),
    ]
    lines = [f"{'':38} {'remoteclaw':>12} {'openclaw':>12}"]
    for label, key, sub in rows:
        cells = []
        for res in (ours, ref):
            value = res.get(key) if res else None
            if sub and isinstance(value, dict):
                value = value.get(sub)
            cells.append("-" if value is None else str(value))
        lines.append(f"{label:38} {cells[0]:>12} {cells[1]:>12}")
    if "ratios" in results:
        lines.append("ratios: " + ", ".join(f"{k}={v}" for k, v in results["ratios"].items()))
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", choices=["remoteclaw", "openclaw"], help="benchmark one gateway only")
    p.add_argument("--connects", type=int, default=200, help="sequential connect+handshake rounds (200)")
    p.add_argument("--calls", type=int, default=2000, help="sequential health calls (2000)")
    p.add_argument("--pipelined", type=int, default=10000, help="health calls in the pipelined run (10000)")
    p.add_argument("--in-flight", type=int, default=50, help="requests outstanding in the pipelined run (50)")
    p.add_argument("--cold", type=int, default=20, help="cold CLI invocations per gateway (20)")
    p.add_argument("--idle", type=float, default=10.0, help="seconds to idle before reading RSS (10)")
    p.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    p.add_argument("--remoteclaw-root", type=Path, default=ROOT, help="source tree of the remoteclaw to run")
    p.add_argument("--out", "--json", type=Path, default=None,
                   help="result file (default bench/.results/<time>.json)")
    args = p.parse_args(argv)
    if args.quick:
        args.connects, args.calls, args.pipelined, args.cold, args.idle = 20, 200, 1000, 3, 2.0
    return args


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "machine": machine(),
                               "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    with tempfile.TemporaryDirectory(prefix="rc-bench-") as tmp:
        base = Path(tmp)
        if args.only in (None, "remoteclaw"):
            target = RemoteClawTarget("remoteclaw", base / "remoteclaw", root=args.remoteclaw_root.resolve())
            results["remoteclaw"] = await run_target(target, args, base / "remoteclaw.log")
        if args.only in (None, "openclaw"):
            target = OpenClawTarget("openclaw", base / "openclaw")
            try:
                results["openclaw"] = await run_target(target, args, base / "openclaw.log")
            except Exception:
                log = base / "openclaw.log"
                print(log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)", file=sys.stderr)
                raise
    # Other work on the machine skews every number: keep the load next to the results.
    results["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    if "remoteclaw" in results and "openclaw" in results:
        results["ratios"] = _ratios(results["remoteclaw"], results["openclaw"])
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = asyncio.run(main_async(args))
    out = args.out or RESULTS / (results["when"].replace(":", "").replace("+0000", "Z") + ".json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    print(_table(results))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
