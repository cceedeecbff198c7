"""Every benchmark in bench/ in one command: repeated, medians, peer ratios, JSON and a summary in the docs.

Run from the repo root::

    .venv/bin/python -m bench.run_all                      # every benchmark, 3 times each, full sizes
    .venv/bin/python -m bench.run_all --quick --repeat 1   # a smoke run: each script's smallest sizes
    .venv/bin/python -m bench.run_all --only gateway,shim  # some of them (--skip leaves some out)

Each benchmark runs as its own subprocess (``python -m bench.<name>_bench --json FILE``), so one that
crashes or lacks a prerequisite is reported and the others go on. Prerequisites are checked first and named
when missing (the OpenClaw install, Chromium, PostgreSQL, Redis, espeak-ng, the TypeScript MCP SDK). Each
figure is the median over ``--repeat`` runs; a peer ratio (ours ÷ OpenClaw's, ours ÷ the ``mcp`` SDK's or
the TypeScript SDK's) is computed within each run, from the same client in the same process, and its median
reported. Results go to ``bench/.results/run_all-<time>.json`` and, unless ``--no-docs``, to the generated
block of docs/benchmarks.md between the ``bench:run_all`` markers.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / ".results"
DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench:run_all:begin -->", "<!-- bench:run_all:end -->"
SHIM_SDKS = {"mcp SDK": "mcp Python SDK (low-level Server)", "TS SDK": "TypeScript SDK on Node (low-level Server)"}


# ---------------------------------------------------------------- prerequisites

def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _openclaw() -> str | None:
    from bench.targets import find_openclaw

    try:
        find_openclaw()
    except FileNotFoundError:
        return "OpenClaw (scripts/install-openclaw)"
    return None


def _chromium() -> str | None:
    if not (Path("/usr/bin/chromium").exists() or shutil.which("chromium")):
        return "Chromium (/usr/bin/chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "Playwright (pip install -e '.[dev]')"
    return None


def _postgres() -> str | None:
    return None if _port_open(5432) else "PostgreSQL on 127.0.0.1:5432"


def _redis() -> str | None:
    return None if _port_open(6379) else "Redis on 127.0.0.1:6379"


def _espeak() -> str | None:
    return None if shutil.which("espeak-ng") else "espeak-ng (apt-get install espeak-ng)"


def _desktop() -> str | None:
    if not (shutil.which("Xvfb") and shutil.which("zenity") and shutil.which("dbus-launch")
            and Path("/usr/libexec/at-spi-bus-launcher").exists()):
        return "xvfb, at-spi2-core, dbus-x11, zenity (scripts/setup-tests)"
    try:
        import cua_driver  # noqa: F401
    except ImportError:
        return "cua-driver (pip install -e '.[desktop]')"
    return None


def _opencode() -> str | None:
    found = (ROOT / ".agent-clis" / "node_modules" / ".bin" / "opencode").exists()
    return None if found else "OpenCode (scripts/install-agent-clis opencode)"


def _ts_sdk() -> str | None:
    sdk = ROOT / ".tools" / "mcp" / "node_modules" / "@modelcontextprotocol" / "sdk"
    return None if sdk.exists() else "TypeScript MCP SDK (scripts/install-mcp-inspector)"


# ---------------------------------------------------------------- the benchmarks

@dataclass(frozen=True)
class Bench:
    """One script: what it needs, what its headline figures are, and which peer it is compared with."""

    name: str
    needs: tuple[Callable[[], str | None], ...] = ()
    """Missing one of these: the benchmark is skipped, the reason named."""
    optional: tuple[tuple[Callable[[], str | None], tuple[str, ...]], ...] = ()
    """Missing one of these: the benchmark runs with the extra arguments given (e.g. without its peer)."""
    headline: tuple[tuple[str, str], ...] = ()
    """(label, flattened key) of the figures shown in the summary table."""
    peers: tuple[tuple[str, str, str], ...] = ()
    """(peer name, our key, the peer's key): the ratio ours ÷ theirs, computed within each run."""
    normalise: Callable[[Any], Any] | None = None

    @property
    def module(self) -> str:
        return f"bench.{self.name}_bench"


def _clients_rows(rows: Any) -> Any:
    """clients_bench writes a list of rows: key them by ``<clients>-<scenario>``."""
    return {f"{r['clients']}-{r['scenario']}": r for r in rows} if isinstance(rows, list) else rows


_GW = (("gateway start (s)", "start_s"), ("gateway idle RSS (MiB)", "idle_rss_mb"),
       ("connect + handshake median (ms)", "connect/median_ms"), ("`health` sequential p50 (ms)", "health_seq/p50_ms"),
       ("`health` sequential (req/s)", "health_seq/req_per_s"),
       ("`health` 50 in flight (req/s)", "health_pipelined/req_per_s"),
       ("cold CLI `gateway call health` (s)", "cli_health/median_s"))
_SHIM = "servers/remoteclaw shim/"
_SHIM_FIGS = (("shim cold start to `initialize` (ms)", "cold_ms/initialize/p50"),
              ("shim cold start to `tools/list` (ms)", "cold_ms/tools/list/p50"),
              ("shim cold start to first call, sent at once (ms)", "cold_ms/first call/p50"),
              ("shim first call from spawn, model's pause excluded (ms)", "cold_ms/first call, pause excluded/p50"),
              ("shim `tools/call` p50 (ms)", "call_ms/p50"))

BENCHES: tuple[Bench, ...] = (
    Bench("gateway", optional=((_openclaw, ("--only", "remoteclaw")),),
          headline=tuple((label, f"remoteclaw/{key}") for label, key in _GW),
          peers=tuple(("OpenClaw", f"remoteclaw/{key}", f"openclaw/{key}") for _, key in _GW)),
    Bench("shim", optional=((_ts_sdk, ()),),
          headline=tuple((label, _SHIM + key) for label, key in _SHIM_FIGS),
          peers=tuple((peer, _SHIM + key, f"servers/{server}/{key}")
                      for peer, server in SHIM_SDKS.items() for _, key in _SHIM_FIGS)),
    Bench("startup", headline=(("start, core install (s)", "installs/core/start_median_s"),
                               ("idle RSS, core install (MiB)", "installs/core/idle_rss_mb"),
                               ("start, all extras (s)", "installs/all extras/start_median_s"),
                               ("idle RSS, all extras (MiB)", "installs/all extras/idle_rss_mb"))),
    Bench("runs", headline=(("message -> CLI start, median (ms)", "overhead_median_ms"),
                            ("stand-in runs per second", "runs_per_s"))),
    Bench("people", headline=(("`sessions.list` as the owner, nobody on record, p50 (ms)",
                               "before/owner/sessions_list/p50_ms"),
                              ("`sessions.list` as a member, p50 (ms)", "after/member/sessions_list/p50_ms"),
                              ("`chat.history` as a member, p50 (ms)", "after/member/chat_history/p50_ms"),
                              ("turn start as a member, p50 (ms)", "after/member/turn_start/p50_ms"),
                              ("every member's turn at once (turns/s)", "burst/members/turns_per_s"),
                              ("as many owner turns at once, nobody on record (turns/s)",
                               "burst/owner_before/turns_per_s"))),
    Bench("acp", needs=(_opencode,),
          headline=(("turn, runtime opencode p50 (ms)", "turn_opencode/p50_ms"),
                    ("turn, runtime acp (opencode acp) p50 (ms)", "turn_acp/p50_ms"),
                    ("prompt -> first chunk, remoteclaw acp p50 (ms)", "first_chunk_remoteclaw_acp/p50_ms"),
                    ("prompt -> first chunk, opencode acp direct, cold p50 (ms)", "first_chunk_direct_cold/p50_ms"))),
    Bench("clients", normalise=_clients_rows,
          headline=(("100 clients: all connected (s)", "100-reading/connect_all_s"),
                    ("100 clients: `health` all at once p99 (ms)", "100-reading/health_p99_ms"),
                    ("100 clients: fan-out of 20 events (ms)", "100-reading/fanout_all_delivered_ms"),
                    ("1,000 clients: `health` all at once p99 (ms)", "1000-reading/health_p99_ms"),
                    ("1,000 clients: RSS with them (MiB)", "1000-reading/rss_with_mb"),
                    ("5,000 clients: RSS with them (MiB)", "5000-reading/rss_with_mb"))),
    Bench("cron", headline=(("cron idle CPU (% of a core)", "idle_cpu_pct"), ("`cron.list` p50 (ms)", "list_p50_ms"),
                            ("cron lateness p99 (ms)", "late_p99_ms"))),
    Bench("node", needs=(_postgres, _redis),
          headline=(("`node.invoke` same replica p50 (ms)", "same_replica/p50_ms"),
                    ("`node.invoke` across replicas p50 (ms)", "across_replicas/p50_ms"),
                    ("gateway memory per node (KB)", "memory/kb_per_node"))),
    Bench("replicas", needs=(_postgres, _redis),
          headline=(("1 replica: `health` (calls/s)", "replicas_1/health_per_s"),
                    ("2 replicas: `health` (calls/s)", "replicas_2/health_per_s"),
                    ("1 replica: fan-out spread p99 (ms)", "replicas_1/fanout_p99_ms"),
                    ("2 replicas: fan-out spread p99 (ms)", "replicas_2/fanout_p99_ms"))),
    Bench("recovery", headline=(("kill -9, restart -> first recovered turn (ms)", "restart_to_first_turn_ms"),)),
    Bench("mcp_http", headline=(("`/mcp` HTTP tools/call p50 (ms)", "HTTP /mcp/p50"),
                                ("stdio shim tools/call p50 (ms)", "stdio shim/p50"))),
    Bench("memory", headline=(("memory_search keyword p50 (ms)", "keyword/p50_ms"),
                              ("memory_search hybrid p50 (ms)", "hybrid/p50_ms"))),
    Bench("openai_api", headline=(("web chat turn p50 (ms)", "webchat_turn/p50_ms"),
                                  ("`/v1/chat/completions` whole p50 (ms)", "api_whole/p50_ms"),
                                  ("`/v1/chat/completions` streamed p50 (ms)", "api_stream_end/p50_ms"),
                                  ("200 streams at once, all done (s)", "concurrent/wall_s"))),
    Bench("params", headline=(("`sessions.list` params, strict (µs)", "sessions.list/strict_us"),
                              ("`cron.add` params, strict (µs)", "cron.add/strict_us"))),
    Bench("browser", needs=(_chromium,),
          headline=(("browser snapshot p50 (ms)", "snapshot/p50_ms"), ("browser click p50 (ms)", "click/p50_ms"),
                    ("canvas snapshot p50 (ms)", "canvas_snapshot/p50_ms"),
                    ("node + Chromium idle PSS (MiB)", "node_idle_pss_mb"))),
    Bench("desktop", needs=(_desktop,),
          headline=(("desktop get_window_state via shim p50 (ms)", "remoteclaw_get_window_state/p50_ms"),
                    ("desktop click via shim p50 (ms)", "remoteclaw_click/p50_ms")),
          peers=(("cua-driver call", "remoteclaw_get_window_state/p50_ms", "direct_call_get_window_state/p50_ms"),
                 ("cua-driver call", "remoteclaw_click/p50_ms", "direct_call_click/p50_ms"))),
    Bench("webchat", needs=(_chromium,),
          headline=(("`sessions.list` (100) p50 (ms)", "sessions_list/p50_ms"),
                    ("`chat.history` (200) p50 (ms)", "chat_history/p50_ms"),
                    ("web chat page load p50 (ms)", "page_load_p50_ms"))),
    Bench("voice", needs=(_espeak,),
          headline=(("local TTS, time to audio p50 (ms)", "tts_local/p50_ms"),
                    ("local STT real-time factor", "stt_local/real_time_factor"))),
)


# ---------------------------------------------------------------- running and summarising

def flatten(value: Any, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a JSON value as ``{"a/b/c": number}`` (booleans and strings left out)."""
    out: dict[str, float] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}{key}/"))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.update(flatten(item, f"{prefix}{i}/"))
    elif isinstance(value, int | float) and not isinstance(value, bool) and value == value:
        out[prefix.rstrip("/")] = float(value)
    return out


@dataclass
class Outcome:
    """One benchmark's repeats: the figures of each successful run, and what went wrong."""

    name: str
    args: list[str] = field(default_factory=list)
    runs: list[dict[str, float]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    skipped: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def medians(self) -> dict[str, float]:
        keys = {k for run in self.runs for k in run}
        return {k: statistics.median([r[k] for r in self.runs if k in r]) for k in sorted(keys)}

    def ratio(self, ours: str, theirs: str) -> float | None:
        """Median over the runs of ours ÷ theirs, each ratio from one run."""
        ratios = [r[ours] / r[theirs] for r in self.runs if r.get(theirs) and ours in r]
        return statistics.median(ratios) if ratios else None


def run_one(bench: Bench, args: argparse.Namespace, stamp: str) -> Outcome:
    outcome = Outcome(bench.name)
    missing = [m for m in (need() for need in bench.needs) if m]
    if missing:
        outcome.skipped = "missing " + ", ".join(missing)
        return outcome
    extra: list[str] = []
    for check, extra_args in bench.optional:
        absent = check()
        if absent:
            outcome.notes.append(f"without {absent}")
            extra += extra_args
    logs = RESULTS / f"run_all-{stamp}"
    logs.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for i in range(args.repeat):
        out = logs / f"{bench.name}-{i + 1}.json"
        argv = [sys.executable, "-m", bench.module, *(["--quick"] if args.quick else []), *extra, "--json", str(out)]
        outcome.args = argv[3:]
        print(f"[{bench.name} {i + 1}/{args.repeat}] {shlex.join(argv[1:])}", flush=True)
        log = logs / f"{bench.name}-{i + 1}.log"
        try:
            with log.open("wb") as fh:
                proc = subprocess.run(argv, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, timeout=args.timeout,
                                      check=False)
        except subprocess.TimeoutExpired:
            outcome.failures.append(f"run {i + 1}: timed out after {args.timeout:.0f} s (log: {log})")
            continue
        if proc.returncode != 0 or not out.exists():
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
            outcome.failures.append(f"run {i + 1}: exit {proc.returncode}: {tail[0][:200]} (log: {log})")
            continue
        figures = orjson.loads(out.read_bytes())
        outcome.runs.append(flatten(bench.normalise(figures) if bench.normalise else figures))
    outcome.seconds = time.perf_counter() - started
    return outcome


def machine() -> dict[str, Any]:
    """What the figures were measured on: they mean little without it."""
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or platform.machine())
    mem_kb = next((int(line.split()[1]) for line in _read("/proc/meminfo").splitlines()
                   if line.startswith("MemTotal:")), 0)
    os_name = next((line.split("=", 1)[1].strip('"') for line in _read("/etc/os-release").splitlines()
                    if line.startswith("PRETTY_NAME=")), platform.platform())
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gib": round(mem_kb / 1024 / 1024, 1), "os": os_name,
            "kernel": platform.release(), "python": platform.python_version(), "node": _node_version(),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()]}


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _node_version() -> str | None:
    from bench.targets import find_openclaw

    try:
        node = str(find_openclaw()[0])
    except FileNotFoundError:
        node = shutil.which("node") or ""
    if not node:
        return None
    try:
        return subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _fmt(value: float | None) -> str:
    if value is None:
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if abs(value) < 10 else f"{value:.1f}"


