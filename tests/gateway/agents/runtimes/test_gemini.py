"""The real Gemini CLI, offline against the loopback fake Gemini API.

Gemini starts the real MCP shim from the per-run project settings, the fake model makes it call a
tool, the shim calls the gateway, and the effect (a child session, a message on the test channel)
and the final reply arrive. ``GOOGLE_GEMINI_BASE_URL`` points it at the fake; usage statistics,
telemetry and update checks are off in the settings the adapter writes, so only 127.0.0.1 is
contacted.
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
from tests.support.fake_gemini import FakeGemini
from tests.support.gateway_proc import GatewayProcess

pytestmark = pytest.mark.slow
api = fake_api(FakeGemini)


def user_env(d: Path, api_url: str) -> dict[str, str]:
    """The agent's env: a scratch HOME, the fake's URL and a key, and no self-relaunch."""
    return {"HOME": str(d / "home"), "GOOGLE_GEMINI_BASE_URL": api_url, "GEMINI_API_KEY": "test-key",
            "GEMINI_CLI_NO_RELAUNCH": "true", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def gw(api: FakeGemini, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gemini, d = cli_workdir(tmp_path_factory, "gemini")
    env = user_env(d, api.url)
    with agent_gateway(d, {"runtime": "gemini", "command": [gemini], "model": "gemini-2.5-flash", "env": env}) as proc:
        yield proc


async def test_gemini_calls_a_tool_through_the_shim_and_resumes(gw: GatewayProcess, api: FakeGemini) -> None:
    # Gemini reports MCP tools under its own names, so only the ``sessions_spawn`` suffix is checked.
    await spawn_child_then_resume(gw, runtime="gemini", key="agent:main:api:direct:gemini", label="gem-kid",
                                  spawn_tool=None, requests=lambda: api.requests,
                                  transcript=lambda r: json.dumps(r.get("contents")))
    assert all(p.startswith("POST /v1beta/models/") for p in api.paths), api.paths


async def test_channel_message_sent_by_tool_is_not_sent_twice(gw: GatewayProcess) -> None:
    await channel_reply_is_sent_once(gw, sender="gem", msg_id="in-g1", text="Deploy finished.")
