"""The real Claude Code CLI, offline against the loopback fake Anthropic API.

Claude starts the real MCP shim (``python -m mcp_shim``), the fake model makes it call a tool, the
shim calls the gateway, and the effect (a child session, a message on the test channel) and the
final reply arrive. Only 127.0.0.1 is contacted: the documented switches turn off the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.agents.runtimes.flows import (
    SPAWN_TOOL,
    agent_gateway,
    channel_reply_is_sent_once,
    cli_workdir,
    fake_api,
    spawn_child_then_resume,
)
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess

pytestmark = pytest.mark.slow
api = fake_api(FakeAnthropic)


def offline_env(api_url: str, home: Path) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": api_url, "ANTHROPIC_API_KEY": "test-key", "HOME": str(home),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1", "ENABLE_TOOL_SEARCH": "false", "MCP_CONNECTION_NONBLOCKING": "0"}


@pytest.fixture(scope="module")
def gw(api: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    claude, d = cli_workdir(tmp_path_factory, "claude")
    with agent_gateway(d, {"runtime": "claude", "command": [claude], "env": offline_env(api.url, d / "home")}) as proc:
        yield proc


async def test_tool_call_through_the_shim_spawns_a_child(gw: GatewayProcess, api: FakeAnthropic) -> None:
    before = await spawn_child_then_resume(gw, runtime="claude", key="agent:main:api:direct:tester", label="kid",
                                  prefix="Delegate this.\n", requests=lambda: api.requests,
                                  transcript=lambda r: json.dumps(r.get("messages")))
    tools = [t["name"] for t in api.requests[0].get("tools", [])]
    assert SPAWN_TOOL in tools
    assert not [t for t in tools if t.startswith("mcp__") and not t.startswith("mcp__remoteclaw__")]
    assert len(api.requests[before]["messages"]) > 1  # the resumed turn carries the first one


async def test_channel_message_sent_by_tool_is_not_sent_twice(gw: GatewayProcess) -> None:
    await channel_reply_is_sent_once(gw, sender="pat", msg_id="in-1", text="Your build is green.")


async def test_the_answer_streams_as_it_is_written(gw: GatewayProcess) -> None:
    """``--include-partial-messages``: the page sees the answer grow word by word before the whole block."""
    from tests.support.ws import operator

    answer = "one two three four five six seven eight"
    c = await operator(gw.url, gw.token or "")
    try:
        sent = await c.call("chat.send", {"sessionKey": "agent:main:live", "message": f"REPLY {answer}",
                                          "idempotencyKey": "claude-live-1"})
        deltas: list[str] = []
        while True:
            ev = (await c.next_event("chat", timeout=60))["payload"]
            if ev.get("runId") != sent["runId"]:
                continue
            if ev["state"] != "delta":
                break
            deltas.append(ev["message"]["text"])
    finally:
        await c.close()
    partial = [d for d in deltas if d and d != answer]
    assert partial and all(answer.startswith(d) for d in partial), deltas
    assert deltas[-1] == answer
