"""Node benchmark: ``node.invoke`` round trips, on one replica and across two, and the gateway's memory with
many nodes connected.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/node_bench.py             # --calls 500 --nodes 100; ~1 min

1. **same replica**: a real node host (``python -m nodes run``) paired with a gateway (SQLite); ``--calls``
   ``system.which`` invocations one after another, timed at the operator (gateway -> node -> gateway);
2. **across replicas**: two gateways on one PostgreSQL database and Redis; the node is connected to A and the
   calls are made on B (B -> Redis -> A -> node -> A -> Redis -> B);
3. **many nodes**: ``--nodes`` paired node connections (in one helper process, each its own key) held open;
   the gateway's RSS before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from bench.procs import tree_rss_mb  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.node_host import NodeHostProcess  # noqa: E402
from tests.support.postgres import fresh_database  # noqa: E402
from tests.support.ws import RawClient, operator  # noqa: E402


async def pair(admin: RawClient, name: str) -> str:
    for _ in range(300):
        pending = (await admin.call("node.pair.list"))["pending"]
        found = next((r for r in pending if r["displayName"] == name), None)
        if found:
            await admin.call("node.pair.approve", {"requestId": found["requestId"]})
            await asyncio.sleep(0.3)
            return str(found["nodeId"])
        await asyncio.sleep(0.05)
    raise TimeoutError(f"no pairing request from {name}")


async def round_trips(client: RawClient, node_id: str, calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        await client.call("node.invoke", {"nodeId": node_id, "command": "system.which", "params": {"bins": ["sh"]},
                                          "idempotencyKey": uuid.uuid4().hex})
        out.append((time.perf_counter() - started) * 1000)
    return out


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered):.2f} ms, p99 {p99:.2f} ms ({len(ordered)} calls)"


async def same_replica(root: Path, calls: int) -> list[float]:
    with GatewayProcess(root / "gw") as gw:
        admin = await operator(gw.url, gw.token or "")
        with NodeHostProcess(root / "node", gw.port, token=gw.token, name="bench-node"):
            node_id = await pair(admin, "bench-node")
            await round_trips(admin, node_id, 20)  # warm up
            result = await round_trips(admin, node_id, calls)
        await admin.close()
    return result


async def across_replicas(root: Path, calls: int) -> list[float]:
    prefix = f"rc-bench-{secrets.token_hex(4)}"
    with fresh_database() as db_url:
        env = {"REMOTECLAW_DATABASE_URL": db_url, "REMOTECLAW_REDIS_URL": "redis://127.0.0.1:6379/0",
               "REMOTECLAW_REDIS_PREFIX": prefix}
        with GatewayProcess(root / "a", env=env) as a, GatewayProcess(root / "b", env=env) as b:
            on_b = await operator(b.url, b.token or "")
            with NodeHostProcess(root / "far", a.port, token=a.token, name="far-node"):
                node_id = await pair(on_b, "far-node")
                await round_trips(on_b, node_id, 20)
                result = await round_trips(on_b, node_id, calls)
            await on_b.close()
    return result


MANY_NODES = """
import asyncio, sys
from pathlib import Path
from nodes.host import NodeHost
async def main(url, token, count, root):
    hosts = [NodeHost(url, gateway_token=token, display_name=f"many-{i}", state=Path(root) / str(i))
             for i in range(count)]
    await asyncio.gather(*(h.run() for h in hosts))
asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
"""


def connected_paired(nodes: list[dict[str, Any]]) -> int:
    """Nodes that are both paired and connected now (a pending node holds a socket but takes no calls)."""
    return sum(1 for n in nodes if n["connected"] and n.get("paired"))


def memory_report(count: int, connected: int, before: float, after: float) -> str:
    """The memory line, naming the number of nodes that really connected (never just the number asked for)."""
    if connected <= 0:
        return f"0 of {count} nodes connected: no memory figure (gateway RSS {before:.1f} MB -> {after:.1f} MB)"
    line = (f"{connected} nodes connected: gateway RSS {before:.1f} MB -> {after:.1f} MB "
            f"(+{(after - before) * 1024 / connected:.0f} KB per node)")
    return line if connected == count else f"only {connected} of {count} nodes connected (INCOMPLETE): {line}"


async def many_nodes(root: Path, count: int, *, wait_s: float = 120.0, auto_approve: bool = True,
                     figures: dict[str, Any] | None = None) -> str:
    """``count`` node connections held open; the RSS figure is per node that actually connected in ``wait_s``."""
    import subprocess

    with GatewayProcess(root / "gw", config={"nodes": {"autoApproveLoopback": auto_approve}}) as gw:
        assert gw.proc is not None
        admin = await operator(gw.url, gw.token or "")
        await asyncio.sleep(1)
        before = tree_rss_mb(gw.proc.pid)
        helper = subprocess.Popen([sys.executable, "-c", MANY_NODES, gw.url, gw.token or "", str(count),  # noqa: ASYNC220
                                   str(root / "many")], cwd=ROOT, stderr=subprocess.DEVNULL)
        connected = 0
        try:
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                connected = connected_paired((await admin.call("node.list"))["nodes"])
                if connected >= count:
                    break
                await asyncio.sleep(0.2)
            await asyncio.sleep(2)
            connected = connected_paired((await admin.call("node.list"))["nodes"])
            after = tree_rss_mb(gw.proc.pid)
        finally:
            helper.terminate()
            helper.wait(10)
        await admin.close()
    if figures is not None:
        figures.update(nodes=count, nodes_connected=connected, rss_before_mb=round(before, 1),
                       rss_after_mb=round(after, 1),
                       kb_per_node=round((after - before) * 1024 / connected) if connected else None)
    return memory_report(count, connected, before, after)


async def main(args: Any) -> None:
    with tempfile.TemporaryDirectory(prefix="node-bench-") as tmp:
        root = Path(tmp)
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
              f"Python {platform.python_version()}")
        figures: dict[str, Any] = {}
        same = await same_replica(root / "one", args.calls)
        figures["same_replica"] = report.latency(same)
        print("same replica:    ", summary(same))
        across = await across_replicas(root / "two", args.calls)
        figures["across_replicas"] = report.latency(across)
        print("across replicas: ", summary(across))
        figures["memory"] = {}
        print("memory:          ", await many_nodes(root / "many", args.nodes, figures=figures["memory"]))
    report.write(args.json, figures)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--nodes", type=int, default=100)
    report.options(parser, {"calls": 50, "nodes": 10})
    asyncio.run(main(report.parse(parser)))
