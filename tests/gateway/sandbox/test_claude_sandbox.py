"""The real Claude Code, told by its (scripted) model to Read the gateway's config, cannot: the sandbox holds.

Claude Code runs offline against the loopback fake Anthropic API in ``ask-dangerous`` mode, where its Read tool
runs without asking anyone (docs/approvals.md): only the operating system stands between the agent and the
file. The config carries a marker; the tool result the model gets back must not. With ``mode: off`` the same
turn reads it, so the test can fail.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests.gateway.agents.runtimes.flows import cli_workdir, fake_api, start_turn
from tests.gateway.agents.runtimes.test_claude import offline_env
from tests.gateway.agents.runtimes.test_claude_approvals import tool_results
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
api = fake_api(FakeAnthropic)
MARKER = f"agent-name-{uuid.uuid4().hex}"
"""In the gateway's config file only."""


@pytest.fixture(scope="module")
def gw(api: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    claude, d = cli_workdir(tmp_path_factory, "claude")
    agent = {"id": "main", "name": MARKER, "runtime": "claude", "command": [claude], "permissions": "ask-dangerous",
             "env": offline_env(api.url, d / "home")}
    with GatewayProcess(d / "gw", config={"agents": {"list": [agent]}}) as proc:
        yield proc


async def read_config(gw: GatewayProcess, api: FakeAnthropic, key: str) -> str:
    """One owner's turn whose model calls Read on the gateway's config; the tool result Claude Code sent back."""
    c = await operator(gw.url, gw.token or "")
    try:
        before = len(tool_results(api))
        path = gw.state_dir / "remoteclaw.json"
        done = await start_turn(c, f'CALL Read {json.dumps({"file_path": str(path)})}', key)
        assert (await done)["status"] == "ok"
    finally:
        await c.close()
    results = tool_results(api)[before:]
    assert results, "the model got no tool result"
    return "\n".join(results)


async def test_read_of_the_gateways_config_fails_inside_the_sandbox(gw: GatewayProcess, api: FakeAnthropic) -> None:
    assert MARKER in (gw.state_dir / "remoteclaw.json").read_text()
    seen = await read_config(gw, api, "agent:main:sandboxed")
    assert MARKER not in seen
    assert "does not exist" in seen or "No such file" in seen or "not found" in seen.lower(), seen[:500]


async def test_with_the_sandbox_off_the_same_read_succeeds(gw: GatewayProcess, api: FakeAnthropic) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        h = (await c.call("config.get"))["hash"]
        await c.call("config.patch", {"patch": {"agents": {"defaults": {"sandbox": {"mode": "off"}}}}, "baseHash": h})
    finally:
        await c.close()
    assert MARKER in await read_config(gw, api, "agent:main:unsandboxed")
