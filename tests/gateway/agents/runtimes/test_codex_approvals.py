"""The real Codex CLI asks the person before running a command (``permissions: ask``), through ``codex app-server``.

Codex runs against the loopback fake Responses API, which makes it call ``exec_command``; in ``ask`` mode the
runtime drives ``codex app-server`` with approval policy ``untrusted``, the app-server sends
``item/commandExecution/requestApproval`` to the runtime, the gateway holds the request, and an operator decides
over the real gateway. Allow runs the command and its output reaches the model (the fake sees the
``function_call_output``); Deny gives the model the refusal; nobody deciding in time denies. The watchdog is
shorter than the wait: a run waiting for its person is not stopped as silent. Allow always stores the rule and a
later run of the same command is not asked.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.agents.runtimes.codex_app import command_of
from gateway.agents.runtimes.conversation import file_changes
from tests.gateway.agents.runtimes.flows import (
    agent_gateway,
    approval_asked,
    cli_workdir,
    decided_turn,
    fake_api,
    last_reply,
    loop_dm,
    loop_sent,
    start_turn,
    undecided_turn,
)
from tests.gateway.agents.runtimes.test_codex import user_env
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
api = fake_api(FakeOpenAI)

COMMAND = "touch made.txt && echo approved-$((6*7))"


@pytest.fixture(scope="module")
def gw(api: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    codex, d = cli_workdir(tmp_path_factory, "codex")
    agent = {"runtime": "codex", "command": [codex], "permissions": "ask", "env": user_env(d, api.url)}
    config = {"agents": {"noOutputTimeoutSeconds": 6}, "approvals": {"timeoutSeconds": 10}}
    with agent_gateway(d, agent, config=config) as proc:
        yield proc


def outputs(api: FakeOpenAI) -> list[str]:
    """What the model was given back for its function calls."""
    return [str(it.get("output")) for req in api.requests for it in req.get("input") or []
            if it.get("type") == "function_call_output"]


def call(command: str) -> str:
    return "CALL exec_command " + json.dumps({"cmd": command})


async def test_allow_runs_the_command_and_its_output_reaches_the_model(gw: GatewayProcess, api: FakeOpenAI) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        key = "agent:main:allow"
        done = await start_turn(c, call(COMMAND), key)
        event = await approval_asked(c, key)
        assert event["presentation"]["commandText"] == f"Bash: {COMMAND}"
        await asyncio.sleep(8)  # longer than the watchdog: a run waiting for its person is not silent
        await c.call("exec.approval.resolve", {"id": event["id"], "decision": "allow-once"})
        result = await done
        assert result["status"] == "ok", result
        assert "approved-42" in await last_reply(c, key)
        assert any("approved-42" in o for o in outputs(api))
    finally:
        await c.close()


async def test_deny_refuses_and_a_timeout_denies(gw: GatewayProcess, api: FakeOpenAI) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        key = "agent:main:deny"
        await decided_turn(c, call("echo no > denied-30.txt"), key, "deny")
        assert "rejected by user" in await last_reply(c, key)
        assert any("rejected by user" in o for o in outputs(api))
        # nobody decides: after approvals.timeoutSeconds it is a deny
        assert "rejected by user" in await undecided_turn(c, call("echo late > late.txt"), "agent:main:late")
    finally:
        await c.close()


async def test_a_stop_while_waiting_ends_the_run_and_its_request(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        key = "agent:main:stopped"
        done = await start_turn(c, call("echo stop > stopped.txt"), key)
        event = await approval_asked(c, key)
        stopped = await c.call("chat.abort", {"sessionKey": key})
        assert stopped["aborted"], stopped
        result = await done
        assert result["status"] != "ok", result
        got = await c.call("exec.approval.get", {"id": event["id"]})
        assert got["approval"]["status"] == "cancelled"
        late = await c.req("exec.approval.resolve", {"id": event["id"], "decision": "allow-once"})
        assert not late["ok"] and "ended" in late["error"]["message"]
    finally:
        await c.close()


async def test_allow_always_stores_the_rule_and_the_next_run_is_not_asked(gw: GatewayProcess, api: FakeOpenAI) -> None:
    c = await operator(gw.url, gw.token or "")
    command = "echo always-$((2*21)) > always.txt && cat always.txt"
    try:
        key = "agent:main:always"
        await decided_turn(c, call(command), key, "allow-always")
        assert "always-42" in await last_reply(c, key)
        rules = await c.call("approvals.rules.list", {"agentId": "main"})
        assert f"Bash({command})" in [r["pattern"] for r in rules["rules"]]
        before = len(outputs(api))
        key = "agent:main:always-again"
        result = await (await start_turn(c, call(command), key))
        assert result["status"] == "ok", result
        assert "always-42" in await last_reply(c, key)
        assert len(outputs(api)) == before + 1
        history = await c.call("approval.history", {"limit": 10})
        mine = [a for a in history["items"] if a.get("source", {}).get("sessionKey") == key]
        assert len(mine) == 1 and mine[0]["resolver"]["id"].startswith("rule:")  # answered by the rule, not asked
    finally:
        await c.close()


async def test_a_file_change_is_asked_with_its_files_and_a_denied_one_is_not_made(gw: GatewayProcess,
                                                                                 api: FakeOpenAI) -> None:
    c = await operator(gw.url, gw.token or "")
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+hello there\n*** End Patch\n"
    try:
        key = "agent:main:patch"
        # Codex turns a shell apply_patch into a file change of its own
        event, result = await decided_turn(c, call(f"apply_patch <<'EOF'\n{patch}EOF\n"), key, "deny")
        assert event["presentation"]["commandText"] == "Edit: hello.txt (new)"
        assert result["status"] == "ok", result
        assert outputs(api)[-1] == "patch rejected by user"
        # the same session again: the runtime resumes the Codex thread through the app-server
        again = await (await start_turn(c, "REPLY second turn", key))
        assert again["status"] == "ok", again
        assert await last_reply(c, key) == "second turn"
        resumed = [r for r in api.requests if "second turn" in json.dumps(r.get("input"))][-1]
        assert "Add File: hello.txt" in json.dumps(resumed.get("input")), "the earlier turn came along"
    finally:
        await c.close()


async def test_the_person_decides_in_the_chat(gw: GatewayProcess, api: FakeOpenAI) -> None:
    """A loop-channel DM: the request is told in that chat with its ``/approve`` lines, the person answers
    there, and the command's output comes back as the reply."""
    sender = "codex-person"
    await asyncio.to_thread(loop_dm, gw, sender, "in-cx1", call("touch chat.txt && echo chat-$((6*7))"))
    prompt = await _sent(gw, sender, "/approve ")
    assert "Bash: touch chat.txt && echo chat-$((6*7))" in prompt
    approval_id = re.search(r"/approve (\S+) allow-once", prompt).group(1)  # type: ignore[union-attr]
    await asyncio.to_thread(loop_dm, gw, sender, "in-cx2", f"/approve {approval_id} allow-once")
    assert "chat-42" in await _sent(gw, sender, "chat-42")
    assert any("chat-42" in o for o in outputs(api))


