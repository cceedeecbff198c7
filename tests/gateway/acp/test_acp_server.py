"""``remoteclaw acp`` driven by the ACP Python SDK's client side (``agent-client-protocol``: nothing of the protocol
written here), against a real gateway whose agent is the stand-in CLI.

The SDK starts ``remoteclaw acp`` as an editor would; the session it opens is a gateway session, so its turns are in
``chat.history`` for the web chat and the phone.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AllowedOutcome,
    DeniedOutcome,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from tests.support import SUPPORT
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
FAKE_CLI = str(SUPPORT / "fake_cli.py")
REMOTECLAW = str(Path(sys.executable).parent / "remoteclaw")


class Editor:
    """The editor's side: what the agent streamed, and its permission requests answered with ``choice``."""

    def __init__(self, choice: str = "allow-once", answer: str = "SQLite") -> None:
        self.updates: list[Any] = []
        self.asked: list[Any] = []
        self.choice = choice
        self.answer = answer

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any,
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        chosen = next((o for o in options if o.option_id == self.choice or o.name == self.answer), None)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, AgentMessageChunk))


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("acp-server")
    config = {"agents": {"list": [{"id": "main", "runtime": "claude", "command": [sys.executable, FAKE_CLI]}]},
              "approvals": {"timeoutSeconds": 60}}
    with GatewayProcess(d / "gw", config=config) as proc:
        yield proc


def editor_for(gw: GatewayProcess, editor: Editor, *extra: str) -> Any:
    return spawn_agent_process(editor, REMOTECLAW, "acp", "--url", gw.url, "--token", gw.token or "", *extra)


async def test_a_session_streams_asks_cancels_and_loads(gw: GatewayProcess) -> None:
    editor = Editor()
    async with editor_for(gw, editor) as (conn, _proc):
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_info is not None and init.agent_info.name == "remoteclaw"
        assert init.agent_capabilities is not None and init.agent_capabilities.load_session
        key = (await conn.new_session(cwd=str(gw.state_dir), mcp_servers=[])).session_id
        assert key.startswith("agent:main:acp:")

        # a turn answered in streamed chunks
        done = await conn.prompt(session_id=key, prompt=[text_block("stream:3")])
        assert done.stop_reason == "end_turn"
        chunks = [u for u in editor.updates if isinstance(u, AgentMessageChunk)]
        assert len(chunks) >= 2, chunks
        assert editor.text().strip() == "Part 1 of the answer. Part 2 of the answer. Part 3 of the answer."

        # tool calls with their status
        editor.updates.clear()
        await conn.prompt(session_id=key, prompt=[text_block("tools:1")])
        starts = [u for u in editor.updates if isinstance(u, ToolCallStart)]
        ends = [u for u in editor.updates if isinstance(u, ToolCallProgress)]
        assert [s.title for s in starts] == ["Bash"] and starts[0].kind == "execute"
        assert [e.status for e in ends] == ["completed"] and ends[0].tool_call_id == starts[0].tool_call_id

        # the run's approval request is put to the editor, and its answer decides
        editor.updates.clear()
        done = await conn.prompt(session_id=key, prompt=[text_block("ask:make deploy")])
        assert [a.title for a in editor.asked] == ["Bash: make deploy"]
        assert editor.text().endswith("approval: allow")

        # an ask_user question too: its options are the permission options
        editor.updates.clear()
        await conn.prompt(session_id=key, prompt=[text_block("question:Which database?")])
        assert editor.asked[-1].title == "Which database?"
        assert editor.text().endswith("answer: SQLite")

        # session/cancel stops the turn
        editor.updates.clear()
        running = asyncio.create_task(conn.prompt(session_id=key, prompt=[text_block("sleep:30")]))
        await asyncio.sleep(2)
        started = time.monotonic()
        await conn.cancel(session_id=key)
        stopped = await asyncio.wait_for(running, 20)
        assert stopped.stop_reason == "cancelled"
        assert time.monotonic() - started < 10

        listed = await conn.list_sessions()
        assert key in [s.session_id for s in listed.sessions]

    # the same session's turns are the gateway's: in chat.history (the web chat's and the phone's view)
    c = await operator(gw.url, gw.token or "")
    try:
        history = (await c.call("chat.history", {"sessionKey": key}))["messages"]
    finally:
        await c.close()
    texts = [m["text"] for m in history if m["role"] in ("user", "assistant")]
    assert "stream:3" in texts and "approval: allow" in texts and "answer: SQLite" in texts
    assert "Part 1 of the answer. Part 2 of the answer. Part 3 of the answer." in texts

    # another editor loads it: the transcript is replayed
    again = Editor()
    async with editor_for(gw, again) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        await conn.load_session(session_id=key, cwd=str(gw.state_dir), mcp_servers=[])
        users = [u.content.text for u in again.updates if isinstance(u, UserMessageChunk)]
        assert users[:4] == ["stream:3", "tools:1", "ask:make deploy", "question:Which database?"]
        assert "approval: allow" in again.text()
        assert any(isinstance(u, ToolCallStart) and u.title == "Bash" for u in again.updates)
        assert not any(isinstance(u, AgentPlanUpdate) for u in again.updates)


async def test_attach_to_an_existing_session_and_deny(gw: GatewayProcess) -> None:
    """``--session KEY``: the editor continues the conversation a chat started; a deny from the editor refuses."""
    key = "agent:main:api:direct:phone"
    c = await operator(gw.url, gw.token or "")
    try:
        sent = await c.call("chat.send", {"sessionKey": key, "message": "from the phone", "idempotencyKey": "ph-1"})
        await c.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 30_000}, timeout=40)
    finally:
        await c.close()
    editor = Editor(choice="deny")
    async with editor_for(gw, editor, "--session", key) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert (await conn.new_session(cwd=str(gw.state_dir), mcp_servers=[])).session_id == key
        await conn.prompt(session_id=key, prompt=[text_block("ask:rm -rf build")])
        assert editor.text().endswith("approval: deny")


async def test_the_chat_answers_first(gw: GatewayProcess) -> None:
    """An approval decided in the chat first stands; the editor's later answer changes nothing."""
    c = await operator(gw.url, gw.token or "")
    editor = Editor(choice="deny")
    gate = asyncio.Event()

    async def slow_editor(options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        await gate.wait()  # the person in the chat is quicker
        return await Editor.request_permission(editor, options, session_id, tool_call)

    editor.request_permission = slow_editor  # type: ignore[method-assign]
    try:
        async with editor_for(gw, editor) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            key = (await conn.new_session(cwd=str(gw.state_dir), mcp_servers=[])).session_id
            running = asyncio.create_task(conn.prompt(session_id=key, prompt=[text_block("ask:git push")]))
            while True:
                event = (await c.next_event("exec.approval.requested", timeout=30))["payload"]
                if event["sourceSessionKey"] == key:
                    break
            await c.call("exec.approval.resolve", {"id": event["id"], "decision": "allow-once"})
            await asyncio.wait_for(running, 30)
            gate.set()
            assert editor.text().endswith("approval: allow")
            await asyncio.sleep(1)
            got = await c.call("exec.approval.get", {"id": event["id"]})
            assert got["approval"]["status"] == "allowed", got
    finally:
        await c.close()
