"""The methods OpenClaw's Control UI calls on its main pages, against a real gateway process.

Every result is checked against OpenClaw's published schema (``@openclaw/gateway-protocol``'s
``protocol.schema.json``) where it defines one, and against the shape OpenClaw's own gateway answers where
it does not. Session subscriptions are checked end to end: a real turn by the stand-in agent CLI, and the
events that reach (or do not reach) each connection.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.requires import require
from tests.support.ws import RawClient, operator

SCHEMA_PATH = ROOT / ".cache/openclaw-protocol/package/protocol.schema.json"
FAKE_CLI = ROOT / "tests/support/fake_cli.py"
MAIN = "agent:main:main"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    require(SCHEMA_PATH.is_file(), "needs @openclaw/gateway-protocol (scripts/install-openclaw)")
    return json.loads(SCHEMA_PATH.read_text())


def check(schema: dict[str, Any], name: str, payload: Any) -> None:
    """Fail with every violation when ``payload`` is not a valid ``definitions[name]``."""
    from jsonschema import Draft7Validator

    validator = Draft7Validator({"$ref": f"#/definitions/{name}", "definitions": schema["definitions"]})
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(payload)]
    assert not errors, f"{name}: {errors}"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {"agents": {"list": [{"id": "main", "name": "Main agent", "runtime": "claude",
                                   "command": [sys.executable, str(FAKE_CLI)]},
                                  {"id": "coder", "runtime": "codex", "model": "gpt-test",
                                   "command": ["no-such-codex-binary"]}]}}
    with GatewayProcess(tmp_path_factory.mktemp("cui-methods"), config=config) as proc:
        yield proc


@pytest.fixture
async def admin(gw: GatewayProcess) -> AsyncIterator[RawClient]:
    client = await operator(gw.url, gw.token or "", client_id="openclaw-control-ui", mode="webchat")
    yield client
    await client.close()


async def test_results_validate_against_the_published_schema(admin: RawClient, schema: dict[str, Any]) -> None:
    await admin.call("chat.send", {"sessionKey": MAIN, "message": "hello", "idempotencyKey": "cui-1"})
    await admin.next_event("chat", timeout=15)  # the session exists, with a transcript
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("system.info", {}, "SystemInfoResult"),
        ("update.status", {}, "UpdateStatusResult"),
        ("environments.list", {"includeDesktopSetup": True}, "EnvironmentsListResult"),
        ("talk.catalog", {}, "TalkCatalogResult"),
        ("models.list", {"view": "configured", "agentId": "main", "sessionKey": MAIN}, "ModelsListResult"),
        ("models.list", {}, "ModelsListResult"),
        ("agent.identity.get", {"agentId": "main"}, "AgentIdentityResult"),
        ("question.list", {}, "QuestionListResult"),
        ("tasks.list", {"sessionKey": MAIN, "agentId": "main", "status": ["queued", "running"], "limit": 200},
         "TasksListResult"),
        ("tasks.list", {"sessionKey": MAIN, "status": ["completed", "failed"], "sortBy": "endedAt"},
         "TasksListResult"),
        ("progressCard.get", {"sessionKey": MAIN}, "ProgressCardGetResult"),
        ("sessions.branches.list", {"sessionKey": MAIN}, "SessionsBranchesListResult"),
        ("sessions.companion.state", {"sessionKey": MAIN, "agentId": "main"}, "SessionsCompanionStateResult"),
        ("sessions.observer.visibility", {"visible": True}, "SessionsObserverVisibilityResult"),
    ]
    for name, params, definition in cases:
        payload = await admin.call(name, params)
        check(schema, definition, payload)
        # The params the Control UI sends are valid there too, but for the fields newer UIs add.
        extra = {"sessionKey"} if name == "models.list" else {"includeDesktopSetup"} if name == "environments.list" \
            else {"sortBy"} if name == "tasks.list" else set()
        check(schema, definition.replace("Result", "Params"), {k: v for k, v in params.items() if k not in extra})
    replay = (await admin.call("sessions.messages.subscribe", {"key": MAIN, "includeApprovals": True}))
    check(schema, "SessionApprovalReplay", replay["approvalReplay"])


async def test_answers_carry_real_data(admin: RawClient, gw: GatewayProcess) -> None:
    sent = await admin.call("chat.send", {"sessionKey": MAIN, "message": "data please", "idempotencyKey": "cui-2"})
    while True:  # this turn's final event (the module's client may still hold events of earlier turns)
        event = (await admin.next_event("chat", timeout=15))["payload"]
        if event["runId"] == sent["runId"] and event["state"] == "final":
            break
    info = await admin.call("system.info")
    assert info["pid"] != 0 and info["cpuCount"] >= 1 and info["memoryTotalBytes"] > 0
    assert info["port"] == gw.port and info["diskPath"] == str(gw.state_dir)
    assert (await admin.call("update.status"))["updateAvailable"] is None
    models = (await admin.call("models.list"))["models"]
    assert [(m["id"], m["provider"], m["available"]) for m in models] == [
        ("claude/default", "claude", True), ("codex/gpt-test", "codex", False)]
    auth = {p["provider"]: p for p in (await admin.call("models.authStatus"))["providers"]}
    assert auth["codex"]["status"] == "missing" and "not installed" in auth["codex"]["evidence"]
    assert auth["claude"]["cli"]["found"] is True
    identity = await admin.call("agent.identity.get", {"sessionKey": "agent:coder:main"})
    assert identity == {"agentId": "coder", "name": "coder", "nameSource": "default"}
    assert (await admin.call("agent.identity.get", {"agentId": "main"}))["name"] == "Main agent"
    described = (await admin.call("sessions.describe", {"key": MAIN, "includeLastMessage": True}))["session"]
    assert described["key"] == MAIN and described["lastMessagePreview"].startswith("echo: ")
    assert (await admin.call("sessions.describe", {"key": "agent:main:nobody-yet"})) == {"session": None}
    tasks = (await admin.call("tasks.list", {"sessionKey": MAIN, "status": "completed"}))["tasks"]
    assert tasks and all(t["status"] == "completed" and t["sessionKey"] == MAIN for t in tasks)
    startup = await admin.call("chat.startup", {"sessionKey": MAIN, "limit": 80, "maxBytes": 262144})
    assert startup["resolution"] == {"ok": True, "key": MAIN, "agentId": "main"}
    texts = [m["content"][0]["text"] for m in startup["messages"]]
    assert "data please" in texts and "echo: data please" in texts
    assert all(m["role"] in ("user", "assistant") and isinstance(m["timestamp"], int) for m in startup["messages"])
    assert (await admin.call("chat.metadata", {"agentId": "main", "sessionKey": MAIN}))["agentId"] == "main"
    usage = await admin.call("sessions.usage", {"startDate": "2000-01-01", "endDate": "2100-01-01",
                                                "agentScope": "all", "mode": "specific", "timeZone": "UTC",
                                                "utcOffset": "UTC+0", "groupBy": "family", "limit": 1000,
                                                "includeContextWeight": False})
    assert usage["totals"]["input"] >= 20 and usage["aggregates"]["sessionCount"] >= 1  # 10 per fake turn
    assert [a["agentId"] for a in usage["aggregates"]["byAgent"]] == ["main"]
    for name in ("exec.approval.list", "plugin.approval.list", "openclaw.approval.list"):
        assert await admin.call(name, {}) == []
    assert (await admin.call("plugins.catalog.browse", {"intent": "all", "pageSize": 100})) == {"items": []}
    assert [t["id"] for t in (await admin.call("themes.list"))["themes"]][:2] == ["claw", "knot"]


async def test_bad_params_name_the_field(admin: RawClient) -> None:
    for name, params, field in [("sessions.messages.subscribe", {}, "key"),
                                ("progressCard.get", {"sessionKey": ""}, "sessionKey"),
                                ("tasks.list", {"status": "sleeping"}, "status"),
                                ("sessions.observer.visibility", {"visible": "yes"}, "visible"),
                                ("agent.identity.get", {"agentId": "ghost"}, "agentId")]:
        frame = await admin.req(name, params)
        assert not frame["ok"] and frame["error"]["code"] == "INVALID_REQUEST", frame
        assert field in frame["error"]["message"], frame


async def test_scopes_follow_the_schema_table(gw: GatewayProcess, schema: dict[str, Any]) -> None:
    reader = await operator(gw.url, gw.token or "", scopes=["operator.read"])
    try:
        assert (await reader.call("system.info"))["pid"]
        for name in ("update.status", "question.list", "exec.approval.list"):
            frame = await reader.req(name, {})
            needed = schema["methods"][name]["scope"]
            assert frame["error"]["details"] == {"code": "MISSING_SCOPE", "missingScope": needed}, frame
        assert (await reader.call("sessions.subscribe", {})) == {"subscribed": True}
    finally:
        await reader.close()


async def drain(client: RawClient, seconds: float = 0.5) -> list[dict[str, Any]]:
    """Events that arrive within ``seconds`` (ticks and presence left out)."""
    await asyncio.sleep(seconds)
    out = []
    while not client.events.empty():
        frame = client.events.get_nowait()
        if frame["event"] not in ("tick", "presence", "health"):
            out.append(frame)
    return out


async def turn(client: RawClient, key: str, text: str) -> None:
    await client.call("chat.send", {"sessionKey": key, "message": text, "idempotencyKey": text})
    while True:
        frame = await client.next_event("chat", timeout=15)
        if frame["payload"]["sessionKey"] == key and frame["payload"]["state"] == "final":
            return


async def test_subscriptions_deliver_per_connection_and_stop(gw: GatewayProcess) -> None:
    token = gw.token or ""
    watcher, bystander, other = [await operator(gw.url, token) for _ in range(3)]
    key, elsewhere = "agent:main:cui-sub", "agent:main:cui-elsewhere"
    try:
        assert await watcher.call("sessions.subscribe", {}) == {"subscribed": True}
        assert await watcher.call("sessions.messages.subscribe", {"key": key}) == {"subscribed": True, "key": key}
        assert await other.call("sessions.messages.subscribe", {"key": elsewhere}) == {
            "subscribed": True, "key": elsewhere}
        await drain(watcher, 0), await drain(bystander, 0), await drain(other, 0)
        await turn(bystander, key, "first words")
        seen = await drain(watcher)
        messages = [f["payload"] for f in seen if f["event"] == "session.message"]
        assert [(m["sessionKey"], m["message"]["role"], m["message"]["content"][0]["text"]) for m in messages] == [
            (key, "user", "first words"), (key, "assistant", "echo: first words")]
        changed = [f["payload"] for f in seen if f["event"] == "sessions.changed"]
        assert {c["sessionKey"] for c in changed} == {key} and {"start", "end", "message"} <= {
            c.get("phase") for c in changed}
        assert all(c["agentId"] == "main" for c in changed)
        # Neither the connection that subscribed to nothing nor the one watching another session gets them.
        for client in (bystander, other):
            assert not [f for f in await drain(client, 0) if f["event"] in ("session.message", "sessions.changed")]
        # A patch (no broadcast of its own) is announced too.
        await bystander.call("sessions.patch", {"key": key, "label": "watched"})
        changed = [f["payload"] for f in await drain(watcher) if f["event"] == "sessions.changed"]
        assert [(c["sessionKey"], c["reason"]) for c in changed] == [(key, "patch")]
        # Unsubscribed from the messages: the list still hears of the session, the transcript no more.
        assert await watcher.call("sessions.messages.unsubscribe", {"key": key}) == {"subscribed": False, "key": key}
        await turn(bystander, key, "second words")
        seen = await drain(watcher)
        assert not [f for f in seen if f["event"] == "session.message"]
        assert [f for f in seen if f["event"] == "sessions.changed"]
        # A closed connection's subscriptions go with it: the others still get theirs afterwards.
        await watcher.close()
        await turn(bystander, elsewhere, "third words")
        assert [f["payload"]["message"]["role"] for f in await drain(other) if f["event"] == "session.message"] == [
            "user", "assistant"]
    finally:
        for client in (watcher, bystander, other):
            await client.close()


async def test_chat_events_carry_openclaw_fields(admin: RawClient, schema: dict[str, Any]) -> None:
    """``deltaText``, ``seq`` and ``message``: what the Control UI renders a reply from, in its closed shape."""
    sent = await admin.call("chat.send", {"sessionKey": "agent:main:cui-chat", "message": "fields",
                                          "idempotencyKey": "f1"})
    assert sent["runId"] == "f1"  # the run is named by the idempotency key, as OpenClaw's clients expect
    deltas, agent = [], []
    while True:
        event = await asyncio.wait_for(admin.events.get(), 15)
        frame = event["payload"]
        if event["event"] == "agent" and frame["data"].get("sessionKey") == "agent:main:cui-chat":
            agent.append(frame)
        if event["event"] != "chat" or frame["sessionKey"] != "agent:main:cui-chat":
            continue
        if frame["state"] == "delta":
            deltas.append(frame)
        if frame["state"] == "final":
            break
    assert frame["runId"] == "f1"
    assert "".join(d["deltaText"] for d in deltas) == "echo: fields"
    assert [d["seq"] for d in deltas] + [frame["seq"]] == list(range(len(deltas) + 1))
    assert frame["message"]["content"] == [{"type": "text", "text": "echo: fields"}] and frame["agentId"] == "main"
    check(schema, "ChatFinalEvent", frame)  # the whole frame: nothing of ours outside ``message``
    for delta in deltas:
        check(schema, "ChatDeltaEvent", delta)
    assert frame["message"]["text"] == "echo: fields" and frame["message"]["agentId"] == "main"
    assert agent and [a["seq"] for a in agent] == list(range(len(agent)))  # the run's agent events, in order
    for event in agent:
        check(schema, "AgentEvent", event)


async def test_subscribe_with_list_params_returns_the_list(admin: RawClient) -> None:
    out = await admin.call("sessions.subscribe", {"limit": 5})
    assert out["subscribed"] is True and isinstance(out["list"]["sessions"], list)
    frame = await admin.req("sessions.subscribe", {"limit": "many"})
    assert not frame["ok"] and "limit" in frame["error"]["message"]


async def test_exec_approvals_get_shows_each_agents_policy(admin: RawClient, schema: dict[str, Any]) -> None:
    """The Devices page's approval policy: each agent's permission mode as OpenClaw's levels, read-only."""
    snapshot = await admin.call("exec.approvals.get")
    check(schema, "ExecApprovalsSnapshot", snapshot)
    agents = snapshot["file"]["agents"]
    assert agents["main"]["security"] == "allowlist" and agents["main"]["ask"] == "off"  # the default mode
    assert snapshot["exists"] is True and len(snapshot["hash"]) == 64
    assert (await admin.call("exec.approvals.get"))["hash"] == snapshot["hash"]  # unchanged, same hash
