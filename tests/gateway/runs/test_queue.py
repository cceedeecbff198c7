"""The run queue over the real gateway: events to subscribers, abort and the watchdog killing the CLI, failures.

The agent CLI is ``tests/support/fake_cli.py`` (Claude-style stream-json), scripted by the prompt. What the queue
alone decides (turns joined and never overlapping, the global cap) is tested without a process in
``test_queue_service.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.procs import alive, host_pid
from tests.support.ws import RawClient, operator


def start_gw(d: Path, **agents: object) -> GatewayProcess:
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}], **agents}}
    proc = GatewayProcess(d / "gw", config=cfg, env={"FAKE_CLI_LOG": str(d / "cli.log")})
    proc.cli_log = d / "cli.log"  # type: ignore[attr-defined]
    return proc.start()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    proc = start_gw(tmp_path_factory.mktemp("runs"), noOutputTimeoutSeconds=1, maxConcurrentRuns=4)
    yield proc
    proc.stop()


def calls(gw: GatewayProcess) -> list[dict]:
    return [json.loads(line) for line in gw.cli_log.read_text().splitlines()]  # type: ignore[attr-defined]


async def send(c: RawClient, key: str, text: str) -> dict:
    return await c.call("chat.send", {"sessionKey": key, "message": text, "idempotencyKey": str(uuid.uuid4())})


async def wait(c: RawClient, run_id: str, ms: int = 15000) -> dict:
    return await c.call("agent.wait", {"runId": run_id, "timeoutMs": ms})


async def test_events_stream_to_subscribers(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "", scopes=["operator.read", "operator.write"])
    key = "agent:main:q:events"
    res = await send(c, key, "sent:hello world")
    agent: list[dict] = []
    chat: list[dict] = []
    while True:
        ev = await asyncio.wait_for(c.events.get(), 10)
        if ev["event"] not in ("agent", "chat") or ev["payload"]["runId"] != res["runId"]:
            continue
        (agent if ev["event"] == "agent" else chat).append(ev["payload"])
        if ev["event"] == "agent" and ev["payload"]["stream"] == "lifecycle" and \
                ev["payload"]["data"]["phase"] in ("end", "error"):
            break
    streams = [(e["stream"], e["data"].get("phase")) for e in agent]
    assert streams[0] == ("lifecycle", "start") and streams[-1] == ("lifecycle", "end")
    assert ("tool", "start") in streams and ("tool", "result") in streams
    assert agent[-1]["data"]["result"]["status"] == "ok"
    assert [e["state"] for e in chat] == ["delta", "final"] and chat[-1]["message"]["text"] == "hello world"
    hist = await c.call("chat.history", {"sessionKey": key})
    tool = next(m for m in hist["messages"] if m["role"] == "tool")["tool"]
    assert tool["name"] == "mcp__remoteclaw__message_reply" and tool["input"] == {"message": "hello world"}
    await c.close()


async def test_abort_kills_the_cli_and_drops_the_queued_turn(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    key = "agent:main:q:abort"
    first = await send(c, key, "sleep:30 long job")
    queued = await send(c, key, "after")
    for _ in range(100):
        mine = [x for x in calls(gw) if x["env"]["REMOTECLAW_SESSION_KEY"] == key]
        if mine:
            break
        await asyncio.sleep(0.05)
    pid = host_pid(mine[-1]["pid"], "REMOTECLAW_RUN_ID=" + mine[-1]["env"]["REMOTECLAW_RUN_ID"])
    out = await c.call("chat.abort", {"sessionKey": key})
    assert set(out["runIds"]) == {first["runId"], queued["runId"]}
    r = await wait(c, first["runId"])
    assert r["status"] == "error" and "abort" in r["error"]
    assert (await wait(c, queued["runId"]))["status"] == "error"
    await asyncio.sleep(0.3)
    assert not alive(pid)
    assert (await send(c, key, "fresh"))["status"] == "accepted"  # the session is usable again
    await c.close()


async def test_repeated_aborts_stop_a_turn_once_and_never_wedge_the_session(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    key = "agent:main:q:hammer"
    first = await send(c, key, "sleep:30 long job")
    for _ in range(100):
        if gw.cli_log.exists() and [x for x in calls(gw) if x["env"]["REMOTECLAW_SESSION_KEY"] == key]:  # type: ignore[attr-defined]
            break
        await asyncio.sleep(0.05)
    # A user pressing Stop again and again: while the turn is stopping, cleaning up and finishing.
    answers = [await c.call("chat.abort", {"sessionKey": key})]
    for _ in range(40):
        answers.append(await c.call("chat.abort", {"sessionKey": key}))
        await asyncio.sleep(0.02)
    assert answers[0]["runIds"] == [first["runId"]]
    assert all(a["runIds"] == [] for a in answers[1:])  # stopped once, by the first
    r = await wait(c, first["runId"])
    assert r["status"] == "error" and "abort" in r["error"]
    after = await wait(c, (await send(c, key, "still here?"))["runId"])
    assert after["status"] == "ok" and after["reply"] == "echo: still here?"
    await c.close()


async def test_watchdog_stops_a_silent_cli(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    key = "agent:main:q:hang"
    res = await send(c, key, "hang")
    r = await wait(c, res["runId"])
    assert r["status"] == "error" and "no output" in r["error"]
    entry = [x for x in calls(gw) if x["env"]["REMOTECLAW_SESSION_KEY"] == key][-1]
    await asyncio.sleep(0.2)
    with pytest.raises(AssertionError, match="no running process"):  # no process of that run is left
        host_pid(entry["pid"], "REMOTECLAW_RUN_ID=" + entry["env"]["REMOTECLAW_RUN_ID"])
    await c.close()


async def test_failures_are_reported_not_fatal(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    r = await wait(c, (await send(c, "agent:main:q:fail", "fail"))["runId"])
    assert r["status"] == "error" and "model overloaded" in r["error"]
    r = await wait(c, (await send(c, "agent:main:q:crash", "crash"))["runId"])
    assert r["status"] == "error" and "exit code 3" in r["error"] and "crashed on purpose" in r["error"]
    timeout = await c.call("agent.wait", {"runId": (await send(c, "agent:main:q:slow", "sleep:0.5"))["runId"],
                                          "timeoutMs": 10})
    assert timeout["status"] == "timeout"
    assert (await c.call("health"))["ok"] is True
    await c.close()


async def test_chat_turns_are_web_chat_turns_and_keep_who_answered_and_why_one_failed(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    key = f"agent:main:webchat:{uuid.uuid4().hex[:8]}"
    ok = await send(c, key, "hello there")
    assert ok["messageId"].isdigit()
    assert (await wait(c, ok["runId"]))["status"] == "ok"
    # The page is the turn's chat: the shim is told so, and the prompt names the message being answered.
    call = [x for x in calls(gw) if x["env"]["REMOTECLAW_SESSION_KEY"] == key][-1]
    assert call["env"]["REMOTECLAW_CHANNEL"] == "webchat" and call["env"]["REMOTECLAW_TO"] == key
    assert f"(message id {ok['messageId']})" in " ".join(call["argv"])

    bad = await send(c, key, "fail please")
    final: dict = {}
    while not final:
        ev = await asyncio.wait_for(c.events.get(), 15)
        if ev["event"] == "chat" and ev["payload"]["runId"] == bad["runId"] and ev["payload"]["state"] == "error":
            final = ev["payload"]
    history = (await c.call("chat.history", {"sessionKey": key}))["messages"]
    answer, failure = history[1], history[3]
    assert answer["text"] == "echo: hello there" and answer["id"] > int(ok["messageId"])
    assert (answer["agentId"], answer["runtime"], answer["model"]) == ("main", "claude", "fake-model")
    assert answer["cli"] == sys.executable
    assert failure["error"] is True and "model overloaded" in failure["text"] and failure["runId"] == bad["runId"]
    assert final["message"]["messageId"] == str(failure["id"]) and final["agentId"] == "main"
    listed = (await c.call("sessions.list", {"search": key, "includeDerivedTitles": True,
                                             "includeLastMessage": True}))["sessions"]
    assert [(s["derivedTitle"], s["lastMessagePreview"]) for s in listed] == [("hello there", failure["text"])]
    agents = (await c.call("status"))["agents"]
    home = str(Path.home())  # the path as a person reads it: ~/… inside the gateway user's HOME
    shown = "~" + sys.executable[len(home):] if sys.executable.startswith(home + "/") else sys.executable
    assert agents[0]["cli"] == {"command": sys.executable, "path": sys.executable, "shown": shown,
                                "found": True, "install": None}
    await c.close()


async def test_chat_send_attachments_are_checked_and_named(gw: GatewayProcess) -> None:
    import base64

    c = await operator(gw.url, gw.token or "")
    key = f"agent:main:webchat:{uuid.uuid4().hex[:8]}"
    one = {"name": "a.txt", "mimeType": "text/plain", "base64": base64.b64encode(b"hello").decode()}
    for attachments, field in (([one] * 6, "/attachments"), ([one, {**one, "base64": "%%%"}], "attachments[1].base64")):
        refused = await c.req("chat.send", {"sessionKey": key, "message": "x", "attachments": attachments,
                                            "idempotencyKey": str(uuid.uuid4())})
        assert not refused["ok"] and field in refused["error"]["message"], refused
    sent = await c.call("chat.send", {"sessionKey": key, "attachments": [one], "idempotencyKey": str(uuid.uuid4())})
    assert [a["name"] for a in sent["attachments"]] == ["a.txt"]
    await wait(c, sent["runId"])
    call = [x for x in calls(gw) if x["env"]["REMOTECLAW_SESSION_KEY"] == key][-1]
    assert re.search(r"\[attachment: file attachments/[0-9a-f]{8}-a\.txt\]", call["prompt"])
    assert "attachments" in call["files"]  # the folder the gateway copied it into, in the run's workspace
    listed = (await c.call("sessions.list", {"search": key, "includeDerivedTitles": True}))["sessions"]
    assert listed[0]["derivedTitle"] == "(a file)"
    await c.close()


async def test_chat_send_names_its_run_after_the_idempotency_key_when_it_can(gw: GatewayProcess) -> None:
    """OpenClaw's clients match the message they sent to its turn by the idempotency key: it is the run id,
    unless it cannot name a file or a run (odd characters, too long, the posted-message prefix) or already does."""
    c = await operator(gw.url, gw.token or "")
    try:
        key = f"agent:main:q:ids-{uuid.uuid4().hex[:6]}"
        mine = f"k-{uuid.uuid4().hex}"
        sent = await c.call("chat.send", {"sessionKey": key, "message": "one", "idempotencyKey": mine})
        assert sent["runId"] == mine and (await wait(c, mine))["status"] == "ok"
        for odd in ("has space", "../up", "x" * 65, "msg-12"):
            other = await c.call("chat.send", {"sessionKey": key, "message": "odd", "idempotencyKey": odd})
            assert other["runId"] != odd and uuid.UUID(other["runId"])
            await wait(c, other["runId"])
        # A key that already names a stored run (here one the agent method started) does not take it over.
        started = await c.call("agent", {"sessionKey": key, "message": "via agent", "idempotencyKey": "a-1"})
        await wait(c, started["runId"])
        again = await c.call("chat.send", {"sessionKey": f"{key}-b", "message": "two",
                                           "idempotencyKey": started["runId"]})
        assert again["runId"] != started["runId"]
        assert (await wait(c, again["runId"]))["status"] == "ok"
    finally:
        await c.close()
