"""ACP benchmark: what ``runtime: acp`` costs a turn against the bespoke driver of the same agent, and how long a
prompt in ``remoteclaw acp`` takes to its first streamed chunk against the agent started directly.

The agent is the real OpenCode (``.agent-clis``, ``scripts/install-agent-clis``) against the loopback fake Chat
Completions API, so the model's time is near zero and what is measured is the machinery:

- per turn: a real gateway with two agents, ``runtime: opencode`` (``opencode run``) and ``runtime: acp, agent:
  opencode`` (``opencode acp`` over the SDK); ``agent`` → ``agent.wait`` for a one-line answer, each turn on a
  new session (no resume), sandbox as configured by default;
- first chunk: ``remoteclaw acp`` (SDK client → the ACP server → ``chat.send`` → the gateway's turn through
  ``runtime: acp``) from ``session/prompt`` to the first ``agent_message_chunk``, against ``opencode acp`` started
  by the SDK client itself, cold (process start, initialize, session/new, prompt: what each gateway turn does)
  and warm (the prompt alone, on a process already up).

Usage: .venv/bin/python bench/acp_bench.py [--samples 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # noqa: E402
from acp.schema import AgentMessageChunk  # noqa: E402

from bench import report  # noqa: E402
from tests.gateway.agents.runtimes.test_opencode import user_home  # noqa: E402
from tests.support.fake_openai import FakeOpenAI  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.ws import operator  # noqa: E402

OPENCODE = ROOT / ".agent-clis" / "node_modules" / ".bin" / "opencode"
REMOTECLAW = Path(sys.executable).parent / "remoteclaw"


class FirstChunk:
    """An SDK client that notes when the first message chunk of the current prompt arrives."""

    def __init__(self) -> None:
        self.first: float | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk) and self.first is None:
            self.first = time.monotonic()

    async def request_permission(self, **kwargs: Any) -> Any:
        raise RuntimeError("no permission is asked in this benchmark")


async def per_turn(gw: GatewayProcess, agent: str, samples: int) -> list[float]:
    c = await operator(gw.url, gw.token or "")
    out = []
    try:
        for _ in range(samples):
            key = f"agent:{agent}:bench:{uuid.uuid4().hex[:8]}"
            t0 = time.monotonic()
            acc = await c.call("agent", {"message": "REPLY hi", "sessionKey": key, "idempotencyKey": str(uuid.uuid4())})
            res = await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 60_000}, timeout=70)
            assert res["status"] == "ok", res
            out.append((time.monotonic() - t0) * 1000)
    finally:
        await c.close()
    return out


async def via_remoteclaw(gw: GatewayProcess, samples: int) -> list[float]:
    out = []
    client = FirstChunk()
    async with spawn_agent_process(client, str(REMOTECLAW), "acp", "--url", gw.url, "--token", gw.token or "",
                                   "--agent", "oca") as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        for _ in range(samples):
            sid = (await conn.new_session(cwd="/", mcp_servers=[])).session_id
            client.first = None
            t0 = time.monotonic()
            await conn.prompt(session_id=sid, prompt=[text_block("REPLY hi")])
            assert client.first is not None
            out.append((client.first - t0) * 1000)
    return out


async def direct(env: dict[str, str], cwd: str, samples: int) -> tuple[list[float], list[float]]:
    cold, warm = [], []
    for _ in range(samples):
        client = FirstChunk()
        t0 = time.monotonic()
        async with spawn_agent_process(client, str(OPENCODE), "acp", env=env, cwd=cwd) as (conn, _):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("REPLY hi")])
            assert client.first is not None
            cold.append((client.first - t0) * 1000)
            client.first = None
            t1 = time.monotonic()
            await conn.prompt(session_id=sid, prompt=[text_block("REPLY again")])
            assert client.first is not None
            warm.append((client.first - t1) * 1000)
    return cold, warm


def show(name: str, ms: list[float]) -> None:
    print(f"{name:48} median {statistics.median(ms):8.0f} ms   min {min(ms):8.0f}   max {max(ms):8.0f}   n={len(ms)}")


async def main(samples: int, json_path: Path | None) -> None:
    if not OPENCODE.exists():
        sys.exit("opencode is not installed: run scripts/install-agent-clis opencode")
    with FakeOpenAI() as api, tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "home").mkdir()
        user_home(d / "home", api.url)
        env = {"HOME": str(d / "home"), "OPENCODE_DISABLE_MODELS_FETCH": "1"}
        agents = [{"id": "oc", "runtime": "opencode", "command": [str(OPENCODE)], "model": "fake/fake-model",
                   "env": env},
                  {"id": "oca", "runtime": "acp", "agent": "opencode", "acp": {"command": str(OPENCODE)},
                   "model": "fake/fake-model", "env": env}]
        with GatewayProcess(d / "gw", config={"agents": {"default": "oc", "list": agents}}) as gw:
            await per_turn(gw, "oc", 1)  # warm-up: first start of each
            await per_turn(gw, "oca", 1)
            bespoke = await per_turn(gw, "oc", samples)
            acp = await per_turn(gw, "oca", samples)
            first = await via_remoteclaw(gw, samples)
        work = d / "direct"
        work.mkdir()
        (work / "opencode.json").write_text('{"model": "fake/fake-model", "autoupdate": false}')
        cold, warm = await direct({**os.environ, **env, "PWD": str(work)}, str(work), samples)
    print(f"machine: {os.cpu_count()} CPUs, {os.uname().sysname} {os.uname().release}, Python {sys.version.split()[0]}")
    show("turn, runtime opencode (opencode run)", bespoke)
    show("turn, runtime acp agent opencode (opencode acp)", acp)
    show("first chunk, remoteclaw acp -> gateway -> acp", first)
    show("first chunk, opencode acp direct, cold", cold)
    show("first chunk, opencode acp direct, warm", warm)
    report.write(json_path, {"turn_opencode": report.latency(bespoke), "turn_acp": report.latency(acp),
                             "first_chunk_remoteclaw_acp": report.latency(first),
                             "first_chunk_direct_cold": report.latency(cold),
                             "first_chunk_direct_warm": report.latency(warm)})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=5)
    report.options(parser, {"samples": 2})
    args = report.parse(parser)
    asyncio.run(main(args.samples, args.json))
