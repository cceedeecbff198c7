"""Teams: three people (the owner, members Alice and Bob) on one gateway, across Telegram, Discord and the web chat,
against the loopback fakes and the stand-in CLI.

Each is answered by their own agent run in their own workspace; Bob links his Discord to his Telegram and carries
on the same conversation; a budget stops Alice and not Bob; Alice signs in to the web chat with a link of her own
and, through every door she has (the methods, the events, her run's own token), reaches nothing of Bob's. The
table ``DOORS`` lists each door and action tried.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_discord import FakeDiscord, snowflake
from tests.support.fake_telegram import FakeTelegram, cli_runs
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

OWNER_TG, ALICE_TG, BOB_TG, STRANGER_TG = 111, 201, 202, 203
BOB_DC = "8880002"
FAKE_CLI = str(ROOT / "tests/support/fake_cli.py")


@pytest.fixture(scope="module")
def tg() -> Iterator[FakeTelegram]:
    server = FakeTelegram().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def dc() -> AsyncIterator[FakeDiscord]:
    server = await FakeDiscord().start()
    yield server
    await server.stop()


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two project folders: the owner's (no ``people``) and one opened to Bob."""
    root = tmp_path_factory.mktemp("projects")
    folders = {"home": root / "owners-home", "team": root / "team-repo"}
    for folder in folders.values():
        folder.mkdir()
    return folders


@pytest.fixture(scope="module")
async def gw(tg: FakeTelegram, dc: FakeDiscord, projects: dict[str, Path],
             tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[GatewayProcess]:
    state = tmp_path_factory.mktemp("people") / "gw"
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI],
                                   "projects": [{"name": "home", "path": str(projects["home"])},
                                                {"name": "team", "path": str(projects["team"]), "people": ["bob"]}]},
                                  {"id": "helper", "command": [sys.executable, FAKE_CLI], "people": ["dave"]}]},
              "channels": {"ownerAllowFrom": [f"telegram:{OWNER_TG}"], "telegram": tg.channel_config(),
                           "discord": dc.config()},
              "session": {"dmScope": "per-channel-peer"}}  # Alice's chats apart; Bob chose one conversation
    proc = GatewayProcess(state, config=config, env={"FAKE_CLI_LOG": str(state / "cli.log")})
    await asyncio.to_thread(proc.start)
    try:
        await asyncio.wait_for(dc.identified.wait(), 20)
        await tg.wait_polling()
        yield proc
    finally:
        await asyncio.to_thread(proc.stop)


async def say(tg: FakeTelegram, user: int, text: str, expect: str) -> str:
    """A Telegram DM from ``user``; the bot's reply to it (a message sent after it) that contains ``expect``."""
    before = {id(c) for c in tg.calls}
    tg.user_message(chat_id=user, user_id=user, text=text)
    call = await tg.wait_call("sendMessage", lambda c: id(c) not in before and c.params["chat_id"] == str(user)
                              and expect in c.params["text"], timeout=30)
    return str(call.params["text"])


def cli(gw: GatewayProcess, *args: str) -> str:
    """``remoteclaw <args>`` against the running gateway, as an admin types it."""
    out = subprocess.run([sys.executable, "-m", "gateway.cli", *args, "--url", gw.url, "--token", gw.token or ""],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, env=gw.env())
    assert out.returncode == 0, out.stderr
    return out.stdout


