"""MCP shim benchmark: cold start and per-call latency, beside the official Python and Node MCP SDK servers.

Run on a quiet machine (not part of the tests)::

    scripts/install-mcp-inspector            # once: Node 24 + the TypeScript SDK into .tools/mcp
    .venv/bin/python -m compileall -q mcp_shim gateway   # what an install does; PYTHONDONTWRITEBYTECODE may be set
    .venv/bin/python -m bench.shim_bench     # ~1-2 minutes
    .venv/bin/python -m bench.shim_bench --against 6fa98ed   # this tree's shim against an older commit's

Cold start is measured the way an agent CLI experiences it: spawn the server, send ``initialize`` and
wait, send ``tools/list`` and wait, send one ``tools/call`` and wait. All three servers list the same 53
tool schemas. The shim is measured a second time as a 2026-07-28 client meets it (Claude Code 2.1.330
does): ``server/discover`` instead of ``initialize``, then ``tools/list`` and the call, each request with
the per-request ``_meta`` envelope.

``--against REV`` compares the shim of this tree with the shim of commit REV (``git archive`` of its
``mcp_shim`` and ``gateway`` into a temporary folder, compiled), instead of the SDK servers. The two are
spawned in turn, one cold start each, so both see the same machine load: on a busy machine that is the
only fair before/after. Our first call goes over a new WebSocket to a real gateway process (``agents_list``); the
SDK servers answer their call from memory, so that column favours them. Per-call latency is measured
on one warm process with sequential calls. "Call after pause" is the first call's own time when it is sent
half a second after ``tools/list``, as a model's first tool call comes: the shim opens its gateway connection
in that pause. "First call, pause excluded" is spawn to that call's answer less the pause: issue #34's "first
call from spawn" (target 60 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOOLS_DIR = ROOT / ".tools" / "mcp" / "node_modules"

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}
DISCOVER = {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": MODERN_META}}
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def _call(req_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "method": "tools/call", "params": {"name": "agents_list", "arguments": {}}}


class Server:
    def __init__(self, name: str, argv: list[str], env: dict[str, str], *, cwd: Path = ROOT,
                 modern: bool = False) -> None:
        self.name, self.argv, self.env, self.cwd = name, argv, env, cwd
        self.modern = modern
        """Talk to it as a 2026-07-28 client: discover, then enveloped requests, no initialize."""

    def spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def opening(self) -> tuple[dict[str, Any], ...]:
        return (DISCOVER,) if self.modern else (INIT,)

    def listing(self) -> tuple[dict[str, Any], ...]:
        if self.modern:
            return ({**LIST, "params": {"_meta": MODERN_META}},)
        return INITIALIZED, LIST

    def call(self, req_id: int) -> dict[str, Any]:
        msg = _call(req_id)
        if self.modern:
            msg["params"]["_meta"] = MODERN_META
        return msg


def _exchange(proc: subprocess.Popen[bytes], *messages: dict[str, Any]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("server closed its stdout")
        msg = json.loads(line)
        if "id" in msg:
            return msg


THINK_S = 0.5
"""The pause before the first call in the "call after pause" measure: a model reads the tool list and thinks
for at least this long before it calls a tool."""

COLD_KEYS = ("initialize", "tools/list", "first call", "call after pause", "first call, pause excluded")
"""The last is the issue's "first call from spawn" as an agent run sees it: spawn to the answer of a first call
sent ``THINK_S`` after ``tools/list``, less that pause (the shim's warm-up runs in it)."""


def cold_start(server: Server, runs: int) -> dict[str, list[float]]:
    """Times from the spawn to each answer, the first call sent at once; and, in a second process, the first
    call's own time when it comes ``THINK_S`` after ``tools/list`` (what an agent run sees)."""
    out: dict[str, list[float]] = {key: [] for key in COLD_KEYS}
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = server.spawn()
        opened = _exchange(proc, *server.opening())
        assert "result" in opened, (server.name, opened)
        out["initialize"].append(time.perf_counter() - t0)
        listed = _exchange(proc, *server.listing())
        out["tools/list"].append(time.perf_counter() - t0)
        assert len(listed["result"]["tools"]) == 53, server.name
        called = _exchange(proc, server.call(2))
        out["first call"].append(time.perf_counter() - t0)
        assert not called["result"].get("isError"), called
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(10)

        t0 = time.perf_counter()
        proc = server.spawn()
        _exchange(proc, *server.opening())
        _exchange(proc, *server.listing())
        listed_after = time.perf_counter() - t0
        time.sleep(THINK_S)
        t1 = time.perf_counter()
        called = _exchange(proc, server.call(2))
        out["call after pause"].append(time.perf_counter() - t1)
        out["first call, pause excluded"].append(listed_after + out["call after pause"][-1])
        assert not called["result"].get("isError"), called
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(10)
    return out


def per_call(server: Server, calls: int) -> list[float]:
    proc = server.spawn()
    _exchange(proc, *server.opening())
    _exchange(proc, *server.listing())
    for i in range(20):  # warm up: connection, caches
        _exchange(proc, server.call(100 + i))
    samples = []
    for i in range(calls):
        t = time.perf_counter()
        _exchange(proc, server.call(1000 + i))
        samples.append(time.perf_counter() - t)
    proc.stdin.close()  # type: ignore[union-attr]
    proc.wait(10)
    return samples


def _ms(values: list[float], q: float = 0.5) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="cold starts per server (default 20)")
    parser.add_argument("--calls", type=int, default=500, help="sequential calls for per-call latency")
    parser.add_argument("--out", "--json", type=Path, help="JSON results (default bench/.results/shim-<time>.json)")
    parser.add_argument("--against", metavar="REV", help="compare with the shim of git commit REV (interleaved)")
    sys.path.insert(0, str(ROOT))
    from bench import report

    report.options(parser, {"runs": 3, "calls": 50}, json_flag=False)
    args = report.parse(parser)

    sys.path.insert(0, str(ROOT))
    from mcp_shim.catalog import Catalog
    from mcp_shim.context import Context
    from tests.support.gateway_proc import GatewayProcess

    work = Path(tempfile.mkdtemp(prefix="shim-bench-"))
    results: dict[str, Any] = {"runs": args.runs, "calls": args.calls, "python": sys.version.split()[0],
                               "servers": {}}
    with GatewayProcess(work / "gw") as gw:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
        env.update({"REMOTECLAW_GATEWAY_URL": gw.url, "REMOTECLAW_GATEWAY_TOKEN": gw.token or "",
                    "REMOTECLAW_SESSION_KEY": "agent:main:main", "REMOTECLAW_SENDER_IS_OWNER": "true",
                    "REMOTECLAW_SIDE_EFFECTS_FILE": str(work / "side-effects.ndjson"),
                    "REMOTECLAW_PLUGIN_TOOLS_FILE": str(work / "plugins.json")})
        (work / "plugins.json").write_text('{"tools": []}')
        ctx = Context.from_env(env)
        tools_file = work / "tools.json"
        tools_file.write_text(json.dumps(Catalog(ctx).listing()))
        shim = [sys.executable, "-m", "mcp_shim"]
        servers = [Server("remoteclaw shim", shim, env),
                   Server("remoteclaw shim, 2026-07-28 client", shim, env, modern=True)]
        if args.against:
            old = _checkout(args.against, work / "old")
            servers.append(Server(f"remoteclaw shim @{args.against}", shim, {**env, "PYTHONPATH": str(old)}, cwd=old))
            _measure_interleaved(servers, args, results)
        else:
            _measure_with_sdks(servers, env, tools_file, args, results)
    shutil.rmtree(work, ignore_errors=True)
    out = args.out or ROOT / "bench" / ".results" / f"shim-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    _print_table(results)
    print(f"\nwritten to {out}", file=sys.stderr)
    return 0


