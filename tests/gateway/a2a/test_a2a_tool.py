"""The shim's ``a2a_send`` tool against a2a-sdk's own server (``sdk_agent.py``, a real process), through the real
``remoteclaw-mcp`` driven by the official MCP SDK's client, with a real gateway whose ``a2a.peers[]`` names the
SDK's server: called directly by the client (the answer, a conversation continued, the owner tier, a peer that is
not configured), and from inside a run, its CLI calling the tool as Claude Code does, the peer's words streaming
into that run's live reply while the peer answers."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gateway.a2a.conftest import PEER_TOKEN
from tests.mcp_shim.shim import shim_env
from tests.support import FAKE_CLI, ROOT
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = pytest.mark.timeout(150)


@pytest.fixture(scope="module")
def gw(sdk_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "a2a": {"peers": [{"name": "echo", "url": sdk_server, "credential": PEER_TOKEN}]}}
    with GatewayProcess(tmp_path_factory.mktemp("a2a-tool"), config=config) as proc:
        yield proc


async def call(client: Any, tool: str, args: dict[str, Any]) -> Any:
    """One ``tools/call`` with the official client."""
    return await client.call_tool(tool, args)


async def test_a2a_send_through_the_shim_under_the_official_mcp_client(gw: GatewayProcess, sdk_server: str,
                                                                       tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    def params(owner: bool) -> StdioServerParameters:
        env = shim_env(gw, tmp_path, owner=owner, plugin_manifest={"tools": []})
        return StdioServerParameters(command=sys.executable, args=["-m", "mcp_shim"], env=env, cwd=str(ROOT))

    async with Client(params(True), mode="legacy") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed["a2a_send"].input_schema["required"] == ["peer", "message"]
        assert listed["a2a_send"].annotations.open_world_hint is True
        first = await call(client, "a2a_send", {"peer": "echo", "message": "from the shim"})
        assert not first.is_error, first
        out = first.structured_content  # the SDK client checked it against the tool's outputSchema
        assert out["reply"] == "sdk says: from the shim" and out["state"] == "completed", out
        assert out["taskId"] and out["contextId"] and out["events"] >= 4
        # the gateway sent the peer's credential from its config; the tool never saw it
        seen = await asyncio.to_thread(httpx.get, sdk_server + "/seen")
        assert seen.json()["authorization"] == f"Bearer {PEER_TOKEN}"
        again = await call(client, "a2a_send", {"peer": "echo", "message": "more", "contextId": out["contextId"]})
        assert again.structured_content["contextId"] == out["contextId"]
        assert again.structured_content["taskId"] != out["taskId"]
        unknown = await call(client, "a2a_send", {"peer": "nobody", "message": "x"})
        assert unknown.is_error and "peer: no A2A peer 'nobody' (known: echo)" in unknown.content[0].text
        bad = await call(client, "a2a_send", {"peer": "echo"})
        assert bad.is_error and "message" in bad.content[0].text
    async with Client(params(False), mode="legacy") as stranger:  # owner tier only
        assert "a2a_send" not in {t.name for t in (await stranger.list_tools()).tools}
        refused = await call(stranger, "a2a_send", {"peer": "echo", "message": "x"})
        assert refused.is_error and "only for the bot's owner" in refused.content[0].text


async def test_the_peers_reply_streams_into_the_calling_runs_live_reply(gw: GatewayProcess) -> None:
    """The run's CLI calls ``a2a_send`` over MCP (the official client, as Claude Code would); the peer answers in
    three pieces 0.4 s apart, and each reaches the run's ``chat`` deltas while the tool still runs."""
    key = "agent:main:webchat:a2a-live"
    args = json.dumps({"peer": "echo", "message": "answer slowly"})
    watcher = await operator(gw.url, gw.token or "")
    try:
        sent = await watcher.call("chat.send", {"sessionKey": key, "message": f"mcp:a2a_send {args}",
                                                "idempotencyKey": "a2a-live-1"})
        run_id = sent["runId"]
        seen: list[tuple[float, str, dict[str, Any]]] = []
        async with asyncio.timeout(90):
            while True:
                frame = (await watcher.next_event("chat", timeout=90))["payload"]
                if frame.get("runId") != run_id:
                    continue
                seen.append((time.monotonic(), frame["state"], frame))
                if frame["state"] != "delta":
                    break
        tools = await watcher.call("chat.history", {"sessionKey": key})
    finally:
        await watcher.close()
    state, final = seen[-1][1], seen[-1][2]
    assert state == "final", final
    live = [(at, f["message"]["text"]) for at, s, f in seen if s == "delta"]
    peer_said = [(at, text) for at, text in live if "echo (A2A): " in text]
    texts = [text for _, text in peer_said]
    assert texts[:3] == ["echo (A2A): sdk ", "echo (A2A): sdk says: ", "echo (A2A): sdk says: answer slowly"], live
    assert peer_said[2][0] - peer_said[0][0] > 0.6  # as the peer wrote them, not all at the end
    for (_, before), (_, after) in itertools.pairwise(live):  # the live reply only grows
        assert after.startswith(before), (before, after)
    # the run's answer is the CLI's own: what the tool returned, the whole reply in it
    assert final["message"]["text"].startswith("mcp: {") and "sdk says: answer slowly" in final["message"]["text"]
    assert any("a2a_send" in json.dumps(m) for m in tools["messages"]), tools
