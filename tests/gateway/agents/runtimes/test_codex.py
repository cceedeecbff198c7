"""The real Codex CLI, offline against the loopback fake Responses API.

Codex gets a per-run CODEX_HOME whose config.toml is built from the test's "user" config (which
names the fake provider) plus our MCP server; the user's file is never changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.agents.runtimes.flows import agent_gateway, cli_workdir, fake_api, spawn_child_then_resume
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway_proc import GatewayProcess

pytestmark = pytest.mark.slow
api = fake_api(FakeOpenAI)


def user_env(d: Path, api_url: str) -> dict[str, str]:
    """The agent's env: a scratch HOME and the "user's" CODEX_HOME, whose config names the fake provider."""
    user = d / "user-codex"
    user.mkdir()
    (user / "config.toml").write_text(
        'model = "gpt-fake"\nmodel_provider = "fake"\n'
        f'[model_providers.fake]\nname = "fake"\nbase_url = "{api_url}/v1"\nwire_api = "responses"\n'
        'env_key = "FAKE_OPENAI_KEY"\n')
    return {"HOME": str(d / "home"), "CODEX_HOME": str(user), "FAKE_OPENAI_KEY": "test-key"}


@pytest.fixture(scope="module")
def gw(api: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    codex, d = cli_workdir(tmp_path_factory, "codex")
    env = user_env(d, api.url)
    with agent_gateway(d, {"runtime": "codex", "command": [codex], "env": env}, loop_channel=False) as proc:
        proc.user_config = Path(env["CODEX_HOME"]) / "config.toml"  # type: ignore[attr-defined]
        yield proc


async def test_codex_calls_a_tool_and_resumes(gw: GatewayProcess, api: FakeOpenAI) -> None:
    before_cfg = gw.user_config.read_text()  # type: ignore[attr-defined]
    await spawn_child_then_resume(gw, runtime="codex", key="agent:main:api:direct:codex", label="codex-kid",
                                  requests=lambda: api.requests, transcript=lambda r: str(r.get("input")))
    assert gw.user_config.read_text() == before_cfg  # type: ignore[attr-defined]
