"""No agent process outlives its gateway: ``gateway.restart`` and SIGTERM stop running CLIs and their children.

The agent CLI is ``hang_cli.py``: it starts a child (as a real CLI starts the MCP shim), records both
pids and hangs, so only the gateway's stop path can end it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from pathlib import Path

from tests.support import SUPPORT
from tests.support.gateway_proc import GatewayProcess
from tests.support.procs import alive, host_pid
from tests.support.ws import RawClient, operator

HANG_CLI = str(SUPPORT / "hang_cli.py")


def start(tmp: Path, **env: str) -> GatewayProcess:
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, HANG_CLI]}],
                      "noOutputTimeoutSeconds": 300, "timeoutSeconds": 600}}
    return GatewayProcess(tmp / "gw", config=cfg, env={"HANG_CLI_PIDS": str(tmp / "pids"), **env}).start()


def read_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def start_run(c: RawClient, pid_file: Path, n: int) -> dict[str, int]:
    await c.call("chat.send", {"sessionKey": f"agent:main:orphan:{n}", "message": "hang",
                               "idempotencyKey": str(uuid.uuid4())})
    for _ in range(200):
        lines = read_lines(pid_file)
        if len(lines) >= n:
            entry = json.loads(lines[n - 1])
            marker = f"REMOTECLAW_RUN_ID={entry['run']}"  # the run reports its sandbox's pids
            pids = {k: host_pid(entry[k], marker) for k in ("cli", "child")}
            assert alive(pids["cli"]) and alive(pids["child"])
            return pids
        await asyncio.sleep(0.05)
    raise AssertionError("the agent CLI never started")


async def gone(pids: dict[str, int], within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids.values()):
            return True
        await asyncio.sleep(0.1)
    return False


async def kill_leftovers(pids: dict[str, int]) -> None:
    for pid in pids.values():
        if alive(pid):
            os.kill(pid, 9)


async def test_restart_and_sigterm_leave_no_agent_processes(tmp_path: Path) -> None:
    gw = start(tmp_path)
    pid_file = tmp_path / "pids"
    try:
        c = await operator(gw.url, gw.token or "")
        first = await start_run(c, pid_file, 1)
        await c.call("gateway.restart", {"reason": "review"})
        await c.wait_closed()
        try:
            assert await gone(first), f"agent processes survived gateway.restart: {first}"
        finally:
            await kill_leftovers(first)
        gw.wait_healthy()
        c = await operator(gw.url, gw.token or "")
        second = await start_run(c, pid_file, 2)
        await c.close()
        gw.stop()
        try:
            assert await gone(second, 2.0), f"agent processes survived SIGTERM: {second}"
        finally:
            await kill_leftovers(second)
    finally:
        gw.stop()


async def test_a_cli_that_ignores_sigterm_is_killed_on_stop(tmp_path: Path) -> None:
    gw = start(tmp_path, HANG_CLI_IGNORE_TERM="1")
    try:
        c = await operator(gw.url, gw.token or "")
        pids = await start_run(c, tmp_path / "pids", 1)
        await c.close()
        gw.stop()
        try:
            assert await gone(pids, 2.0), f"agent processes survived SIGTERM: {pids}"
        finally:
            await kill_leftovers(pids)
    finally:
        gw.stop()
