"""Agent turns on a node: what running the turn on a node adds over a local turn.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/node_turn_bench.py            # --turns 40; ~1 min

One real gateway (SQLite) and one real node host (``python -m nodes run --agents``, its own HOME and state dir)
on this machine; the same stand-in CLI (``tests/support/fake_cli.py``) on both sides, in bubblewrap on both. One
turn at a time, alternating a local agent and one placed on the node, each ``stream:2`` (the first text piece at
once), measured from just before ``chat.send``:

- CLI start: when the CLI process started (its own clock, in its log);
- first token: when the first live ``chat`` delta reached the client;
- whole turn: when ``agent.wait`` answered.

p50/p99 of each in ms, and the difference of the p50s (node minus local).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from tests.support import FAKE_CLI  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.node_host import NodeHostProcess  # noqa: E402
from tests.support.waiting import until  # noqa: E402
from tests.support.ws import RawClient, operator  # noqa: E402

NODE = "benchnode"


def _start_node(node: NodeHostProcess) -> None:
    for key, value in (("clis", f"claude={sys.executable} {FAKE_CLI}"), ("folders", str(node.state.parent / "code"))):
        subprocess.run([sys.executable, "-m", "nodes", "agents", "set", key, value], cwd=ROOT, env=node.env(),
                       check=True, capture_output=True)
    node.proc = subprocess.Popen([sys.executable, "-m", "nodes", "run", "--port", str(node.port), "--display-name",
                                  NODE, "--no-browser", "--no-desktop", "--agents"], cwd=ROOT, env=node.env(),
                                 stdout=node.log.open("ab"), stderr=subprocess.STDOUT)


def _log_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def _turn(c: RawClient, key: str, log: Path) -> tuple[float, float, float]:
    before = len(_log_lines(log))
    start_wall, start = time.time(), time.perf_counter()
    sent = await c.call("chat.send", {"sessionKey": key, "message": "stream:2 hello there",
                                      "idempotencyKey": uuid.uuid4().hex})
    first = None
    while True:
        ev = await c.next_event("chat", timeout=30)
        p = ev["payload"]
        if p.get("runId") != sent["runId"]:
            continue
        if p["state"] == "delta" and first is None:
            first = (time.perf_counter() - start) * 1000
        if p["state"] in ("final", "error", "aborted"):
            break
    assert p["state"] == "final", p
    whole = (time.perf_counter() - start) * 1000
    entries = _log_lines(log)[before:]
    cli = (entries[-1]["startedAt"] - start_wall) * 1000
    return cli, first or whole, whole


async def run(turns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, code = root / "node-home", root / "node-home" / "code"
        code.mkdir(parents=True)
        local_logs = root / "local"
        local_logs.mkdir()
        config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]},
                                      {"id": "remote", "node": NODE, "workspace": str(code)}],
                             "defaults": {"sandbox": {"binds": [{"path": str(local_logs), "writable": True}]}}}}
        env = {"FAKE_CLI_LOG": str(local_logs / "cli.log")}
        with GatewayProcess(root / "gw", config=config, env=env) as gw:
            node = NodeHostProcess(home / "node-state", gw.port, token=gw.token, name=NODE)
            node.extra_env.update(HOME=str(home), FAKE_CLI_LOG=str(code / "cli.log"))
            node.state.mkdir(parents=True)
            _start_node(node)
            try:
                c = await operator(gw.url, gw.token or "")

                async def pending() -> Any:
                    listing = await c.call("node.pair.list")
                    return next((r for r in listing["pending"] if r["displayName"] == NODE), None)

                request = await until(pending, 20, "the node's request")
                await c.call("node.pair.approve", {"requestId": request["requestId"]})
                await until(lambda: (node.state / "node.json").exists(), 20, "the node's token")
                samples: dict[str, list[float]] = {f"{where}_{what}": [] for where in ("local", "node")
                                                   for what in ("cli_start", "first_token", "whole")}
                for i in range(turns + 2):  # two warm-up rounds
                    for where, agent, log in (("local", "main", local_logs / "cli.log"),
                                              ("node", "remote", code / "cli.log")):
                        cli, first, whole = await _turn(c, f"agent:{agent}:bench{i}", log)
                        if i >= 2:
                            samples[f"{where}_cli_start"].append(cli)
                            samples[f"{where}_first_token"].append(first)
                            samples[f"{where}_whole"].append(whole)
                await c.close()
            finally:
                node.stop()
    out: dict[str, Any] = {name: report.latency(values) for name, values in samples.items()}
    out["added_p50_ms"] = {what: round(out[f"node_{what}"]["p50_ms"] - out[f"local_{what}"]["p50_ms"], 2)
                           for what in ("cli_start", "first_token", "whole")}
    out["added_p99_ms"] = {what: round(out[f"node_{what}"]["p99_ms"] - out[f"local_{what}"]["p99_ms"], 2)
                           for what in ("cli_start", "first_token", "whole")}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=40)
    report.options(parser, {"turns": 5})
    args = report.parse(parser, argv)
    figures = asyncio.run(run(args.turns))
    report.write(getattr(args, "json", None), figures)
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
