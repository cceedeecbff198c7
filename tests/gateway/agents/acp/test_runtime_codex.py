"""``runtime: acp, agent: codex-acp``: the real Codex ACP adapter (``@agentclientprotocol/codex-acp``, driving the
pinned ``codex app-server``) over ACP, offline against the loopback fake Responses API."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from tests.gateway.agents.acp.flows import acp_flows
from tests.gateway.agents.runtimes.conftest import cli
from tests.gateway.agents.runtimes.flows import agent_gateway, cli_workdir, fake_api
from tests.gateway.agents.runtimes.test_codex import user_env
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway_proc import GatewayProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
api = fake_api(FakeOpenAI)


@pytest.fixture(scope="module")
def gw(api: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    adapter, d = cli_workdir(tmp_path_factory, "codex-acp")
    codex = cli("codex")
    env = {**user_env(d, api.url), "CODEX_PATH": codex,
           "PATH": f"{os.path.dirname(codex)}:{os.environ.get('PATH', '')}"}
    agent = {"runtime": "acp", "agent": "codex-acp", "acp": {"command": adapter}, "permissions": "ask", "env": env}
    with agent_gateway(d, agent, config={"approvals": {"timeoutSeconds": 60}}) as proc:
        yield proc


flows = acp_flows(requests=lambda api: api.requests, transcript=lambda r: json.dumps(r.get("input")),
                  shell=lambda cmd: "CALL exec_command " + json.dumps({"cmd": cmd}))


async def test_a_turn_streams_calls_our_tool_and_resumes(gw: GatewayProcess, api: FakeOpenAI) -> None:
    await flows.turn_streams_calls_our_tool_and_resumes(gw, api)


async def test_an_approval_goes_to_the_person_and_back(gw: GatewayProcess, api: FakeOpenAI) -> None:
    await flows.approval_goes_to_the_person_and_back(gw, api)


async def test_stop_cancels_the_turn(gw: GatewayProcess, api: FakeOpenAI) -> None:
    await flows.stop_cancels_the_turn(gw, api)
