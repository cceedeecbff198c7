"""A plugin tool in a real agent turn: the real Claude Code CLI (offline, against the loopback fake Anthropic
API) gets the plugin tools from the shim the executor configured, calls one, and a blocking hook's reason reaches
the model as the tool's error."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.gateway.agents.runtimes.flows import ask, cli_workdir, fake_api
from tests.gateway.agents.runtimes.test_claude import offline_env
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = pytest.mark.slow
api = fake_api(FakeAnthropic)


@pytest.fixture(scope="module")
def gw(api: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    claude, d = cli_workdir(tmp_path_factory, "claude")
    config = {"agents": {"list": [{"id": "main", "runtime": "claude", "command": [claude],
                                   "env": offline_env(api.url, d / "home")}]},
              "plugins": {"entries": {"example": {"enabled": True, "config": {"blockedWords": ["launch codes"]}}}}}
    with GatewayProcess(d / "gw", config=config) as proc:
        yield proc


async def test_the_agent_calls_a_plugin_tool_and_hears_a_blocking_hook(gw: GatewayProcess, api: FakeAnthropic) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        res = await ask(c, 'CALL example_greet {"name": "Ada"}', "agent:main:main")
        assert res["status"] == "ok" and "Hello, Ada!" in res["reply"], res
        tools = {t["name"] for t in api.requests[0].get("tools", [])}
        assert {"mcp__remoteclaw__example_greet", "mcp__remoteclaw__memory_search"} <= tools
        res = await ask(c, 'CALL example_greet {"name": "the launch codes"}', "agent:main:main")
        assert res["status"] == "ok", res
        last = json.dumps(api.requests[-1]["messages"][-1])
        assert "blocked by plugin example" in last, last
        assert (await c.call("example.stats"))["calls"]["example_greet"] == 1
    finally:
        await c.close()
