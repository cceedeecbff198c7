"""Remote MCP benchmark: ``tools/call`` round trip over HTTP at ``/mcp`` beside the stdio shim, one gateway.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python -m bench.mcp_http_bench     # --calls 500; ~30 s

Both sides call ``agents_list`` (owner tier) sequentially after 20 warm-up calls. Over HTTP that is one
POST on a kept-alive connection, answered as JSON; the gateway runs the tool in process. Over stdio it is
one line to a warm ``remoteclaw-mcp`` process, which forwards the call over its WebSocket.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench import report
from bench.shim_bench import INIT, INITIALIZED, LIST, Server, _call, _ms, per_call

ROOT = Path(__file__).resolve().parents[1]


def http_calls(url: str, token: str, calls: int) -> list[float]:
    headers = {"authorization": f"Bearer {token}", "accept": "application/json",
               "content-type": "application/json"}
    with httpx.Client(timeout=30) as client:
        r = client.post(url, headers=headers, json=INIT)
        headers["mcp-session-id"] = r.headers["mcp-session-id"]
        client.post(url, headers=headers, json=INITIALIZED)
        assert len(client.post(url, headers=headers, json=LIST).json()["result"]["tools"]) >= 53  # + plugin tools
        for i in range(20):
            client.post(url, headers=headers, json=_call(100 + i))
        samples = []
        for i in range(calls):
            t = time.perf_counter()
            answer = client.post(url, headers=headers, json=_call(1000 + i)).json()
            samples.append(time.perf_counter() - t)
            assert not answer["result"].get("isError"), answer
        client.delete(url, headers=headers)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    sys.path.insert(0, str(ROOT))
    report.options(parser, {"calls": 50})
    args = report.parse(parser)
    from tests.support.gateway_proc import GatewayProcess

    work = Path(tempfile.mkdtemp(prefix="mcp-http-bench-"))
    with GatewayProcess(work / "gw") as gw:
        made = subprocess.run([sys.executable, "-m", "gateway.cli", "mcp", "token", "create", "--name", "bench",
                               "--owner", "--url", gw.url, "--token", gw.token or ""],
                              capture_output=True, text=True, check=True)
        token = made.stdout.strip().splitlines()[-1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
        env.update({"REMOTECLAW_GATEWAY_URL": gw.url, "REMOTECLAW_GATEWAY_TOKEN": gw.token or "",
                    "REMOTECLAW_SESSION_KEY": "agent:main:main", "REMOTECLAW_SENDER_IS_OWNER": "true",
                    "REMOTECLAW_SIDE_EFFECTS_FILE": str(work / "fx.ndjson"),
                    "REMOTECLAW_PLUGIN_TOOLS_FILE": str(work / "plugins.json")})
        (work / "plugins.json").write_text('{"tools": []}')
        results = {}
        for name, samples in (("HTTP /mcp", http_calls(f"http://127.0.0.1:{gw.port}/mcp", token, args.calls)),
                              ("stdio shim", per_call(Server("shim", [sys.executable, "-m", "mcp_shim"], env),
                                                      args.calls))):
            results[name] = {"p50": _ms(samples), "p99": _ms(samples, 0.99),
                             "mean": round(statistics.mean(samples) * 1000, 2)}
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}, {args.calls} calls each")
    for name, r in results.items():
        print(f"{name:12} tools/call p50 {r['p50']} ms, p99 {r['p99']} ms, mean {r['mean']} ms")
    print(json.dumps(results))
    report.write(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
