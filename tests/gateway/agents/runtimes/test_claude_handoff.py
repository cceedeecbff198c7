"""``/handoff`` with the real Claude Code CLI: the printed command resumes the chat's conversation at the desk.

A chat turn on the loop test channel runs Claude Code against the loopback fake Anthropic API; ``/handoff``
answers with a shell line; that line, run by a shell (non-interactively: ``-p`` added, as a person at the
desk would simply press Enter), resumes the same session, and the fake model sees the earlier turn.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.gateway.agents.runtimes.flows import agent_gateway, cli_workdir, fake_api, loop_dm, loop_sent
from tests.gateway.agents.runtimes.test_claude import offline_env
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess
from tests.support.waiting import until

pytestmark = pytest.mark.slow
api = fake_api(FakeAnthropic)
SENDER = "desk"


@pytest.fixture(scope="module")
def setup(api: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, dict]]:
    claude, d = cli_workdir(tmp_path_factory, "claude")
    env = offline_env(api.url, d / "home")
    with agent_gateway(d, {"runtime": "claude", "command": [claude], "env": env}) as proc:
        yield proc, env


async def test_the_printed_command_resumes_the_session(
    setup: tuple[GatewayProcess, dict[str, Any]], api: FakeAnthropic
) -> None:
    gw, env = setup
    await asyncio.to_thread(dm, gw, "m1", "REPLY noted: the zebra password")
    await until(lambda: "noted: the zebra password" in sent(gw), 90, "the first answer")
    await asyncio.to_thread(dm, gw, "m2", "/handoff")
    answer = await until(
        lambda: [t for t in sent(gw) if t.startswith("Continue this conversation")], 20, "the /handoff answer"
    )
    line = next(x for x in answer[0].splitlines() if x.startswith("mkdir -p "))
    assert " --resume " in line and line.split(" --resume ")[0].endswith("claude")
    before = len(api.requests)
    shell_env = {"PATH": os.environ["PATH"], **env}
    done = await asyncio.to_thread(
        subprocess.run,
        ["bash", "-c", line + " -p --output-format json"],
        input="REPLY back at the desk",
        capture_output=True,
        text=True,
        env=shell_env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == "back at the desk"
    seen = json.dumps([r.get("messages") for r in api.requests[before:]])
    assert "the zebra password" in seen  # the resumed session carries the chat's turn


def dm(gw: GatewayProcess, msg_id: str, text: str) -> None:
    loop_dm(gw, SENDER, msg_id, text)


def sent(gw: GatewayProcess) -> list[str]:
    return loop_sent(gw, SENDER)
