"""Memory plugin benchmark: ``memory_search`` at 100,000 memories, and the shim's start with 20 plugin tools.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python -m bench.memory_bench                       # SQLite; ~2 minutes
    .venv/bin/python -m bench.memory_bench --postgres postgresql://postgres@127.0.0.1:5432/test

1. **Search**: one agent's 100,000 memories (sentences drawn from a 2,000-word vocabulary) are stored with
   the plugin's own store; then 200 queries of 2-4 words run through the plugin's ranking (``Recall``), the
   code behind ``memory_search``: keyword alone, then hybrid, whose query vector comes from the loopback fake
   embedding server over HTTP (so only our overhead and a local round trip are measured; a real endpoint
   adds its own latency). Stored vectors are the fake's, 64 dimensions.
2. **Shim start**: time from spawning ``python -m mcp_shim`` to the ``tools/list`` answer, with an empty
   plugin tool list and with 20 plugin tools handed over in the run's file; median of 30 starts each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from gateway.store import Database  # noqa: E402
from plugins.memory.recall import Embedder, Recall  # noqa: E402
from plugins.memory.store import MemoryStore  # noqa: E402
from tests.support.fake_embeddings import FakeEmbeddings, embed  # noqa: E402


def _vector(text: str) -> bytes:
    import numpy as np

    vec = np.asarray(embed(text), dtype=np.float32)
    return (vec / (float(np.linalg.norm(vec)) or 1.0)).tobytes()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def search_bench(url: str, count: int, queries: int, figures: dict[str, Any] | None = None
                       ) -> list[tuple[str, str]]:
    figures = {} if figures is None else figures
    rng = random.Random(7)
    vocab = [f"w{n}" for n in range(2000)] + ["tea", "coffee", "deploy", "friday", "garden", "backup", "invoice"]
    db = Database(url)
    store = MemoryStore(db)
    await store.create_schema()
    started = time.perf_counter()
    batch: list[tuple[str, str, str, bytes | None]] = []
    for n in range(count):
        content = " ".join(rng.choice(vocab) for _ in range(rng.randint(6, 18)))
        batch.append(("bench", f"{content} #{n}", rng.choice(("core", "stable", "notes")), _vector(content)))
        if len(batch) == 5000:
            await store.insert_many(batch)
            batch = []
    if batch:
        await store.insert_many(batch)
    load_s = time.perf_counter() - started
    words = [" ".join(rng.choice(vocab) for _ in range(rng.randint(2, 4))) for _ in range(queries)]
    rows = [("stored", f"{count:,} memories in {load_s:.1f} s ({count / load_s:,.0f}/s, with vectors)")]
    figures["stored_per_s"] = round(count / load_s)

    keyword = Recall(store, None)
    times = []
    for q in words:
        t = time.perf_counter()
        await keyword.search("bench", q, 5, 0.3)
        times.append((time.perf_counter() - t) * 1000)
    rows.append(("keyword", f"p50 {statistics.median(times):.1f} ms, p99 {_pct(times, 0.99):.1f} ms"))
    figures["keyword"] = report.latency(times)

    with FakeEmbeddings() as fake:
        hybrid = Recall(store, Embedder({"baseUrl": f"{fake.url}/v1", "apiKey": "bench", "model": "fake"}))
        t = time.perf_counter()
        await hybrid.search("bench", "warm up", 5, 0.3)
        figures["hybrid_first_ms"] = round((time.perf_counter() - t) * 1000)
        rows.append(("hybrid, first query (loads the vectors)", f"{figures['hybrid_first_ms']} ms"))
        times = []
        for q in words:
            t = time.perf_counter()
            await hybrid.search("bench", q, 5, 0.3)
            times.append((time.perf_counter() - t) * 1000)
        rows.append(("hybrid", f"p50 {statistics.median(times):.1f} ms, p99 {_pct(times, 0.99):.1f} ms"))
        figures["hybrid"] = report.latency(times)
    await db.close()
    return rows


def _tool(n: int) -> dict[str, object]:
    return {"name": f"bench_tool_{n}", "description": f"Benchmark tool number {n}: does nothing useful.",
            "inputSchema": {"type": "object", "required": ["query"], "properties": {
                "query": {"type": "string", "minLength": 1}, "limit": {"type": "integer", "minimum": 1}}},
            "annotations": {"readOnlyHint": True}}


def shim_start(tools: int, runs: int, tmp: Path) -> float:
    manifest = tmp / f"tools-{tools}.json"
    manifest.write_text(json.dumps({"tools": [_tool(n) for n in range(tools)]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    env.update(REMOTECLAW_GATEWAY_URL="ws://127.0.0.1:9/", REMOTECLAW_GATEWAY_TOKEN="t",
               REMOTECLAW_SESSION_KEY="agent:main:main", REMOTECLAW_SIDE_EFFECTS_FILE=str(tmp / "fx.ndjson"),
               REMOTECLAW_SENDER_IS_OWNER="true", REMOTECLAW_PLUGIN_TOOLS_FILE=str(manifest))
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "mcp_shim"], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdin and proc.stdout
        proc.stdin.write((json.dumps(init) + "\n" + json.dumps(listing) + "\n").encode())
        proc.stdin.flush()
        proc.stdout.readline()
        listed = json.loads(proc.stdout.readline())
        times.append((time.perf_counter() - t) * 1000)
        assert len(listed["result"]["tools"]) == 53 + tools, len(listed["result"]["tools"])
        proc.stdin.close()
        proc.wait(5)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--postgres", help="a PostgreSQL URL (an empty database) instead of SQLite")
    parser.add_argument("--runs", type=int, default=30)
    report.options(parser, {"count": 2000, "queries": 20, "runs": 3})
    args = report.parse(parser)
    figures: dict[str, Any] = {"count": args.count}
    with tempfile.TemporaryDirectory() as tmp:
        url = (args.postgres.replace("postgresql://", "postgresql+asyncpg://") if args.postgres
               else f"sqlite+aiosqlite:///{Path(tmp) / 'memory.db'}")
        print(f"memory_search, {'PostgreSQL' if args.postgres else 'SQLite'}:")
        for name, value in asyncio.run(search_bench(url, args.count, args.queries, figures)):
            print(f"  {name:42} {value}")
        base = shim_start(0, args.runs, Path(tmp))
        more = shim_start(20, args.runs, Path(tmp))
        print(f"shim start to tools/list: 53 tools {base:.1f} ms, 53 + 20 plugin tools {more:.1f} ms "
              f"({(more / base - 1) * 100:+.1f} %)")
    report.write(args.json, {**figures, "shim_start_ms": round(base, 1),
                             "shim_start_20_plugin_tools_ms": round(more, 1)})


if __name__ == "__main__":
    main()
