"""Browser and canvas benchmark: what an agent waits for when it looks at a page and clicks, through the
gateway and a node, and what a node with Chromium costs in memory.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/browser_bench.py          # --calls 200; ~1 min

A gateway (SQLite) and our node host with Chromium run as processes; a page is served on 127.0.0.1. Each
call is a ``browser.request`` (or ``node.invoke`` for the canvas) timed at the operator, i.e. operator ->
gateway -> node -> Chromium -> node -> gateway -> operator:

1. ``GET /snapshot?interactive=true`` of a page with 60 elements;
2. ``POST /act {kind: click, ref}`` on a button that changes the page;
3. ``canvas.snapshot`` (PNG, 800 px wide) of an A2UI card;
4. the node's memory (the node host and its Chromium processes) idle, after the calls.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from bench.node_bench import pair, summary  # noqa: E402
from bench.procs import tree_pss_mb, tree_rss_mb  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.node_host import NodeHostProcess  # noqa: E402
from tests.support.pages import PageServer  # noqa: E402
from tests.support.ws import RawClient, operator  # noqa: E402

PAGE = ("<title>bench</title><h1>Bench</h1><p id=n>0</p>"
        "<button id=b onclick=\"n.textContent=+n.textContent+1\">Count</button>"
        + "".join(f"<p><a href='#x{i}'>link {i}</a> <input placeholder='field {i}'></p>" for i in range(30)))


async def timed(client: RawClient, method: str, params: dict[str, Any], calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        await client.call(method, params, timeout=60)
        out.append((time.perf_counter() - started) * 1000)
    return out


async def main(args: Any) -> None:
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="browser-bench-") as tmp, PageServer({"/": PAGE}) as site:
        root = Path(tmp)
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
              f"Python {platform.python_version()}")
        with GatewayProcess(root / "gw") as gw:
            admin = await operator(gw.url, gw.token or "")
            node = NodeHostProcess(root / "node", gw.port, token=gw.token, name="bench-browser", browser=True)
            node.browser_settings(allowPrivateNetwork=True)
            with node:
                node_id = await pair(admin, "bench-browser")
                started = time.perf_counter()
                await admin.call("browser.request", {"method": "POST", "path": "/tabs/open",
                                                     "body": {"url": site.url("/")}}, timeout=60)
                figures["first_call_ms"] = round((time.perf_counter() - started) * 1000)
                print(f"first call (Chromium cold start + open): {figures['first_call_ms']} ms")
                snap_params = {"method": "GET", "path": "/snapshot", "query": {"interactive": True}}
                snap = await admin.call("browser.request", snap_params)
                ref = next(k for k, v in snap["refs"].items() if v["name"] == "Count")
                await timed(admin, "browser.request", snap_params, 10)  # warm up
                samples = await timed(admin, "browser.request", snap_params, args.calls)
                figures["snapshot"] = report.latency(samples)
                print("snapshot:        ", summary(samples))
                click = {"method": "POST", "path": "/act", "body": {"kind": "click", "ref": ref}}
                samples = await timed(admin, "browser.request", click, args.calls)
                figures["click"] = report.latency(samples)
                print("click:           ", summary(samples))
                jsonl = (ROOT / "gateway" / "canvas" / "examples" / "hello-v08.jsonl").read_text()
                await admin.call("node.invoke", {"nodeId": node_id, "command": "canvas.a2ui.pushJSONL",
                                                 "params": {"jsonl": jsonl}, "idempotencyKey": uuid.uuid4().hex},
                                 timeout=60)
                shots = []
                for _ in range(max(10, args.calls // 4)):
                    began = time.perf_counter()
                    await admin.call("node.invoke", {"nodeId": node_id, "command": "canvas.snapshot",
                                                     "params": {"maxWidth": 800},
                                                     "idempotencyKey": uuid.uuid4().hex}, timeout=60)
                    shots.append((time.perf_counter() - began) * 1000)
                figures["canvas_snapshot"] = report.latency(shots)
                print("canvas snapshot: ", summary(shots))
                await asyncio.sleep(2)
                assert node.proc is not None
                figures["node_idle_pss_mb"] = round(tree_pss_mb(node.proc.pid))
                print(f"node memory idle, with Chromium (node host + browser processes): PSS "
                      f"{tree_pss_mb(node.proc.pid):.0f} MiB (RSS summed per process: "
                      f"{tree_rss_mb(node.proc.pid):.0f} MiB)")
            await admin.close()
    report.write(args.json, figures)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    report.options(parser, {"calls": 20})
    asyncio.run(main(report.parse(parser)))
