"""The HTTP doors, approvals by id and the list answers, decided by the one access model (``gateway.access``).

One gateway, the owner and members A and B (each signed in on the web, ``dmScope: per-channel-peer``), B's
conversation with a file B uploaded and an approval and a question its agent raised, and A's agent run held open
with its run token. A, A's run and an unknown credential try B's things by every route here: the web chat's file
address, the trajectory and browser file routes, approvals and questions by id, and the lists (sessions, usage,
tasks, approvals). Each is judged by what the attacker got; B and the owner reach the same things, so the tests
cannot pass with every door shut.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.fake_telegram import cli_runs
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.signin import signin_token
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap is not installed (a member's run is refused without a sandbox)")]

FAKE_CLI = str(ROOT / "tests/support/fake_cli.py")
A_KEY, B_KEY = "agent:main:person:a", "agent:main:person:b"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"secret picture of b" * 10).decode()


@pytest.fixture(scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    state = tmp_path_factory.mktemp("http-doors") / "gw"
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "session": {"dmScope": "per-channel-peer"}}
    gw = GatewayProcess(state, config=config, env={"FAKE_CLI_LOG": str(state / "cli.log")})
    await asyncio.to_thread(gw.start)
    clients: list[RawClient] = []
    try:
        owner = await operator(gw.url, gw.token or "")
        clients.append(owner)
        people: dict[str, Any] = {}
        for pid, role in (("a", "member"), ("b", "member"), ("g", "guest"), ("c", "admin")):
            await owner.call("people.create", {"id": pid, "name": pid.upper(), "role": role,
                                               "oneConversation": True})
            url = (await owner.call("people.loginLink", {"id": pid}))["url"]
            credential = await asyncio.to_thread(signin_token, gw, url)
            c = await RawClient.open(gw.url)
            assert (await c.handshake(credential, client_id="webchat-ui", mode="webchat"))["ok"]
            clients.append(c)
            people[pid] = {"client": c, "credential": credential, "key": f"agent:main:person:{pid}"}
        b = people["b"]
        sent = await b["client"].call("chat.send", {
            "sessionKey": B_KEY, "message": "my picture", "idempotencyKey": "b-file",
            "attachments": [{"name": "b.png", "mimeType": "image/png", "base64": PNG}]})
        await b["client"].call("agent.wait", {"runId": sent["runId"], "timeoutMs": 20_000})
        history = await b["client"].call("chat.history", {"sessionKey": B_KEY})
        urls = [a["url"] for m in history["messages"] for a in (m.get("attachments") or m.get("meta", {})
                                                                .get("attachments") or [])
                if isinstance(a, dict) and a.get("url")]
        if not urls:  # wherever the entry's facts put them: the stored file's address
            urls = [u for u in json.dumps(history).split('"') if u.startswith("/__remoteclaw__/webchat/files/")]
        assert urls, history
        # B's agent raised an approval and a question (asked as B's session: the owner asks for it here)
        await owner.call("approvals.ask", {"id": "b-approval", "sessionKey": B_KEY, "toolName": "Bash",
                                           "input": {"command": "cat secret-of-b"}})
        await owner.call("questions.ask", {"id": "b-question", "sessionKey": B_KEY, "questions": [
            {"questionId": "q", "header": "Which", "question": "secret question of b?",
             "options": [{"label": "x"}, {"label": "y"}]}]})
        # A's agent run, held open, with its run token
        await people["a"]["client"].call("chat.send", {"sessionKey": A_KEY, "message": "sleep:120 hold the run open",
                                                       "idempotencyKey": "a-hold"})
        run = await until(lambda: next((r for r in cli_runs(state) if "hold the run open" in r["prompt"]), None),
                          timeout=30)
        a_run_token = run["env"]["REMOTECLAW_GATEWAY_TOKEN"]
        a_run = await operator(gw.url, a_run_token)
        clients.append(a_run)
        # and a guest's: confined to its one conversation, with no person to confine it by
        g = people["g"]
        sessions = await g["client"].call("sessions.list", {})
        g_key = next(r["key"] for r in sessions["sessions"])
        await g["client"].call("chat.send", {"sessionKey": g_key, "message": "sleep:120 hold the guest run",
                                             "idempotencyKey": "g-hold"})
        run = await until(lambda: next((r for r in cli_runs(state) if "hold the guest run" in r["prompt"]), None),
                          timeout=30)
        g_run = await operator(gw.url, run["env"]["REMOTECLAW_GATEWAY_TOKEN"])
        clients.append(g_run)
        yield {"gw": gw, "owner": owner, "people": people, "a_run": a_run, "a_run_token": a_run_token,
               "g_run": g_run, "g_run_token": run["env"]["REMOTECLAW_GATEWAY_TOKEN"], "b_file": gw.http + urls[0]}
    finally:
        for c in clients:
            await c.close()
        await asyncio.to_thread(gw.stop)


# -- HTTP routes ---------------------------------------------------------------------------------------------


async def test_b_s_web_chat_file_is_served_to_neither_a_nor_a_s_run(world: dict[str, Any]) -> None:
    url, people = world["b_file"], world["people"]
    async with httpx.AsyncClient(timeout=10) as http:
        for credential in (people["a"]["credential"], world["a_run_token"], people["g"]["credential"],
                           world["g_run_token"]):
            got = await http.get(url, headers={"authorization": f"Bearer {credential}"})
            assert got.status_code == 403, (got.status_code, got.text[:80])
            assert b"secret picture of b" not in got.content
        bare = await http.get(url)
        assert bare.status_code == 401 and b"secret picture of b" not in bare.content
        wrong = await http.get(url, headers={"authorization": "Bearer rcp_not-a-live-sign-in"})
        assert wrong.status_code == 401
        for credential in (people["b"]["credential"], world["gw"].token):
            got = await http.get(url, headers={"authorization": f"Bearer {credential}"})
            assert got.status_code == 200 and b"secret picture of b" in got.content


# -- approvals and questions by id ---------------------------------------------------------------------------


async def test_a_and_a_s_run_neither_see_nor_decide_b_s_approval(world: dict[str, Any]) -> None:
    a = world["people"]["a"]["client"]
    for c in (a, world["a_run"], world["people"]["g"]["client"], world["g_run"], world["people"]["c"]["client"]):
        for method, params in (("exec.approval.get", {"id": "b-approval"}),
                               ("approval.get", {"id": "b-approval"}),
                               ("exec.approval.resolve", {"id": "b-approval", "decision": "allow-once"}),
                               ("approval.resolve", {"id": "b-approval", "kind": "exec", "decision": "allow-once"}),
                               ("question.get", {"id": "b-question"}),
                               ("question.resolve", {"id": "b-question", "cancel": True})):
            frame = await c.req(method, params, timeout=8)
            assert not frame["ok"], (method, frame)
            assert frame["error"]["code"] == "FORBIDDEN", (method, frame)
            assert "secret" not in json.dumps(frame), (method, frame)
        for method in ("exec.approval.list", "question.list", "approval.history"):
            frame = await c.req(method, {}, timeout=8)
            assert "secret" not in json.dumps(frame), (method, frame)
    b = world["people"]["b"]["client"]
    assert (await b.call("exec.approval.get", {"id": "b-approval"}))["approval"]["id"] == "b-approval"
    owner = world["owner"]
    assert "cat secret-of-b" in json.dumps(await owner.call("exec.approval.list", {}))
    assert "secret question of b" in json.dumps(await owner.call("question.list", {}))


async def test_another_s_id_is_refused_by_the_model_and_an_unknown_one_is_not_found(world: dict[str, Any]) -> None:
    a = world["people"]["c"]["client"]  # an admin holds operator.approvals, and reads no one's conversations
    theirs = await a.req("exec.approval.get", {"id": "b-approval"}, timeout=8)
    assert theirs["error"]["details"] == {"code": "SESSION_FORBIDDEN", "field": "id"}, theirs
    unknown = await a.req("exec.approval.get", {"id": "no-such-approval"}, timeout=8)
    assert unknown["error"]["code"] == "APPROVAL_NOT_FOUND", unknown


# -- lists ---------------------------------------------------------------------------------------------------


async def test_lists_answer_only_what_the_caller_may_read(world: dict[str, Any]) -> None:
    a, b = world["people"]["a"]["client"], world["people"]["b"]["client"]
    for c in (a, world["a_run"], world["people"]["g"]["client"], world["g_run"]):
        for method in ("sessions.list", "sessions.usage", "tasks.list"):
            frame = await c.req(method, {}, timeout=8)
            if frame["ok"]:
                assert B_KEY not in json.dumps(frame["payload"]), (method, frame["payload"])
    assert B_KEY in json.dumps(await b.call("sessions.list", {}))
    assert B_KEY in json.dumps(await world["owner"].call("sessions.list", {}))