def _checkout(rev: str, into: Path) -> Path:
    """``mcp_shim`` and ``gateway`` as they were at ``rev``, compiled like an install would."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev, "mcp_shim", "gateway"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into)], check=True)
    return into


def _record(results: dict[str, Any], server: Server, cold: dict[str, list[float]], calls: list[float]) -> None:
    results["servers"][server.name] = {
        "cold_ms": {k: {"p50": _ms(v), "p90": _ms(v, 0.9), "min": _ms(v, 0)} for k, v in cold.items()},
        "call_ms": {"p50": _ms(calls), "p95": _ms(calls, 0.95), "p99": _ms(calls, 0.99),
                    "mean": round(statistics.mean(calls) * 1000, 2)},
    }


def _measure_interleaved(servers: list[Server], args: argparse.Namespace, results: dict[str, Any]) -> None:
    cold: dict[str, dict[str, list[float]]] = {s.name: {key: [] for key in COLD_KEYS} for s in servers}
    print(f"measuring {', '.join(s.name for s in servers)} in turn ...", file=sys.stderr)
    for _ in range(args.runs):
        for server in servers:
            for key, values in cold_start(server, 1).items():
                cold[server.name][key] += values
    for server in servers:
        _record(results, server, cold[server.name], per_call(server, args.calls))


def _measure_with_sdks(servers: list[Server], env: dict[str, str], tools_file: Path, args: argparse.Namespace,
                       results: dict[str, Any]) -> None:
    servers += [Server("mcp Python SDK (low-level Server)",
                          [sys.executable, str(ROOT / "bench/mcp/sdk_server.py"), str(tools_file)], env)]
    node = TOOLS_DIR / ".bin" / "node"
    if (TOOLS_DIR / "@modelcontextprotocol" / "sdk").exists():
        node_cmd = str(node) if node.exists() else (shutil.which("node") or "node")
        servers.append(Server("TypeScript SDK on Node (low-level Server)",
                              [node_cmd, str(ROOT / "bench/mcp/node_server.mjs"), str(tools_file)],
                              {**env, "MCP_SDK_ROOT": str(TOOLS_DIR.parent)}))
    else:
        print("Node SDK not installed (scripts/install-mcp-inspector): skipping it", file=sys.stderr)
    for server in servers:
        print(f"measuring {server.name} ...", file=sys.stderr)
        cold = cold_start(server, args.runs)
        _record(results, server, cold, per_call(server, args.calls))


def _print_table(results: dict[str, Any]) -> None:
    servers = results["servers"]
    ours = servers["remoteclaw shim"]
    print(f"cold start, median of {results['runs']} runs (ms; ratio = theirs / ours)")
    print(f"{'server':44} {'initialize':>15} {'tools/list':>15} {'first call':>15} {'after pause':>15} "
          f"{'1st, no pause':>15} {'call p50':>9} {'call p99':>9}")
    for name, r in servers.items():
        c = r["cold_ms"]
        cells = []
        for key in COLD_KEYS:
            ratio = c[key]["p50"] / ours["cold_ms"][key]["p50"]
            cells.append(f"{c[key]['p50']:.1f} (x{ratio:.1f})")
        print(f"{name:44} {''.join(f'{cell:>16}' for cell in cells)} {r['call_ms']['p50']:9.2f} "
              f"{r['call_ms']['p99']:9.2f}")


if __name__ == "__main__":
    sys.exit(main())
