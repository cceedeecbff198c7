"""MCP shim benchmark: cold start and per-call latency, beside the official Python and Node MCP SDK servers.

Run on a quiet machine (not part of the tests)::

    scripts/install-mcp-inspector            # once: Node 24 + the TypeScript SDK into .tools/mcp
    .venv/bin/python -m compileall -q mcp_shim gateway   # what an install does; PYTHONDONTWRITEBYTECODE may be set
    .venv/bin/python -m bench.shim_bench     # ~1-2 minutes

Cold start is measured the way an agent CLI experiences it: spawn the server, send ``initialize`` and
wait, send ``tools/list`` and wait, send one ``tools/call`` and wait. All three servers list the same 51
tool schemas. Our first call goes over a new WebSocket to a real gateway process (``agents_list``); the
SDK servers answer their call from memory, so that column favours them. Per-call latency is measured
on one warm process with sequential calls.
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

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def _call(req_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "method": "tools/call", "params": {"name": "agents_list", "arguments": {}}}


class Server:
    def __init__(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        self.name, self.argv, self.env = name, argv, env

    def spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)


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


def cold_start(server: Server, runs: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"initialize": [], "tools/list": [], "first call": []}
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = server.spawn()
        _exchange(proc, INIT)
        out["initialize"].append(time.perf_counter() - t0)
        listed = _exchange(proc, INITIALIZED, LIST)
        out["tools/list"].append(time.perf_counter() - t0)
        assert len(listed["result"]["tools"]) == 51, server.name
        called = _exchange(proc, _call(2))
        out["first call"].append(time.perf_counter() - t0)
        assert not called["result"].get("isError"), called
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(10)
    return out


def per_call(server: Server, calls: int) -> list[float]:
    proc = server.spawn()
    _exchange(proc, INIT)
    _exchange(proc, INITIALIZED, LIST)
    for i in range(20):  # warm up: connection, caches
        _exchange(proc, _call(100 + i))
    samples = []
    for i in range(calls):
        t = time.perf_counter()
        _exchange(proc, _call(1000 + i))
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
    parser.add_argument("--out", type=Path, help="JSON results (default bench/.results/shim-<time>.json)")
    args = parser.parse_args()

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
        servers = [Server("remoteclaw shim", [sys.executable, "-m", "mcp_shim"], env),
                   Server("mcp Python SDK (low-level Server)",
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
            calls = per_call(server, args.calls)
            results["servers"][server.name] = {
                "cold_ms": {k: {"p50": _ms(v), "p90": _ms(v, 0.9), "min": _ms(v, 0)} for k, v in cold.items()},
                "call_ms": {"p50": _ms(calls), "p95": _ms(calls, 0.95), "p99": _ms(calls, 0.99),
                            "mean": round(statistics.mean(calls) * 1000, 2)},
            }
    shutil.rmtree(work, ignore_errors=True)
    out = args.out or ROOT / "bench" / ".results" / f"shim-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    _print_table(results)
    print(f"\nwritten to {out}", file=sys.stderr)
    return 0


def _print_table(results: dict[str, Any]) -> None:
    servers = results["servers"]
    ours = servers["remoteclaw shim"]
    print(f"cold start, median of {results['runs']} runs (ms; ratio = theirs / ours)")
    print(f"{'server':44} {'initialize':>15} {'tools/list':>15} {'first call':>15} {'call p50':>9} {'call p99':>9}")
    for name, r in servers.items():
        c = r["cold_ms"]
        cells = []
        for key in ("initialize", "tools/list", "first call"):
            ratio = c[key]["p50"] / ours["cold_ms"][key]["p50"]
            cells.append(f"{c[key]['p50']:.1f} (x{ratio:.1f})")
        print(f"{name:44} {cells[0]:>15} {cells[1]:>15} {cells[2]:>15} {r['call_ms']['p50']:9.2f} "
              f"{r['call_ms']['p99']:9.2f}")


if __name__ == "__main__":
    sys.exit(main())
