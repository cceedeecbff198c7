"""The real OpenCode CLI, offline against the loopback fake Chat Completions API.

The test's "user" OpenCode config (in a scratch HOME) declares an OpenAI-compatible provider whose
``baseURL`` is the fake; the adapter adds our MCP server in the workspace's ``opencode.json``.
Two things would reach public hosts and are switched off: the models.dev catalog fetch
(``OPENCODE_DISABLE_MODELS_FETCH``) and the background npm install of ``@opencode-ai/plugin`` into
each config folder (skipped when the folder's lockfile already lists it, as it does here).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.agents.runtimes.flows import (
    agent_gateway,
    channel_reply_is_sent_once,
    cli_workdir,
    fake_api,
    spawn_child_then_resume,
)
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway_proc import GatewayProcess

pytestmark = pytest.mark.slow
api = fake_api(FakeOpenAI)


def user_home(home: Path, api_url: str) -> None:
    """A HOME whose OpenCode config names the fake provider and counts its plugin package as installed."""
    cfg = home / ".config" / "opencode"
    (cfg / "node_modules").mkdir(parents=True)
    (cfg / "package-lock.json").write_text(json.dumps(
        {"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}))
    # With ``$schema`` already there OpenCode leaves the file alone (it adds one to a file without it).
    (cfg / "opencode.json").write_text(json.dumps({"$schema": "https://opencode.ai/config.json", "provider": {"fake": {
        "npm": "@ai-sdk/openai-compatible", "name": "Fake",
        "options": {"baseURL": f"{api_url}/v1", "apiKey": "test-key"},
        "models": {"fake-model": {"name": "Fake model", "tool_call": True}}}}}))


@pytest.fixture(scope="module")
def gw(api: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    opencode, d = cli_workdir(tmp_path_factory, "opencode")
    user_home(d / "home", api.url)
    env = {"HOME": str(d / "home"), "OPENCODE_DISABLE_MODELS_FETCH": "1"}
    agent = {"runtime": "opencode", "command": [opencode], "model": "fake/fake-model", "env": env}
    with agent_gateway(d, agent) as proc:
        proc.user_config = d / "home" / ".config" / "opencode" / "opencode.json"  # type: ignore[attr-defined]
        yield proc


def conversation(api: FakeOpenAI) -> list[dict]:
    """The agent's requests (they offer tools), not OpenCode's title requests."""
    return [r for r in api.chat_requests if r.get("tools")]


async def test_opencode_calls_a_tool_through_the_shim_and_resumes(gw: GatewayProcess, api: FakeOpenAI) -> None:
    before_cfg = gw.user_config.read_text()  # type: ignore[attr-defined]
    await spawn_child_then_resume(gw, runtime="opencode", key="agent:main:api:direct:opencode", label="oc-kid",
                                  requests=lambda: conversation(api), transcript=lambda r: json.dumps(r["messages"]))
    first = conversation(api)[0]
    assert first["model"] == "fake-model"
    assert first["messages"][-1]["content"].startswith('CALL sessions_spawn {"task"')  # the prompt arrives unaltered
    assert gw.user_config.read_text() == before_cfg  # type: ignore[attr-defined]
    assert all(p == "POST /v1/chat/completions" for p in api.paths), api.paths


async def test_channel_message_sent_by_tool_is_not_sent_twice(gw: GatewayProcess) -> None:
    await channel_reply_is_sent_once(gw, sender="oc", msg_id="in-o1", text="Tests are green.")
