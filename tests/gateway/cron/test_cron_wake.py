"""Cron ``wakeMode`` as OpenClaw defines it, on a real gateway through the real MCP shim.

``now`` runs a main-session job's turn at its time; ``next-heartbeat`` only queues its event, which the agent's
next heartbeat turn carries (a ``System:`` line before the heartbeat prompt), once. What cannot work is refused
naming ``wakeMode``. The job is added, switched with ``cron_update`` and fired with ``cron_run``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_shim.shim import Shim, error_text, shim_env
from tests.support import FAKE_CLI
from tests.support.fake_telegram import cli_runs
from tests.support.gateway_proc import GatewayProcess
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(120)

HEARTBEAT_PROMPT = "heartbeat check"


@pytest.fixture
def wake_gateway(tmp_path: Path) -> Any:
    config = {"agents": {"list": [
        {"id": "main", "command": [sys.executable, FAKE_CLI],
         "heartbeat": {"every": "4s", "prompt": HEARTBEAT_PROMPT, "deliver": False}},
        {"id": "plain", "command": [sys.executable, FAKE_CLI]}]}}
    state = tmp_path / "gw"
    with GatewayProcess(state, config=config, env={"FAKE_CLI_LOG": str(state / "cli.log")}) as gw:
        yield gw


async def test_next_heartbeat_queues_the_event_for_one_heartbeat_turn(wake_gateway: GatewayProcess,
                                                                      tmp_path: Path) -> None:
    gw = wake_gateway
    shim = await Shim.start(shim_env(gw, tmp_path, owner=True))
    try:
        await shim.initialize()
        before = await shim.call_ok("cron_status")
        assert before["enabled"] is True and before["jobs"] == 1  # the heartbeat job of agent main
        job = await shim.call_ok("cron_add", {"job": {
            "name": "oven", "schedule": {"kind": "cron", "expr": "0 0 1 1 *"}, "sessionTarget": "main",
            "payload": {"kind": "systemEvent", "text": "the oven timer rang"}}})
        assert job["wakeMode"] == "now"  # OpenClaw's default, and what its CLI sends
        switched = await shim.call_ok("cron_update", {"jobId": job["id"], "patch": {"wakeMode": "next-heartbeat"}})
        assert switched["wakeMode"] == "next-heartbeat"
        after = await shim.call_ok("cron_status")
        assert after["jobs"] == 2 and after["enabledJobs"] == 2

        fired = await shim.call_ok("cron_run", {"jobId": job["id"]})
        assert fired.get("ran", True) is not False, fired

        async def queued() -> Any:
            runs = (await shim.call_ok("cron_runs", {"jobId": job["id"]}))["entries"]
            return runs[0] if runs and runs[0]["status"] != "running" else None

        run = await until(queued, what="the job's run record")
        assert run["status"] == "ok" and run["summary"] == "queued for the next heartbeat of agent main", run
        # Nothing ran for the job itself: the event waits for the heartbeat.
        assert not [r for r in cli_runs(gw.state_dir) if "the oven timer rang" in r["prompt"]
                    and HEARTBEAT_PROMPT not in r["prompt"]]

        def heard() -> list[dict[str, Any]]:
            return [r for r in cli_runs(gw.state_dir) if "System: [scheduled: oven] the oven timer rang" in r["prompt"]]

        (turn,) = await until(heard, timeout=20, what="a heartbeat turn carrying the event")
        assert turn["prompt"].index("System: [scheduled: oven]") < turn["prompt"].index(HEARTBEAT_PROMPT)
        assert turn["env"]["REMOTECLAW_SESSION_KEY"] == "agent:main:main"
        beats = len([r for r in cli_runs(gw.state_dir) if HEARTBEAT_PROMPT in r["prompt"]])
        await until(lambda: len([r for r in cli_runs(gw.state_dir) if HEARTBEAT_PROMPT in r["prompt"]]) > beats,
                    timeout=20, what="the next heartbeat")
        assert len(heard()) == 1  # taken once, then cleared
        listed = (await shim.call_ok("cron_list", {"filter": "oven"}))["jobs"]
        assert listed[0]["wakeMode"] == "next-heartbeat" and listed[0]["state"]["lastStatus"] == "ok"
    finally:
        await shim.close()


async def test_what_cannot_wake_is_refused_naming_wake_mode(wake_gateway: GatewayProcess, tmp_path: Path) -> None:
    shim = await Shim.start(shim_env(wake_gateway, tmp_path, owner=True))
    try:
        await shim.initialize()
        base = {"name": "w", "schedule": {"kind": "cron", "expr": "0 0 1 1 *"},
                "payload": {"kind": "systemEvent", "text": "t"}, "sessionTarget": "main"}
        for job, why in [
            ({**base, "wakeMode": "later"}, "wakeMode: expected now or next-heartbeat, got 'later'"),
            ({**base, "wakeMode": "next-heartbeat", "sessionTarget": "isolated",
              "payload": {"kind": "agentTurn", "message": "m"}}, "wakeMode: next-heartbeat waits for the main"),
            ({**base, "wakeMode": "next-heartbeat", "agentId": "plain"},
             "wakeMode: agent 'plain' has no heartbeat"),
        ]:
            assert why in error_text(await shim.call("cron_add", {"job": job})), job
        ok = await shim.call_ok("cron_add", {"job": {**base, "agentId": "plain"}})
        refused = await shim.call("cron_update", {"jobId": ok["id"], "patch": {"wakeMode": "next-heartbeat"}})
        assert "wakeMode: agent 'plain' has no heartbeat" in error_text(refused)
    finally:
        await shim.close()
