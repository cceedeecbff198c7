"""The real Claude Code asks the person before running a command outside its allow-list (``permissions: ask``).

Claude Code runs against the loopback fake Anthropic API, which makes it use ``Bash``; in ``ask`` mode Claude
calls the shim's ``approval_prompt`` (``--permission-prompt-tool``), the gateway holds the request, and an
operator decides over the real gateway. The commands write a file: Claude Code runs the read-only ones (``echo``)
without asking anyone. Allow runs the command and its output reaches the model; Deny gives the
model the denial; nobody deciding in time denies.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.gateway.agents.runtimes.flows import (
    approval_asked,
    cli_workdir,
    fake_api,
    last_reply,
    start_turn,
    undecided_turn,
)
from tests.gateway.agents.runtimes.test_claude import offline_env
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
api = fake_api(FakeAnthropic)


@pytest.fixture(scope="module")
def gw(api: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    claude, d = cli_workdir(tmp_path_factory, "claude")
    agent = {
        "id": "main",
        "runtime": "claude",
        "command": [claude],
        "permissions": "ask",
        "env": offline_env(api.url, d / "home"),
    }
    config = {"agents": {"list": [agent]}, "approvals": {"timeoutSeconds": 8}}
    with GatewayProcess(d / "gw", config=config) as proc:
        yield proc


def tool_results(api: FakeAnthropic) -> list[str]:
    out = []
    for req in api.requests:
        for msg in req.get("messages") or []:
            for block in msg.get("content") if isinstance(msg.get("content"), list) else []:
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    out.append(content if isinstance(content, str) else str(content))
    return out


async def test_allow_runs_the_command_and_its_output_reaches_the_model(gw: GatewayProcess, api: FakeAnthropic) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        key = "agent:main:allow"
        done = await start_turn(
            c, 'CALL Bash {"command": "touch made.txt && echo approved-$((6*7))", "description": "say it"}', key
        )
        event = await approval_asked(c, key)
        assert event["presentation"]["commandText"] == "Bash: touch made.txt && echo approved-$((6*7))"
        await c.call("exec.approval.resolve", {"id": event["id"], "decision": "allow-once"})
        await done
        assert await last_reply(c, key) == "done: approved-42"
        assert any("approved-42" in r for r in tool_results(api))
    finally:
        await c.close()


async def test_deny_returns_the_message_to_the_model_and_a_timeout_denies(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        key = "agent:main:deny"
        done = await start_turn(c, 'CALL Bash {"command": "touch /tmp/should-not-exist-30", "description": "x"}', key)
        event = await approval_asked(c, key)
        await c.call("exec.approval.resolve", {"id": event["id"], "decision": "deny"})
        await done
        reply = await last_reply(c, key)
        assert "denied permission to use Bash" in reply
        # nobody decides: after approvals.timeoutSeconds it is a deny
        late = 'CALL Bash {"command": "touch late.txt", "description": "x"}'
        reply = await undecided_turn(c, late, "agent:main:late")
        assert "not given in time" in reply
    finally:
        await c.close()
