"""Hooks seen by an operator, side effects under concurrency, and a gateway restart mid-session."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.mcp_shim.conftest import ShimFactory
from tests.mcp_shim.shim import error_text
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.timeout(90)


async def _hook_events(watcher: RawClient, count: int) -> list[dict]:
    return [(await watcher.next_event("hooks.tool"))["payload"] for _ in range(count)]


async def test_hooks_before_and_after_reach_operators(agent_gateway: GatewayProcess, start_shim: ShimFactory,
                                                      watcher: RawClient) -> None:
    shim = await start_shim(agent_gateway, plugin_manifest={"tools": []})
    await shim.call_ok("agents_list")
    events = await _hook_events(watcher, 2)
    assert [e["phase"] for e in events] == ["before", "after"]
    assert all(e["toolName"] == "agents_list" and e["sessionKey"] == "agent:main:main" for e in events)
    assert events[1]["durationMs"] >= 0 and "error" not in events[1]
    # A failing call reports its error in the after hook.
    error_text(await shim.call("node_describe", {"nodeId": "n9"}))
    events = await _hook_events(watcher, 2)
    assert events[0] == {**events[0], "phase": "before", "toolName": "node_describe", "params": {"nodeId": "n9"}}
    assert events[1]["phase"] == "after" and "unknown node: n9" in events[1]["error"]


async def test_a_failing_hook_never_fails_the_call(agent_gateway: GatewayProcess, start_shim: ShimFactory) -> None:
    # The hook methods refuse session keys over 512 characters; agents_list does not send one.
    shim = await start_shim(agent_gateway, session_key="agent:main:" + "x" * 600, plugin_manifest={"tools": []})
    result = await shim.call("agents_list", {})
    assert not result.get("isError")
    await shim.close()
    stderr = await shim.stderr()
    assert "hooks.tool.before failed" in stderr and "hooks.tool.after failed" in stderr


async def test_side_effects_under_concurrent_calls(agent_gateway: GatewayProcess, start_shim: ShimFactory,
                                                   tmp_path: Path) -> None:
    shims = [await start_shim(agent_gateway, owner=False, plugin_manifest={"tools": []}) for _ in range(3)]
    texts = [f"msg {i} " + "x" * (i * 97 % 3000) for i in range(60)]
    calls = [shims[i % 3].call("message_send", {"target": "agent:main:fanout", "message": t})
             for i, t in enumerate(texts)]
    results = await asyncio.gather(*calls)
    assert not any(r.get("isError") for r in results)
    lines = (tmp_path / "side-effects.ndjson").read_text().splitlines()
    assert len(lines) == 60
    records = [json.loads(line) for line in lines]  # every line whole: no interleaving
    assert sorted(r["text"] for r in records) == sorted(texts)
    assert {r["type"] for r in records} == {"message_sent"}


async def test_non_owner_connects_with_least_privilege(agent_gateway: GatewayProcess, start_shim: ShimFactory,
                                                       watcher: RawClient) -> None:
    shim = await start_shim(agent_gateway, owner=False, plugin_manifest={"tools": []})
    await shim.call_ok("agents_list")
    presence = await watcher.call("system-presence")
    mine = [p for p in presence if p["host"] == "remoteclaw-mcp"]
    assert mine and all(p["mode"] == "backend" for p in mine)
    assert "owner" in error_text(await shim.call("gateway_restart"))


async def test_gateway_restart_mid_session(tmp_path: Path, start_shim: ShimFactory) -> None:
    with GatewayProcess(tmp_path / "gw") as gw:
        shim = await start_shim(gw, plugin_manifest={"tools": []})
        await shim.call_ok("gateway_config_get", {"key": "agents.default"})
        restarting = await shim.call_ok("gateway_restart")
        assert restarting["restarting"] is True
        await asyncio.sleep(0.5)
        gw.wait_healthy(20)
        # The same shim process (same MCP session) reconnects on the next call.
        after = await shim.call_ok("gateway_config_get", {"key": "agents.default"})
        assert after["value"] == "main"
        client = await operator(gw.url, gw.token or "")
        presence = await client.call("system-presence")
        assert [p["host"] for p in presence].count("remoteclaw-mcp") == 1
        await client.close()
        await shim.close()
