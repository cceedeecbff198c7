"""``runtime: acp, agent: claude-acp``: the real Claude Code ACP adapter (``@agentclientprotocol/claude-agent-acp``,
formerly ``@zed-industries/claude-code-acp``) driven over ACP, offline against the loopback fake Anthropic API."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.gateway.agents.acp.flows import acp_flows
from tests.gateway.agents.runtimes.flows import agent_gateway, cli_workdir, fake_api
from tests.gateway.agents.runtimes.test_claude import offline_env
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
api = fake_api(FakeAnthropic)


@pytest.fixture(scope="module")
def gw(api: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    adapter, d = cli_workdir(tmp_path_factory, "claude-agent-acp")
    agent = {"runtime": "acp", "agent": "claude-acp", "acp": {"command": adapter}, "permissions": "ask",
             "env": offline_env(api.url, d / "home")}
    with agent_gateway(d, agent, config={"approvals": {"timeoutSeconds": 60}}) as proc:
        yield proc


flows = acp_flows(requests=lambda api: [r for r in api.requests if r.get("tools")],  # not its title requests
                  transcript=lambda r: json.dumps(r.get("messages")),
                  shell=lambda cmd: f'CALL Bash {{"command": "{cmd}", "description": "run it"}}')


async def test_a_turn_streams_calls_our_tool_and_resumes(gw: GatewayProcess, api: FakeAnthropic) -> None:
    await flows.turn_streams_calls_our_tool_and_resumes(gw, api)
    system = json.dumps(next(r for r in api.requests if r.get("tools")))
    # our system prompt, appended through the adapter's _meta.systemPrompt
    assert "reached through the remoteclaw gateway" in system


async def test_an_approval_goes_to_the_person_and_back(gw: GatewayProcess, api: FakeAnthropic) -> None:
    await flows.approval_goes_to_the_person_and_back(gw, api)


async def test_stop_cancels_the_turn(gw: GatewayProcess, api: FakeAnthropic) -> None:
    await flows.stop_cancels_the_turn(gw, api)
