"""How ``runtime: acp`` answers an agent's ``session/request_permission`` in each permission mode, and the names
it reports tools under (the SDK's own models in and out; the person is a function standing in for the approvals
service)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, ToolCallUpdate

from gateway.agents.runtimes.acp_turn import TurnClient, tool_name
from gateway.agents.runtimes.base import McpServer, RunSpec

OPTIONS = [PermissionOption(option_id="a1", name="Allow", kind="allow_once"),
           PermissionOption(option_id="a2", name="Always", kind="allow_always"),
           PermissionOption(option_id="r1", name="Reject", kind="reject_once")]


def client(mode: str, decision: str = "allow-once") -> tuple[TurnClient, list[tuple[str, Any]]]:
    asked: list[tuple[str, Any]] = []

    async def approve(name: str, inp: Any) -> dict[str, Any]:
        asked.append((name, inp))
        return {"decision": decision}

    spec = RunSpec(prompt="", system_prompt="", workspace=Path("/w"), mcp=McpServer("py", (), {}),
                   permissions=mode, approve=approve)
    return TurnClient(spec, lambda ev: None), asked


async def answer(c: TurnClient, call: ToolCallUpdate) -> str:
    res = await c.request_permission(options=OPTIONS, session_id="s", tool_call=call)
    return res.outcome.option_id if isinstance(res.outcome, AllowedOutcome) else "cancelled"


SHELL = ToolCallUpdate(tool_call_id="t1", title="rm -rf build", kind="execute", raw_input={"command": "rm -rf build"})
READ = ToolCallUpdate(tool_call_id="t2", title="Read a.py", kind="read")
OURS = ToolCallUpdate(tool_call_id="t3", title="mcp__remoteclaw__sessions_list", kind="other")


@pytest.mark.parametrize(("mode", "call", "want", "asks"), [
    ("allowlist", SHELL, "r1", False), ("allowlist", OURS, "a1", False),
    ("ask", SHELL, "a1", True), ("ask", READ, "a1", True), ("ask", OURS, "a1", False),
    ("ask-dangerous", READ, "a1", False), ("ask-dangerous", SHELL, "a1", True),
    ("bypass", SHELL, "a1", False),
])
async def test_each_mode_answers(mode: str, call: ToolCallUpdate, want: str, asks: bool) -> None:
    c, asked = client(mode)
    assert await answer(c, call) == want
    assert bool(asked) == asks


async def test_the_person_is_asked_about_a_command_as_bash_and_their_answer_picks_the_option() -> None:
    c, asked = client("ask", "allow-always")
    assert await answer(c, SHELL) == "a2"
    assert asked == [("Bash", {"command": "rm -rf build"})]
    c, _ = client("ask", "deny")
    assert await answer(c, SHELL) == "r1"


async def test_no_option_of_the_kind_is_a_cancel() -> None:
    c, _ = client("ask", "deny")
    res = await c.request_permission(options=OPTIONS[:2], session_id="s", tool_call=SHELL)
    assert isinstance(res.outcome, DeniedOutcome)


def test_our_tools_are_named_alike_whatever_the_agent_calls_them() -> None:
    for title, cid in [("sessions_spawn (remoteclaw MCP Server)", "x"), (None, "mcp_remoteclaw_sessions_spawn-17-1"),
                       ("remoteclaw_sessions_spawn", "c"), ("mcp__remoteclaw__sessions_spawn", "c")]:
        assert tool_name(ToolCallUpdate(tool_call_id=cid, title=title)) == "mcp__remoteclaw__sessions_spawn"
    assert tool_name(ToolCallUpdate(tool_call_id="c", title="Bash")) == "Bash"
    meta = {"claudeCode": {"toolName": "Write"}}
    assert tool_name(ToolCallUpdate(tool_call_id="c", title="Write a.py", field_meta=meta)) == "Write"