async def test_the_owner_list_became_the_owner_person_and_still_gets_the_owner_tools(
        gw: GatewayProcess, tg: FakeTelegram) -> None:
    listed = cli(gw, "people", "list")
    assert re.search(r"owner\s+owner\s+Owner — telegram:111", listed), listed
    await say(tg, OWNER_TG, "hello from the owner", "echo: hello from the owner")
    run = next(r for r in cli_runs(gw.state_dir) if "hello from the owner" in r["prompt"])
    assert run["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "true"


async def test_each_person_is_answered_by_their_own_run_in_their_own_workspace(
        gw: GatewayProcess, tg: FakeTelegram) -> None:
    cli(gw, "people", "add", "alice", "--name", "Alice", "--max-cost-per-day", "0.05")
    cli(gw, "people", "add", "bob", "--name", "Bob", "--one-conversation")
    cli(gw, "people", "link", "alice", "telegram", str(ALICE_TG))
    cli(gw, "people", "link", "bob", "telegram", str(BOB_TG))
    assert "id here is telegram:203" in await say(tg, STRANGER_TG, "/whoami", "not on this gateway")
    assert "pairing code" in await say(tg, STRANGER_TG, "let me in", "pairing code")  # strangers: unchanged
    await say(tg, ALICE_TG, "alice asks", "echo: alice asks")
    await say(tg, BOB_TG, "bob asks from telegram", "echo: bob asks from telegram")
    runs = cli_runs(gw.state_dir)
    alice = next(r for r in runs if "alice asks" in r["prompt"])
    bob = next(r for r in runs if "bob asks" in r["prompt"])
    assert alice["env"]["REMOTECLAW_SENDER_IS_OWNER"] == bob["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "false"
    assert alice["cwd"] != bob["cwd"]
    assert bob["env"]["REMOTECLAW_SESSION_KEY"] == "agent:main:person:bob"  # he chose one conversation
    c = await operator(gw.url, gw.token or "")
    sessions = {s["key"]: s["personId"] for s in (await c.call("sessions.list", {}))["sessions"]}
    await c.close()
    assert sessions[f"agent:main:telegram:direct:{ALICE_TG}"] == "alice"
    assert sessions["agent:main:person:bob"] == "bob"
    assert sessions[f"agent:main:telegram:direct:{OWNER_TG}"] == "owner"


async def test_a_chat_linked_with_a_code_continues_the_same_conversation(
        gw: GatewayProcess, tg: FakeTelegram, dc: FakeDiscord) -> None:
    text = await say(tg, BOB_TG, "/link", "Your link code")
    code = re.search(r"/link ([A-Z0-9]{8})", text)
    assert code, text
    dm = snowflake()
    await dc.dispatch("MESSAGE_CREATE", dc.message_payload(content=f"/link {code.group(1)}", author_id=BOB_DC,
                                                           author_name="bob", channel_id=dm))
    await dc.wait_posted(dm, "Linked", timeout=20)
    await dc.dispatch("MESSAGE_CREATE", dc.message_payload(content="bob goes on from discord", author_id=BOB_DC,
                                                           author_name="bob", channel_id=dm))
    await dc.wait_posted(dm, "echo: bob goes on from discord", timeout=30)
    c = await operator(gw.url, gw.token or "")
    history = [m["text"] for m in (await c.call("chat.history", {"sessionKey": "agent:main:person:bob"}))["messages"]]
    person = (await c.call("people.get", {"id": "bob"}))["person"]
    await c.close()
    assert "bob asks from telegram" in history and "bob goes on from discord" in history
    assert {(i["channel"], i["senderId"]) for i in person["identities"]} == {("telegram", str(BOB_TG)),
                                                                            ("discord", BOB_DC)}
    again = snowflake()  # a used code links nobody
    await dc.dispatch("MESSAGE_CREATE", dc.message_payload(content=f"/link {code.group(1)}", author_id="8880009",
                                                           author_name="eve", channel_id=again))
    await dc.wait_posted(again, "unknown or has expired", timeout=20)


async def test_a_budget_stops_alice_and_not_bob(gw: GatewayProcess, tg: FakeTelegram) -> None:
    await say(tg, ALICE_TG, "cost:0.06 an expensive one", "echo")
    refused = await say(tg, ALICE_TG, "one more", "budget")
    assert "Alice's budget for today is spent" in refused and "0.06 of $0.05" in refused
    await say(tg, BOB_TG, "bob is still answered", "echo: bob is still answered")
    assert not any("one more" in r["prompt"] for r in cli_runs(gw.state_dir))  # no process started for it
    c = await operator(gw.url, gw.token or "")
    await c.call("people.update", {"id": "alice", "maxCostPerDay": None})  # lifted for the next tests
    await c.close()


def redeem(gw: GatewayProcess, code: str) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(gw.http + "/people/signin", data=json.dumps({"code": code}).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


async def signed_in(gw: GatewayProcess, token: str) -> tuple[RawClient, dict[str, Any]]:
    c = await RawClient.open(gw.url)
    hello = await c.handshake(token, client_id="webchat-ui", mode="webchat")
    assert hello["ok"], hello
    return c, hello["payload"]


def _drain(c: RawClient) -> list[dict[str, Any]]:
    out = []
    while not c.events.empty():
        out.append(c.events.get_nowait())
    return out


def refused(frame: dict[str, Any]) -> bool:
    return not frame["ok"]


BOB_KEY = "agent:main:person:bob"
DOORS: list[tuple[str, str, dict[str, Any]]] = [
    ("read Bob's transcript", "chat.history", {"sessionKey": BOB_KEY}),
    ("write into Bob's conversation", "chat.send", {"sessionKey": BOB_KEY, "message": "hi", "idempotencyKey": "d1"}),
    ("start a turn in Bob's conversation", "agent", {"sessionKey": BOB_KEY, "message": "hi", "idempotencyKey": "d2"}),
    ("create the session Bob's Telegram DM would land in", "chat.send",
     {"sessionKey": f"agent:main:telegram:direct:{BOB_TG}9", "message": "hi", "idempotencyKey": "d3"}),
    ("stop Bob's turn", "chat.abort", {"sessionKey": BOB_KEY}),
    ("reset Bob's conversation", "sessions.reset", {"key": BOB_KEY}),
    ("delete Bob's conversation", "sessions.delete", {"key": BOB_KEY}),
    ("relabel Bob's conversation", "sessions.patch", {"key": BOB_KEY, "label": "mine now"}),
    ("describe Bob's conversation", "sessions.describe", {"key": BOB_KEY}),
    ("see Bob's spending", "usage.cost", {"personId": "bob"}),
    ("work in the owner's project", "sessions.project", {"sessionKey": "agent:main:person:alice",
                                                         "project": "home"}),
    ("list the people", "people.list", {}),
    ("read the config", "config.get", {}),
    ("list Bob's sign-ins", "people.signins.list", {"id": "bob"}),
    ("pair a device", "device.pair.list", {}),
]


async def test_alice_signs_in_to_the_web_chat_and_reaches_nothing_of_bobs(
        gw: GatewayProcess, tg: FakeTelegram) -> None:
    text = await say(tg, ALICE_TG, "/login", "sign-in link")
    code = re.search(r"#signin=([A-Za-z0-9]+)", text)
    assert code, text
    status, body = redeem(gw, code.group(1))
    assert status == 200 and body["person"]["id"] == "alice", body
    assert redeem(gw, code.group(1))[0] == 400  # one use
    token = body["token"]
    c, hello = await signed_in(gw, token)
    try:
        assert hello["snapshot"]["sessionDefaults"]["mainSessionKey"] == "agent:main:person:alice"
        me = await c.call("people.me", {})
        assert me["person"]["id"] == "alice" and me["person"]["role"] == "member"
        # her own conversation works: a message, a reply, the history
        sent = await c.call("chat.send", {"sessionKey": "agent:main:person:alice", "message": "web hello",
                                          "idempotencyKey": "a1"})
        done = await c.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 30_000}, timeout=35)
        assert done["status"] == "ok", done
        own = [f for f in _drain(c) if f["event"] in ("chat", "agent")]  # her page streams her own turn
        assert {f["event"] for f in own} == {"chat", "agent"}, own
        mine = [s["key"] for s in (await c.call("sessions.list", {}))["sessions"]]
        assert set(mine) == {"agent:main:person:alice", f"agent:main:telegram:direct:{ALICE_TG}"}, mine
        # a page of her list is a page of hers, whatever the newest conversations on the gateway are
        owner = await operator(gw.url, gw.token or "")
        try:
            for n in range(3):
                await owner.call("sessions.patch", {"key": f"agent:main:owner-side:{n}", "label": f"newer {n}"})
        finally:
            await owner.close()
        page = [s["key"] for s in (await c.call("sessions.list", {"limit": 2}))["sessions"]]
        assert sorted(page) == sorted(mine), page
        # every door to Bob's things is shut
        for what, method, params in DOORS:
            frame = await c.req(method, params)
            assert refused(frame), f"Alice could {what} ({method}): {frame}"
        tasks = await c.call("tasks.list", {})
        assert all("bob" not in t.get("sessionKey", "") for t in tasks["tasks"])
        usage = await c.call("sessions.usage", {})
        assert {s["key"] for s in usage["sessions"]} <= set(mine)
        # her spending is hers alone: the same figures the owner reads for her, never Bob's or the team's
        own_cost = await c.call("usage.cost", {"days": 2, "groupBy": "person"})
        owner = await operator(gw.url, gw.token or "")
        try:
            team = await owner.call("usage.cost", {"days": 2, "groupBy": "person"})
            hers = await owner.call("usage.cost", {"days": 2, "personId": "alice"})
            ghost = await owner.req("usage.cost", {"personId": "nobody"})
        finally:
            await owner.close()
        assert own_cost["personId"] == "alice" and own_cost["totals"] == hers["totals"]
        assert [p["personId"] for p in own_cost["byPerson"]] == ["alice"]
        per_person = {p["personId"]: p for p in team["byPerson"]}
        assert per_person["alice"]["totals"]["totalCost"] == hers["totals"]["totalCost"] >= 0.06
        assert per_person["alice"]["name"] == "Alice" and per_person["bob"]["turns"] >= 2
        assert team["totals"]["totalTokens"] > hers["totals"]["totalTokens"]  # everyone's turns, not hers
        assert not ghost["ok"] and ghost["error"]["details"]["field"] == "personId", ghost
    finally:
        await c.close()


async def test_events_and_approvals_of_bob_never_reach_alice(gw: GatewayProcess, tg: FakeTelegram) -> None:
    code = re.search(r"#signin=([A-Za-z0-9]+)", await say(tg, ALICE_TG, "/login", "sign-in link"))
    assert code
    alice, _ = await signed_in(gw, redeem(gw, code.group(1))[1]["token"])
    owner = await operator(gw.url, gw.token or "")
    try:
        tg.user_message(chat_id=BOB_TG, user_id=BOB_TG, text="ask:rm -rf /tmp/bob-only")
        asked = await owner.next_event("exec.approval.requested", timeout=30)
        approval_id = asked["payload"]["id"]
        assert (await alice.call("exec.approval.list", {})) == []
        for method in ("exec.approval.get", "exec.approval.resolve"):
            params: dict[str, Any] = {"id": approval_id}
            if method.endswith("resolve"):
                params["decision"] = "allow-once"
            assert refused(await alice.req(method, params)), method
        await owner.call("exec.approval.resolve", {"id": approval_id, "decision": "deny"})
        await tg.wait_call("sendMessage", lambda c: c.params["chat_id"] == str(BOB_TG)
                           and "approval: deny" in c.params["text"], timeout=30)
        # meanwhile Alice's socket got none of it: no event names Bob's conversation
        await asyncio.sleep(0.5)
        leaked = []
        while not alice.events.empty():
            frame = alice.events.get_nowait()
            if "bob" in json.dumps(frame.get("payload")).lower():
                leaked.append(frame["event"])
        assert not leaked, leaked
    finally:
        await alice.close()
        await owner.close()


async def test_alices_run_token_reaches_her_sessions_only(gw: GatewayProcess, tg: FakeTelegram) -> None:
    tg.user_message(chat_id=ALICE_TG, user_id=ALICE_TG, text="sleep:4 a slow one")
    run = await until(lambda: next((r for r in cli_runs(gw.state_dir) if "a slow one" in r["prompt"]), None),
                      timeout=20)
    c = await operator(gw.url, run["env"]["REMOTECLAW_GATEWAY_TOKEN"])
    try:
        keys = {s["key"] for s in (await c.call("sessions.list", {}))["sessions"]}
        assert keys == {"agent:main:person:alice", f"agent:main:telegram:direct:{ALICE_TG}"}, keys
        assert refused(await c.req("chat.history", {"sessionKey": BOB_KEY}))
    finally:
        await c.close()


async def test_a_revoked_sign_in_closes_the_page_and_signs_in_no_more(gw: GatewayProcess, tg: FakeTelegram) -> None:
    code = re.search(r"#signin=([A-Za-z0-9]+)", await say(tg, ALICE_TG, "/login", "sign-in link"))
    assert code
    token = redeem(gw, code.group(1))[1]["token"]
    alice, _ = await signed_in(gw, token)
    mine = (await alice.call("people.signins.list", {}))["signins"]
    assert len(mine) >= 2 and all(s["personId"] == "alice" for s in mine)
    listed = cli(gw, "people", "signins", "alice")
    newest = mine[0]["id"]
    assert newest in listed
    assert "revoked" in cli(gw, "people", "revoke", newest)
    assert await alice.wait_closed(5) is not None
    again = await RawClient.open(gw.url)
    frame = await again.handshake(token)
    assert not frame["ok"], frame
    await again.close()


async def test_an_admin_administers_people_but_reads_others_only_when_the_owner_allows(
        gw: GatewayProcess) -> None:
    owner = await operator(gw.url, gw.token or "")
    try:
        await owner.call("people.create", {"id": "carol", "name": "Carol", "role": "admin"})
        link = (await owner.call("people.loginLink", {"id": "carol"}))["url"]
        carol, _ = await signed_in(gw, redeem(gw, link.split("#signin=")[1])[1]["token"])
        try:
            assert {p["id"] for p in (await carol.call("people.list", {}))["people"]} >= {"owner", "alice", "bob"}
            await carol.call("people.update", {"id": "alice", "maxCostPerDay": 3})
            escalate = await carol.req("people.update", {"id": "carol", "role": "owner"})
            assert not escalate["ok"] and escalate["error"]["details"]["field"] == "role", escalate
            assert refused(await carol.req("chat.history", {"sessionKey": BOB_KEY}))
            assert BOB_KEY not in {s["key"] for s in (await carol.call("sessions.list", {}))["sessions"]}
        finally:
            await carol.close()
        # who did what to people is in the audit log, the admin by her own name
        events = (await owner.call("audit.log.list", {"action": "people."}))["events"]
        done = {(e["action"], e["actor"], e["target"]) for e in events}
        assert ("people.update", "person:carol", "alice") in done, done
        assert ("people.create", "cli", "carol") in done or any(a == "people.create" and t == "carol"
                                                                for a, _, t in done), done
        config = await owner.call("config.get", {})
        await owner.call("config.patch", {"patch": {"people": {"adminsReadTranscripts": True}},
                                          "baseHash": config["hash"]})
        link = (await owner.call("people.loginLink", {"id": "carol"}))["url"]
        carol, _ = await signed_in(gw, redeem(gw, link.split("#signin=")[1])[1]["token"])
        try:
            texts = [m["text"] for m in (await carol.call("chat.history", {"sessionKey": BOB_KEY}))["messages"]]
            assert "bob asks from telegram" in texts
        finally:
            await carol.close()
    finally:
        await owner.close()


async def test_a_person_has_their_own_agent_and_a_team_budget_stops_everyone_but_the_owner(
        gw: GatewayProcess, tg: FakeTelegram) -> None:
    cli(gw, "people", "add", "dave", "--name", "Dave", "--agent", "helper")
    cli(gw, "people", "link", "dave", "telegram", "204")
    await say(tg, 204, "dave asks his helper", "echo: dave asks his helper")
    run = next(r for r in cli_runs(gw.state_dir) if "dave asks his helper" in r["prompt"])
    assert run["env"]["REMOTECLAW_AGENT_ID"] == "helper"
    assert run["env"]["REMOTECLAW_SESSION_KEY"] == "agent:helper:telegram:direct:204"
    code = re.search(r"#signin=([A-Za-z0-9]+)", await say(tg, ALICE_TG, "/login", "sign-in link"))
    assert code
    alice, _ = await signed_in(gw, redeem(gw, code.group(1))[1]["token"])
    try:  # the helper agent is Dave's: Alice may not open a conversation with it
        frame = await alice.req("chat.send", {"sessionKey": "agent:helper:person:alice", "message": "hi",
                                              "idempotencyKey": "h1"})
        assert not frame["ok"] and frame["error"]["details"]["field"] == "sessionKey", frame
    finally:
        await alice.close()
    owner = await operator(gw.url, gw.token or "")
    try:
        config = await owner.call("config.get", {})
        await owner.call("config.patch", {"patch": {"people": {"maxCostPerDay": 0.01}}, "baseHash": config["hash"]})
        assert "team's budget for today is spent" in await say(tg, 204, "one more for dave", "budget")
        await say(tg, OWNER_TG, "the owner is not on the team budget", "echo: the owner is not")
        config = await owner.call("config.get", {})
        await owner.call("config.patch", {"patch": {"people": {"maxCostPerDay": None}}, "baseHash": config["hash"]})
    finally:
        await owner.close()


async def test_a_project_folder_is_the_owners_unless_it_is_opened_to_a_person(
        gw: GatewayProcess, tg: FakeTelegram, projects: dict[str, Path]) -> None:
    assert "home" in await say(tg, OWNER_TG, "/project", "Projects")
    assert "No project of this agent is open to you" in await say(tg, ALICE_TG, "/project", "open to you")
    assert "not open to you" in await say(tg, ALICE_TG, "/project home", "not open")
    listing = await say(tg, BOB_TG, "/project", "Projects")
    assert "team" in listing and "home" not in listing, listing
    await say(tg, BOB_TG, "/project team", "Now working in team")
    await say(tg, BOB_TG, "bob works in the team repo", "echo: bob works in the team repo")
    run = next(r for r in cli_runs(gw.state_dir) if "bob works in the team repo" in r["prompt"])
    assert run["cwd"] == str(projects["team"]), run["cwd"]
    code = re.search(r"#signin=([A-Za-z0-9]+)", await say(tg, ALICE_TG, "/login", "sign-in link"))
    assert code
    alice, _ = await signed_in(gw, redeem(gw, code.group(1))[1]["token"])
    try:  # the web chat's picker offers her nothing, and the method refuses the owner's project, naming it
        assert (await alice.call("status", {"sessionKey": "agent:main:person:alice"}))["projects"] == []
        frame = await alice.req("sessions.project", {"sessionKey": "agent:main:person:alice", "project": "home"})
        assert not frame["ok"] and frame["error"]["details"]["field"] == "project", frame
    finally:
        await alice.close()
    owner = await operator(gw.url, gw.token or "")
    try:  # closed again: Bob's conversation is still switched there, and his next turn is refused before it runs
        config = await owner.call("config.get", {})
        agents = config["config"]["agents"]["list"]
        for agent in agents:
            for project in agent.get("projects", []):
                project.pop("people", None)
        await owner.call("config.patch", {"patch": {"agents": {"list": agents}}, "baseHash": config["hash"]})
        await say(tg, BOB_TG, "bob tries again", "not open to this conversation")
        assert not any("bob tries again" in r["prompt"] for r in cli_runs(gw.state_dir))
    finally:
        await owner.close()


def _pre_people_database(db: Path) -> None:
    """A database as the single-owner gateway left it: every migration but people's, a Telegram DM of the owner and
    a web chat conversation, each with its transcript."""
    from alembic import command
    from sqlalchemy import create_engine

    from gateway.store.migrate import MIGRATIONS_DIR, _alembic_config

    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        for head in ("0005_mcp_tokens", "0006_idempotency", "0008_outbox", "0009_inbound_journal",
                     "0011_replica_heartbeats", "0012_nodes", "0013_voice_prefs", "0015_cron_wake", "0018_approvals",
                     "0016_session_project", "0017_turn_usage"):
            command.upgrade(_alembic_config(MIGRATIONS_DIR, conn), head)
    engine.dispose()
    with sqlite3.connect(db) as conn:
        for key, channel, peer, chat_type in ((f"agent:main:telegram:direct:{OWNER_TG}", "telegram", str(OWNER_TG),
                                               "dm"), ("agent:main:main", None, None, None)):
            conn.execute("INSERT INTO sessions (key, agent_id, kind, channel, peer_id, chat_type, cli_sessions, "
                         "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, created_at, updated_at) "
                         "VALUES (?, 'main', 'direct', ?, ?, ?, '{}', 0, 0, 0, 0, datetime('now'), datetime('now'))",
                         (key, channel, peer, chat_type))
            conn.execute("INSERT INTO session_messages (session_key, role, text, ts) VALUES (?, 'user', ?, "
                         "datetime('now'))", (key, f"kept in {key}"))


async def test_the_upgrade_from_a_single_owner_database_keeps_every_session(tmp_path: Path) -> None:
    state = tmp_path / "gw"
    state.mkdir()
    _pre_people_database(state / "remoteclaw.db")
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "channels": {"ownerAllowFrom": [f"telegram:{OWNER_TG}"]}}
    with GatewayProcess(state, config=config) as proc:
        c = await operator(proc.url, proc.token or "")
        try:
            sessions = {s["key"]: s["personId"] for s in (await c.call("sessions.list", {}))["sessions"]}
            assert sessions == {f"agent:main:telegram:direct:{OWNER_TG}": "owner", "agent:main:main": None}
            for key in sessions:
                texts = [m["text"] for m in (await c.call("chat.history", {"sessionKey": key}))["messages"]]
                assert texts == [f"kept in {key}"], texts
            people = (await c.call("people.list", {}))["people"]
            assert [(p["id"], p["role"], [i["senderId"] for i in p["identities"]]) for p in people] == [
                ("owner", "owner", [str(OWNER_TG)])]
        finally:
            await c.close()
