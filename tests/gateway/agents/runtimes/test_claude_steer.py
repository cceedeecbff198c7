"""Steering mode ``steer`` with the real Claude Code CLI: a message sent mid-turn goes into the running CLI.

Claude Code runs with ``--input-format stream-json`` and its stdin open; the loopback fake Anthropic API takes
its time over the first message (``SLOW``), the second chat message arrives meanwhile and is written to the
same process, which answers both in one conversation; the chat gets one reply with both answers, and only
then does the CLI end.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from tests.gateway.agents.runtimes.flows import agent_gateway, cli_workdir, fake_api, loop_dm, loop_sent
from tests.gateway.agents.runtimes.test_claude import offline_env
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess
from tests.support.waiting import until
from tests.support.ws import operator

pytestmark = pytest.mark.slow
api = fake_api(FakeAnthropic)
SENDER = "phone"


@pytest.fixture(scope="module")
def gw(api: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    claude, d = cli_workdir(tmp_path_factory, "claude")
    agent = {"runtime": "claude", "command": [claude], "env": offline_env(api.url, d / "home"), "steering": "steer"}
    with agent_gateway(d, agent) as proc:
        yield proc


async def test_a_message_sent_mid_turn_is_answered_by_the_running_cli(gw: GatewayProcess, api: FakeAnthropic) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        await asyncio.to_thread(dm, gw, "s1", "SLOW 6\nREPLY the first part is done")
        while True:  # the turn has started: its CLI is about to take messages
            ev = (await c.next_event("agent", timeout=30))["payload"]
            if ev["data"].get("phase") == "start":
                run_id = ev["runId"]
                break
        await asyncio.sleep(2.5)  # Claude Code is up and waiting for the slow model
        await asyncio.to_thread(dm, gw, "s2", "REPLY and the second one too")
        replies = await until(lambda: sent(gw), 90, "the reply")
        assert replies == ["the first part is done\n\nand the second one too"]
        result = await c.call("agent.wait", {"runId": run_id, "timeoutMs": 30_000}, timeout=40)
        assert result["status"] == "ok"
        history = (await c.call("chat.history", {"sessionKey": f"agent:main:loop:direct:{SENDER}"}))["messages"]
        users = [m for m in history if m["role"] == "user"]
        assert [m.get("runId") for m in users] == [run_id, run_id]  # one turn carried both messages
    finally:
        await c.close()
    # One Claude Code conversation: the second message's model request carries the first exchange.
    second = next(r for r in api.requests if "and the second one too" in json.dumps(r["messages"][-1]))
    assert "the first part is done" in json.dumps(second["messages"])


def dm(gw: GatewayProcess, msg_id: str, text: str) -> None:
    loop_dm(gw, SENDER, msg_id, text)


def sent(gw: GatewayProcess) -> list[str]:
    return loop_sent(gw, SENDER)