async def _sent(gw: GatewayProcess, sender: str, needle: str) -> str:
    """The first text sent to ``sender`` on the loop channel containing ``needle`` (waits up to 90 s)."""
    for _ in range(900):
        found = [t for t in loop_sent(gw, sender) if needle in t]
        if found:
            return found[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"nothing with {needle!r} sent to {sender}: {loop_sent(gw, sender)}")


def test_previews_read_as_the_person_needs_them(tmp_path: Path) -> None:
    params = {"command": "/bin/bash -lc 'make deploy'", "proposedExecpolicyAmendment": ["/bin/bash", "-lc",
                                                                                        "make deploy"]}
    assert command_of(params) == "make deploy"
    assert command_of({"command": "ls -la", "commandActions": [{"type": "unknown", "command": "ls -la"}]}) == "ls -la"
    diff = "--- a/app.py\n+++ b/app.py\n@@\n-old\n+new\n+more\n"
    got = file_changes([{"path": str(tmp_path / "app.py"), "kind": {"type": "update", "move_path": None}, "diff": diff},
                        {"path": "new.txt", "kind": {"type": "add"}, "diff": "hello"}], tmp_path)
    assert got["file_path"] == "app.py (+2 -1), new.txt (new)"
    assert [c["path"] for c in got["changes"]] == ["app.py", "new.txt"]