def markdown(report: dict[str, Any]) -> str:
    """The generated block: machine, date, command, one table of headline figures with peer ratios."""
    m = report["machine"]
    lines = [BEGIN, "",
             "_Generated by `bench/run_all.py`; do not edit by hand between the markers._", "",
             f"- **Date**: {report['date']}",
             f"- **Command**: `{report['command']}`",
             f"- **Machine**: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM; {m['os']} (kernel "
             f"{m['kernel']}); Python {m['python']}; Node {m['node'] or 'absent'}",
             f"- **Load average** at start / end: {' '.join(map(str, m['loadavg_start']))} / "
             f"{' '.join(map(str, m['loadavg_end']))}",
             f"- **Repeats**: each figure is the median of {report['repeat']} runs"
             + (" at the smallest sizes (`--quick`): a smoke run, not a measurement" if report["quick"] else ""),
             "", "| benchmark | figure | remoteclaw | peer | ours ÷ peer |", "|---|---|---:|---|---:|"]
    problems = []
    for b in report["benchmarks"]:
        if b["skipped"]:
            problems.append(f"- `{b['name']}`: skipped, {b['skipped']}")
            continue
        for failure in b["failures"]:
            problems.append(f"- `{b['name']}`: {failure.split(' (log:')[0]}")
        for note in b["notes"]:
            problems.append(f"- `{b['name']}`: ran {note}")
        for row in b["headline"]:
            extra = [p for p in b["ratios"] if p["ours"] == row["key"]]
            if not extra:
                lines.append(f"| {b['name']} | {row['label']} | {_fmt(row['value'])} | | |")
            for p in extra:
                lines.append(f"| {b['name']} | {row['label']} | {_fmt(row['value'])} | {p['peer']} "
                             f"{_fmt(p['theirs_value'])} | {_fmt(p['ratio'])} |")
    if problems:
        lines += ["", "Not measured or incomplete in this run:", "", *problems]
    lines += ["", END]
    return "\n".join(lines)


