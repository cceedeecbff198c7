"""What finished runs cost a gateway's memory: RSS after every ``--step`` runs, each on a session of its own.

Run from the repo root (not part of the tests)::

    .venv/bin/python -m bench.runs_memory              # 3,200 stand-in runs, RSS every 400 (about 2 minutes)
    .venv/bin/python -m bench.runs_memory --runs 800   # a shorter look

The soak's hour showed RSS rising slowly after warm-up. The run queue keeps up to 2,000 finished runs in
memory for ``agent.wait`` and ``tasks.list`` (``gateway/runs/queue.py``); this measures what each costs and
that the rise stops once that many are kept. The stand-in CLI (``tests/support/fake_cli.py``) answers at once,
20 runs in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.procs import tree_rss_mb  # noqa: E402
from tests.support import FAKE_CLI  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.ws import RawClient, operator  # noqa: E402

IN_FLIGHT = 20


async def _run(client: RawClient, key: str) -> None:
    sent = await client.req("chat.send", {"sessionKey": key, "message": "hello " * 50,
                                          "idempotencyKey": uuid.uuid4().hex}, timeout=60)
    if not sent.get("ok"):
        raise RuntimeError(f"chat.send: {sent.get('error')}")
    waited = await client.req("agent.wait", {"runId": sent["payload"]["runId"], "timeoutMs": 60_000}, timeout=70)
    if (waited.get("payload") or {}).get("status") != "ok":
        raise RuntimeError(f"agent.wait: {waited}")


async def measure(runs: int, step: int, work: Path) -> list[dict[str, Any]]:
    gw = GatewayProcess(work / "gw", config={
        "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}], "maxConcurrentRuns": IN_FLIGHT},
        "logging": {"level": "warning", "consoleLevel": "warning"}})
    gw.start(60)
    assert gw.proc is not None
    samples = [{"runs": 0, "rss_mb": round(tree_rss_mb(gw.proc.pid), 1)}]
    try:
        client = await operator(gw.url, gw.token or "")
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def one(n: int) -> None:
            async with gate:
                await _run(client, f"agent:main:mem-{n}")

        for done in range(step, runs + 1, step):
            await asyncio.gather(*(one(n) for n in range(done - step, done)))
            await asyncio.sleep(2)  # the last runs' rows and events are out
            samples.append({"runs": done, "rss_mb": round(tree_rss_mb(gw.proc.pid), 1)})
            print(f"{done:>6} runs: RSS {samples[-1]['rss_mb']} MiB", flush=True)
        await client.close()
    finally:
        gw.stop()
    return samples


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3200, help="runs in all (3200)")
    p.add_argument("--step", type=int, default=400, help="runs between RSS samples (400)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rc-runs-mem-") as tmp:
        samples = asyncio.run(measure(args.runs, args.step, Path(tmp)))
    for before, after in itertools.pairwise(samples):
        per_run_kb = (after["rss_mb"] - before["rss_mb"]) * 1024 / (after["runs"] - before["runs"])
        print(f"{before['runs']:>6} → {after['runs']:>6}: {per_run_kb:+.1f} KiB per run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
