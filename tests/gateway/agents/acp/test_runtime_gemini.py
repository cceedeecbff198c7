"""``runtime: acp, agent: gemini``: the real ``gemini --acp`` driven over ACP, offline against the loopback fake
Gemini API (our MCP shim given in ``session/new``, not in the project settings as the bespoke runtime does)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.gateway.agents.acp.flows import acp_flows
from tests.gateway.agents.runtimes.flows import agent_gateway, cli_workdir, fake_api
from tests.gateway.agents.runtimes.test_gemini import user_env
from tests.support.fake_gemini import FakeGemini
from tests.support.gateway_proc import GatewayProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
api = fake_api(FakeGemini)


@pytest.fixture(scope="module")
def gw(api: FakeGemini, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gemini, d = cli_workdir(tmp_path_factory, "gemini")
    agent = {"runtime": "acp", "agent": "gemini", "acp": {"command": gemini}, "model": "gemini-2.5-flash",
             "permissions": "ask", "env": user_env(d, api.url)}
    with agent_gateway(d, agent, config={"approvals": {"timeoutSeconds": 60}}) as proc:
        yield proc


flows = acp_flows(requests=lambda api: api.requests, transcript=lambda r: json.dumps(r.get("contents")),
                  shell=lambda cmd: f'CALL run_shell_command {{"command": "{cmd}"}}')


async def test_a_turn_streams_and_calls_our_tool(gw: GatewayProcess, api: FakeGemini) -> None:
    """Not the resume: Gemini 0.61 refuses ``session/load`` of the session it just recorded ("No previous sessions
    found for this project", as with the bespoke runtime's ``--acp`` mode, docs/runtimes.md), so the driver starts
    the second turn afresh; it still answers."""
    await flows.turn_streams_and_calls_our_tool(gw, api)


async def test_an_approval_goes_to_the_person_and_back(gw: GatewayProcess, api: FakeGemini) -> None:
    await flows.approval_goes_to_the_person_and_back(gw, api)


async def test_stop_cancels_the_turn(gw: GatewayProcess, api: FakeGemini) -> None:
    await flows.stop_cancels_the_turn(gw, api)
