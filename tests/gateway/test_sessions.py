"""Sessions over the real gateway: keys, labels, history, status, reset/delete, resume ids, sub-agents.

The agent CLI is ``tests/support/fake_cli.py``, a stand-in that speaks Claude Code's stream-json.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Iterator

import pytest

from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.openclaw_frames  # every frame received is checked against OpenClaw's schema


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("sessions")
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]},
                               {"id": "helper", "name": "Helper", "command": [sys.executable, FAKE_CLI]},
                               {"id": "broken", "runtime": "codex", "command": ["/nonexistent/codex"]}]}}
    with GatewayProcess(d / "gw", config=cfg, env={"FAKE_CLI_LOG": str(d / "cli.log")}) as proc:
        proc.cli_log = d / "cli.log"  # type: ignore[attr-defined]
        yield proc


def calls(gw: GatewayProcess) -> list[dict]:
    return [json.loads(line) for line in gw.cli_log.read_text().splitlines()]  # type: ignore[attr-defined]


async def run(c: RawClient, message: str, **kw: object) -> dict:
    acc = await c.call("agent", {"message": message, "idempotencyKey": str(uuid.uuid4()), **kw})
    assert acc["status"] == "accepted"
    return await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 15000})


async def test_agent_run_lands_in_history_and_status(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    key = "agent:main:test:direct:alice"
    res = await run(c, "hello there", sessionKey=key)
    assert res["status"] == "ok" and res["reply"] == "echo: hello there"
    hist = await c.call("chat.history", {"sessionKey": key})
    assert [(m["role"], m["text"]) for m in hist["messages"]] == [("user", "hello there"),
                                                                  ("assistant", "echo: hello there")]
    st = await c.call("status", {"sessionKey": key})
    assert st["inputTokens"] == 10 and st["outputTokens"] == 5 and st["busy"] is False
    assert st["cliSessionIds"]["claude"]
    listed = await c.call("sessions.list", {"search": "ALICE", "includeGlobal": True, "includeUnknown": True})
    assert [s["key"] for s in listed["sessions"]] == [key] and listed["count"] == 1
    await c.close()


async def test_history_within_max_bytes_keeps_the_newest_messages(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    key = "agent:main:test:direct:max"
    await run(c, "first " + "x" * 400, sessionKey=key)
    await run(c, "second", sessionKey=key)
    whole = (await c.call("chat.history", {"sessionKey": key}))["messages"]
    assert [m["text"][:6] for m in whole] == ["first ", "echo: ", "second", "echo: "]
    cut = (await c.call("chat.history", {"sessionKey": key, "maxBytes": 700}))["messages"]
    assert [m["text"] for m in cut] == ["second", "echo: second"]  # the long first turn no longer fits
    assert (await c.call("chat.history", {"sessionKey": key, "maxBytes": 1}))["messages"] == []
    refused = await c.req("chat.history", {"sessionKey": key, "maxBytes": 0})
    assert refused["ok"] is False and "maxBytes" in refused["error"]["message"]
    await c.close()


async def test_second_turn_resumes_the_cli_session(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    key = "agent:main:test:direct:bob"
    await run(c, "one", sessionKey=key)
    first_id = (await c.call("status", {"sessionKey": key}))["cliSessionIds"]["claude"]
    await run(c, "two", sessionKey=key)
    last = calls(gw)[-1]
    assert last["argv"][last["argv"].index("--resume") + 1] == first_id
    assert last["env"]["REMOTECLAW_SESSION_KEY"] == key
    await c.close()


async def test_an_idle_session_starts_a_fresh_conversation(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    key = "agent:main:test:direct:idler"

    async def idle_minutes(value: float) -> None:
        h = (await c.call("config.get"))["hash"]
        await c.call("config.patch", {"patch": {"session": {"idleMinutes": value}}, "baseHash": h})

    try:
        await idle_minutes(0.03)  # 1.8 s
        await run(c, "one", sessionKey=key)
        first_id = (await c.call("status", {"sessionKey": key}))["cliSessionIds"]["claude"]
        await run(c, "soon after", sessionKey=key)
        assert calls(gw)[-1]["argv"][calls(gw)[-1]["argv"].index("--resume") + 1] == first_id
        await asyncio.sleep(2.2)
        res = await run(c, "much later", sessionKey=key)
        assert res["status"] == "ok" and "--resume" not in calls(gw)[-1]["argv"]
        fresh = (await c.call("status", {"sessionKey": key}))["cliSessionIds"]["claude"]
        assert fresh != first_id
        history = [m["text"] for m in (await c.call("chat.history", {"sessionKey": key}))["messages"]]
        assert "one" in history and "much later" in history  # the transcript is kept; only the CLI starts over
    finally:
        await idle_minutes(0)
        await c.close()


async def test_expired_resume_retries_once_as_new_session(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    key = "agent:main:test:direct:carol"
    await run(c, "first", sessionKey=key)
    old = (await c.call("status", {"sessionKey": key}))["cliSessionIds"]["claude"]
    before = len(calls(gw))
    res = await run(c, "expired please", sessionKey=key)
    assert res["status"] == "ok"
    tries = calls(gw)[before:]
    assert len(tries) == 2 and "--resume" in tries[0]["argv"] and "--resume" not in tries[1]["argv"]
    new = (await c.call("status", {"sessionKey": key}))["cliSessionIds"]["claude"]
    assert new != old
    await c.close()


async def test_labels_resolve_patch_reset_delete(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    key = "agent:main:test:direct:dave"
    await run(c, "hi", sessionKey=key)
    await c.call("sessions.patch", {"key": key, "label": "dave-chat"})
    assert (await c.call("sessions.resolve", {"label": "dave-chat"}))["key"] == key
    res = await run(c, "by label", label="dave-chat")
    assert res["sessionKey"] == key
    frame = await c.req("sessions.patch", {"key": "agent:main:other", "label": "dave-chat"})
    assert frame["error"]["code"] == "INVALID_REQUEST" and "/label" in frame["error"]["message"]
    reset = await c.call("sessions.reset", {"key": key})
    assert reset["removedMessages"] == 4
    assert (await c.call("chat.history", {"sessionKey": key}))["messages"] == []
    assert (await c.call("status", {"sessionKey": key}))["cliSessionIds"] == {}
    assert (await c.call("sessions.delete", {"key": key}))["deleted"] is True
    frame = await c.req("status", {"sessionKey": key})
    assert frame["error"]["code"] == "INVALID_REQUEST" and "sessionKey" in frame["error"]["message"]
    await c.close()


async def test_bad_input_names_the_field(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    for params, word in [
        ({"message": "x", "idempotencyKey": "a", "sessionKey": "nonsense"}, "sessionKey"),
        ({"message": "x", "idempotencyKey": "b", "sessionKey": "agent:ghost:main"}, "sessionKey"),
        ({"message": "x", "idempotencyKey": "c", "agentId": "ghost"}, "agentId"),
        ({"message": "x", "idempotencyKey": "d", "label": "no-such-label"}, "label"),
        ({"idempotencyKey": "e"}, "message"),
    ]:
        frame = await c.req("agent", params)
        assert frame["ok"] is False and word in frame["error"]["message"], frame
    frame = await c.req("agent.wait", {"runId": "nope", "timeoutMs": 10})
    assert "runId" in frame["error"]["message"]
    assert (await c.call("health"))["ok"] is True
    await c.close()


async def test_agents_list_and_spawned_subagents(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "", scopes=["operator.write"])
    agents = await c.call("agents.list", {})
    assert [a["id"] for a in agents["agents"]] == ["main", "helper", "broken"] and agents["defaultId"] == "main"
    parent = "agent:main:test:direct:erin"
    await run(c, "parent turn", sessionKey=parent)
    child = await c.call("sessions.spawn", {"task": "sleep:0.5 research", "agentId": "helper",
                                            "label": "researcher", "parent": parent,
                                            "idempotencyKey": str(uuid.uuid4())})
    assert child["sessionKey"].startswith("agent:helper:subagent:")
    listed = await c.call("sessions.subagents", {"action": "list", "sessionKey": parent})
    assert [s["key"] for s in listed["subagents"]] == [child["sessionKey"]]
    res = await c.call("agent.wait", {"runId": child["runId"], "timeoutMs": 15000})
    assert res["status"] == "ok" and "research" in res["reply"]
    spawned_env = calls(gw)[-1]["env"]
    assert spawned_env["REMOTECLAW_SENDER_IS_OWNER"] == "false"
    sent = await c.call("sessions.subagents", {"action": "send", "sessionKey": parent, "target": "researcher",
                                               "message": "more"})
    assert (await c.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 15000}))["reply"] == "echo: more"
    status = await c.call("sessions.subagents", {"action": "status", "sessionKey": parent,
                                                 "target": child["sessionKey"]})
    assert status["subagent"]["label"] == "researcher" and status["subagent"]["parentSessionKey"] == parent
    frame = await c.req("sessions.subagents", {"action": "status", "sessionKey": parent, "target": "stranger"})
    assert "target" in frame["error"]["message"]
    await c.close()


async def test_missing_cli_is_a_clear_run_error(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    res = await run(c, "hi", agentId="broken")
    assert res["status"] == "error" and res["error"].startswith(
        "Codex is not installed on the gateway's machine (/nonexistent/codex was not found), so the agent cannot "
        "answer. Install Codex there with: npm install -g @openai/codex, log in to it once")
    assert (await c.call("health"))["ok"] is True
    await c.close()


async def test_the_sessions_command_lists_sessions_and_shows_their_messages(gw: GatewayProcess) -> None:
    """``remoteclaw sessions list`` / ``history``: a real sub-command (not only ``gateway call sessions.list``)."""
    import os
    import subprocess

    from tests.support.gateway_proc import ROOT

    c = await operator(gw.url, gw.token or "")
    key = "agent:main:test:direct:zelda"
    await run(c, "what is on today", sessionKey=key)
    await c.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    env.update(REMOTECLAW_GATEWAY_URL=gw.url, REMOTECLAW_GATEWAY_TOKEN=gw.token or "")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "gateway.cli", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done

    listed = cli("sessions", "list", "--search", "zelda")
    (line,) = listed.stdout.splitlines()
    assert line.startswith(key) and line.endswith("what is on today"), line  # the title: its first message
    rows = json.loads(cli("sessions", "list", "--json").stdout)["sessions"]
    assert key in [r["key"] for r in rows]
    history = cli("sessions", "history", key).stdout.splitlines()
    assert [h.split("] ", 1)[1] for h in history] == ["user: what is on today", "assistant: echo: what is on today"]