def write_docs(block: str, path: Path = DOCS) -> None:
    """Replace the block between the markers (or append it, under its own heading, the first time)."""
    text = path.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n## Latest run of every benchmark\n\n" + block + "\n"
    path.write_text(text)


def summarise(outcomes: list[Outcome], args: argparse.Namespace, command: str, mach: dict[str, Any]) -> dict[str, Any]:
    by_name = {b.name: b for b in BENCHES}
    out: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "command": command,
                           "repeat": args.repeat, "quick": args.quick, "machine": mach, "benchmarks": []}
    for o in outcomes:
        bench = by_name[o.name]
        med = o.medians()
        ratios = [{"peer": peer, "ours": ours, "theirs": theirs, "theirs_value": med.get(theirs),
                   "ratio": o.ratio(ours, theirs)} for peer, ours, theirs in bench.peers if theirs in med]
        out["benchmarks"].append({
            "name": o.name, "args": o.args, "skipped": o.skipped, "failures": o.failures, "notes": o.notes,
            "successful_runs": len(o.runs), "seconds": round(o.seconds), "medians": med,
            "headline": [{"label": label, "key": key, "value": med.get(key)} for label, key in bench.headline],
            "peers": [list(p) for p in bench.peers], "ratios": ratios})
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    names = [b.name for b in BENCHES]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeat", type=int, default=3, help="runs of each benchmark; figures are medians (3)")
    p.add_argument("--quick", action="store_true", help="each script's smallest sizes: a smoke run")
    p.add_argument("--only", default="", help=f"comma-separated names among: {', '.join(names)}")
    p.add_argument("--skip", default="", help="comma-separated names to leave out")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed per run of one script (3600)")
    p.add_argument("--no-docs", action="store_true", help="leave docs/benchmarks.md alone")
    p.add_argument("--json", type=Path, default=None, help="result file (default bench/.results/run_all-<time>.json)")
    args = p.parse_args(argv)
    for option in ("only", "skip"):
        unknown = [n for n in re.split(r"[,\s]+", getattr(args, option)) if n and n not in names]
        if unknown:
            p.error(f"--{option}: unknown benchmark {', '.join(unknown)} (known: {', '.join(names)})")
    if args.repeat < 1:
        p.error("--repeat: at least 1")
    return args


def selected(args: argparse.Namespace) -> list[Bench]:
    only = {n for n in args.only.split(",") if n}
    skip = {n for n in args.skip.split(",") if n}
    return [b for b in BENCHES if (not only or b.name in only) and b.name not in skip]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = shlex.join([".venv/bin/python", "-m", "bench.run_all", *(sys.argv[1:] if argv is None else argv)])
    mach = machine()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    outcomes = []
    for bench in selected(args):
        outcome = run_one(bench, args, stamp)
        state = (f"skipped: {outcome.skipped}" if outcome.skipped
                 else f"{len(outcome.runs)}/{args.repeat} ok in {outcome.seconds:.0f} s"
                 + "".join(f"\n    {f}" for f in outcome.failures))
        print(f"  {bench.name}: {state}", flush=True)
        outcomes.append(outcome)
    mach["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    report = summarise(outcomes, args, command, mach)
    out = args.json or RESULTS / f"run_all-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    block = markdown(report)
    print(block)
    if not args.no_docs:
        write_docs(block)
    print(f"results: {out}")
    failed = any(b["failures"] for b in report["benchmarks"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
