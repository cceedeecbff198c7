"""``runtime: acp, agent: opencode``: the real ``opencode acp`` driven over ACP, offline against the fake Chat
Completions API (the same user config as the bespoke OpenCode runtime's tests)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.gateway.agents.acp.flows import acp_flows
from tests.gateway.agents.runtimes.flows import agent_gateway, cli_workdir, fake_api
from tests.gateway.agents.runtimes.test_opencode import conversation, user_home
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway_proc import GatewayProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
api = fake_api(FakeOpenAI)


@pytest.fixture(scope="module")
def gw(api: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    opencode, d = cli_workdir(tmp_path_factory, "opencode")
    user_home(d / "home", api.url)
    env = {"HOME": str(d / "home"), "OPENCODE_DISABLE_MODELS_FETCH": "1"}
    agent = {"runtime": "acp", "agent": "opencode", "acp": {"command": opencode}, "model": "fake/fake-model",
             "env": env, "permissions": "ask"}
    with agent_gateway(d, agent, config={"approvals": {"timeoutSeconds": 60}}) as proc:
        yield proc


flows = acp_flows(requests=conversation, transcript=lambda r: json.dumps(r["messages"]),
                  shell=lambda cmd: f'CALL bash {{"command": "{cmd}", "description": "run it"}}')


async def test_a_turn_streams_calls_our_tool_and_resumes(gw: GatewayProcess, api: FakeOpenAI) -> None:
    await flows.turn_streams_calls_our_tool_and_resumes(gw, api)


async def test_an_approval_goes_to_the_person_and_back(gw: GatewayProcess, api: FakeOpenAI) -> None:
    await flows.approval_goes_to_the_person_and_back(gw, api)


async def test_stop_cancels_the_turn(gw: GatewayProcess, api: FakeOpenAI) -> None:
    await flows.stop_cancels_the_turn(gw, api)
