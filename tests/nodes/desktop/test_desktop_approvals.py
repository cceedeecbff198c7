"""Approvals for desktop actions: the real Claude Code (``permissions: ask``) clicks, the person is asked, a deny
reaches the model as a refusal, and the app was not touched; inspection does not ask.

Claude Code runs against the loopback fake Anthropic API, which makes it call the shim's ``desktop_*`` tools;
the node host runs with Cua Driver inside a real Xvfb session with zenity, paired with the real gateway.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.gateway.agents.runtimes.flows import approval_asked, cli_workdir, fake_api, start_turn
from tests.gateway.agents.runtimes.test_claude import offline_env
from tests.gateway.agents.runtimes.test_claude_approvals import tool_results
from tests.nodes.desktop.conftest import desktop_node, entry_text, window_of
from tests.support.desktop import DesktopSession
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
api = fake_api(FakeAnthropic)


@pytest.fixture(scope="module")
def gw(api: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    claude, d = cli_workdir(tmp_path_factory, "claude")
    agent = {"id": "main", "runtime": "claude", "command": [claude], "permissions": "ask",
             "env": offline_env(api.url, d / "home")}
    with GatewayProcess(d / "gw", config={"agents": {"list": [agent]}, "approvals": {"timeoutSeconds": 60}}) as proc:
        yield proc


@pytest.fixture(scope="module")
async def admin(gw: GatewayProcess, desktop: DesktopSession, tmp_path_factory: pytest.TempPathFactory
                ) -> AsyncIterator[RawClient]:
    async with desktop_node(gw, desktop, tmp_path_factory.mktemp("desknode") / "state", "askbox") as (c, _node, _id):
        yield c


async def test_a_click_waits_for_the_person_and_a_deny_reaches_the_model_as_refused(
        admin: RawClient, desktop: DesktopSession, api: FakeAnthropic, tmp_path: Path) -> None:
    zen = desktop.zenity("Ask first")
    window = await window_of(admin, zen.pid)
    _text, snapshot = await entry_text(admin, zen.pid, window["window_id"])
    key = "agent:main:desk-deny"
    click = {"pid": zen.pid, "element_token": f"{snapshot}:2"}
    done = await start_turn(admin, f"CALL mcp__remoteclaw__desktop_click {json.dumps(click)}", key)
    event = await approval_asked(admin, key)
    assert "desktop_click" in event["presentation"]["commandText"]
    await asyncio.sleep(1)
    assert zen.poll() is None  # waiting for the person: nothing was clicked
    await admin.call("exec.approval.resolve", {"id": event["id"], "decision": "deny"})
    await done
    results = [r for r in tool_results(api) if "desktop_click" in r]
    assert results and "refused: the person did not allow desktop_click" in results[-1], results
    assert "denied by" in results[-1], results
    assert zen.poll() is None  # still open: the OK button was never pressed
    zen.terminate()


async def test_inspection_does_not_ask_and_a_recording_keeps_what_the_run_was_asked_and_called(
        admin: RawClient, desktop: DesktopSession, api: FakeAnthropic) -> None:
    zen = desktop.zenity("Just look")
    window = await window_of(admin, zen.pid)
    key = "agent:main:desk-look"
    await admin.call("desktop.record.start", {"sessionKey": key})
    call = {"pid": zen.pid, "window_id": window["window_id"]}
    prompt = f"CALL mcp__remoteclaw__desktop_get_window_state {json.dumps(call)}"
    done = await start_turn(admin, prompt, key)
    await done  # no approval was asked: the turn ends on its own
    assert any('push button "OK"' in r for r in tool_results(api))
    saved = await admin.call("desktop.record.stop", {}, timeout=60)
    # Beside the (empty: inspection is not an action) recording, what the run was asked and which tools it called.
    assert saved["turns"] == []
    assert any(prompt in str(a["text"]) for a in saved["asked"]), saved["asked"]
    assert "desktop_get_window_state" in [c["toolName"] for c in saved["toolCalls"]], saved["toolCalls"]
    assert [c["tool"] for c in saved["desktopCalls"]] == ["get_window_state"]
    assert saved["desktopCalls"][0]["readOnly"] is True and saved["desktopCalls"][0]["approval"] is None
    zen.terminate()


async def test_an_agent_cannot_go_around_the_approval_with_node_invoke(
        admin: RawClient, desktop: DesktopSession, api: FakeAnthropic) -> None:
    zen = desktop.zenity("No detour")
    window = await window_of(admin, zen.pid)
    _text, snapshot = await entry_text(admin, zen.pid, window["window_id"])
    detour = {"nodeId": "askbox", "command": "desktop.click",
              "params": {"pid": zen.pid, "element_token": f"{snapshot}:2"}}
    done = await start_turn(admin, f"CALL mcp__remoteclaw__node_invoke {json.dumps(detour)}", "agent:main:detour")
    await done
    results = [r for r in tool_results(api) if "desktop.click" in r]
    assert results and "through the desktop_* tools" in results[-1], results
    await asyncio.sleep(0.5)
    assert zen.poll() is None  # not clicked
    zen.terminate()
