"""Safe defaults (#51): a sender nobody has on record shares nothing with the owner, whatever ``session.dmScope``
says; a session's deliveries go to its owner's chat, not to whoever wrote last; on one shared agent, ``/usage`` and
memory are per person.

Two real gateways against the loopback Telegram: one with the owner and a stranger let in by
``channels.pairing.approve`` (no people on record), one with members Alice and Bob on the one default agent.
Each test is judged by its effect: what the stranger's (or Alice's) run got back, where the fake Telegram was asked
to send.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.support.fake_telegram import FakeTelegram, cli_runs, telegram_gateway
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

OWNER, STRANGER = 111, 222
ALICE, BOB = 301, 302
FAKE_CLI = str(ROOT / "tests/support/fake_cli.py")
SCOPES = ["main", "per-peer", "per-channel-peer", "per-account-channel-peer"]


def owners_key(scope: str) -> str:
    """The owner's DM session under ``scope`` (the owner keeps what the operator chose)."""
    return {"main": "agent:main:main", "per-peer": f"agent:main:direct:{OWNER}",
            "per-channel-peer": f"agent:main:telegram:direct:{OWNER}",
            "per-account-channel-peer": f"agent:main:telegram:default:direct:{OWNER}"}[scope]


@pytest.fixture(scope="module")
def tg() -> Iterator[FakeTelegram]:
    server = FakeTelegram().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, tg: FakeTelegram) -> Iterator[GatewayProcess]:
    """The defaults: ``dmScope: main``, ``dmPolicy: pairing``, one agent (with the owner's project), nobody on
    record."""
    root = tmp_path_factory.mktemp("safe")
    (root / "owners-project").mkdir()
    agents = {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI],
                        "projects": [{"name": "home", "path": str(root / "owners-project")}]}]}
    with telegram_gateway(root / "gw", tg, channels={"ownerAllowFrom": [f"telegram:{OWNER}"]},
                          config={"agents": agents}) as proc:
        yield proc


async def say(tg: FakeTelegram, user: int, text: str, expect: str = "") -> str:
    """A Telegram DM from ``user``; the bot's next reply in that chat containing ``expect``."""
    before = len(tg.calls)
    tg.user_message(chat_id=user, user_id=user, text=text)
    call = await tg.wait_call("sendMessage", lambda c: c in tg.calls[before:] and c.params["chat_id"] == str(user)
                              and expect in c.params["text"], timeout=30)
    return str(call.params["text"])


async def set_scope(c: RawClient, scope: str) -> None:
    base = (await c.call("config.get"))["hash"]
    await c.call("config.patch", {"patch": {"session": {"dmScope": scope}}, "baseHash": base})


@pytest.fixture(scope="module")
async def paired(gw: GatewayProcess, tg: FakeTelegram) -> None:
    """The stranger asks, the owner approves their code, as ``remoteclaw pairing approve`` does."""
    await tg.wait_polling()
    text = await say(tg, STRANGER, "hello, may I?", "pairing code")
    code = text.split("pairing code: ", 1)[1].split("\n", 1)[0]
    c = await operator(gw.url, gw.token or "")
    try:
        await c.call("channels.pairing.approve", {"channel": "telegram", "code": code})
    finally:
        await c.close()


def run_of(gw: GatewayProcess, marker: str) -> dict[str, Any]:
    return next(r for r in cli_runs(gw.state_dir) if marker in r["prompt"])


async def test_a_paired_stranger_gets_a_session_of_their_own_under_every_dm_scope(
        gw: GatewayProcess, tg: FakeTelegram, paired: None) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        assert "Now working in home" in await say(tg, OWNER, "/project home", "home")  # the owner's own project
        for scope in SCOPES:
            await set_scope(c, scope)
            secret = f"owner-secret-{scope}"
            await say(tg, OWNER, f"{secret} first", f"echo: {secret} first")
            await say(tg, OWNER, f"{secret} second", f"echo: {secret} second")  # the owner's CLI session resumed
            owner_run = run_of(gw, f"{secret} second")
            assert owner_run["env"]["REMOTECLAW_SESSION_KEY"] == owners_key(scope)
            owner_sid = owner_run["argv"][owner_run["argv"].index("--resume") + 1]

            marker = f"stranger-reads-{scope}"
            answer = await say(tg, STRANGER, f"{marker} tool:sessions_history "
                                             f'{{"sessionKey": "{owners_key(scope)}"}}', "tool:")
            assert secret not in answer, (scope, answer)  # the owner's transcript, read by the stranger's run
            assert "SESSION_FORBIDDEN" in answer or "forbidden" in answer.lower(), (scope, answer)
            run = run_of(gw, marker)
            key = run["env"]["REMOTECLAW_SESSION_KEY"]
            assert key not in (owners_key(scope), "agent:main:main"), (scope, key)
            resumed = run["argv"][run["argv"].index("--resume") + 1] if "--resume" in run["argv"] else None
            assert resumed != owner_sid, (scope, "the stranger resumed the owner's CLI session")
            assert run["cwd"] != owner_run["cwd"], (scope, "the stranger works where the owner works")
            history = await c.call("chat.history", {"sessionKey": key})
            assert any(marker in (m.get("text") or "") for m in history["messages"])
            refused = await say(tg, STRANGER, "/project home", "roject")  # nor may they choose the owner's folder
            assert "not open to you" in refused, (scope, refused)
        await set_scope(c, "main")
    finally:
        await c.close()


async def test_the_owners_announce_to_the_last_chat_reaches_the_owner_not_the_stranger_who_wrote_last(
        gw: GatewayProcess, tg: FakeTelegram, paired: None) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        await set_scope(c, "main")
        await say(tg, OWNER, "owner writes first", "echo: owner writes first")
        await say(tg, STRANGER, "stranger writes last", "echo: stranger writes last")
        before = len(tg.calls)
        job = await c.call("cron.add", {"name": "daily brief", "schedule": {"kind": "at", "at": "2020-01-01T00:00Z"},
                                        "payload": {"kind": "agentTurn", "message": "the owner's daily brief"},
                                        "delivery": {"mode": "announce", "channel": "last"}})
        sent = await tg.wait_call("sendMessage", lambda x: x in tg.calls[before:]
                                  and "the owner's daily brief" in x.params["text"], timeout=30)
        assert sent.params["chat_id"] == str(OWNER), sent.params
        await c.call("cron.remove", {"id": job["id"]})

        before = len(tg.calls)  # ``agent {deliver: true}`` without a target: the main session's route
        await c.call("agent", {"sessionKey": "agent:main:main", "message": "owner-only answer", "deliver": True,
                               "idempotencyKey": "safe-defaults-deliver"})
        sent = await tg.wait_call("sendMessage", lambda x: x in tg.calls[before:]
                                  and "owner-only answer" in x.params["text"], timeout=30)
        assert sent.params["chat_id"] == str(OWNER), sent.params
        assert not [x for x in tg.calls[before:] if x.method == "sendMessage"
                    and x.params["chat_id"] == str(STRANGER)]
    finally:
        await c.close()


# -- one shared agent, two members --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bot() -> Iterator[FakeTelegram]:
    server = FakeTelegram().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def team(tmp_path_factory: pytest.TempPathFactory, bot: FakeTelegram) -> AsyncIterator[GatewayProcess]:
    """Alice and Bob on record, neither with an agent of their own: the one default agent answers both."""
    state = tmp_path_factory.mktemp("team") / "gw"
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "channels": {"ownerAllowFrom": [f"telegram:{OWNER}"], "telegram": bot.channel_config()},
              "session": {"dmScope": "per-channel-peer"}}
    proc = GatewayProcess(state, config=config, env={"FAKE_CLI_LOG": str(state / "cli.log")})
    await asyncio.to_thread(proc.start)
    try:
        c = await operator(proc.url, proc.token or "")
        try:
            for pid, user in (("alice", ALICE), ("bob", BOB)):
                await c.call("people.create", {"id": pid, "name": pid.title()})
                await c.call("people.link", {"id": pid, "channel": "telegram", "senderId": str(user)})
        finally:
            await c.close()
        await bot.wait_polling()
        yield proc
    finally:
        await asyncio.to_thread(proc.stop)


async def test_usage_of_a_member_on_a_shared_agent_counts_only_their_turns(team: GatewayProcess,
                                                                          bot: FakeTelegram) -> None:
    await say(bot, ALICE, "cost:0.01 alice works", "echo")
    for n in range(3):
        await say(bot, BOB, f"cost:0.02 bob works {n}", "echo")
    mine = await say(bot, ALICE, "/usage", "Today")
    assert "Today: 1 turn(s)" in mine and "$0.01" in mine.split("\n")[0], mine
    assert "This week: 1 turn(s)" in mine, mine
    bobs = await say(bot, BOB, "/usage", "Today")
    assert "Today: 3 turn(s)" in bobs, bobs
    owners = await say(bot, OWNER, "/usage", "Today")  # the owner still sees the agent's totals
    assert "Today: 4 turn(s)" in owners, owners


async def test_a_members_memory_search_finds_none_of_another_members_memories(team: GatewayProcess,
                                                                             bot: FakeTelegram) -> None:
    stored = await say(bot, BOB, 'tool:memory_remember {"content": "bob keeps his locker code: falcon-seven", '
                                 '"tier": "core"}', "tool:")
    assert "mem_" in stored, stored
    found = await say(bot, BOB, 'tool:memory_search {"query": "locker falcon"}', "tool:")
    assert "falcon-seven" in found, found  # his own search finds it: the search works
    theirs = await say(bot, ALICE, 'tool:memory_search {"query": "locker falcon"}', "tool:")
    assert "falcon-seven" not in theirs, theirs
    memory_id = re.search(r"mem_[0-9a-f]{16}", stored)
    assert memory_id, stored
    got = await say(bot, ALICE, f'tool:memory_get {{"id": "{memory_id.group(0)}"}}', "tool:")
    assert "falcon-seven" not in got, got  # nor by the id
    c = await operator(team.url, team.token or "")
    try:  # the owner's view (``remoteclaw memory``) still has every memory of the agent
        listed = await c.call("memory.list", {"agentId": "main"})
        assert any("falcon-seven" in m["content"] for m in listed["memories"]), listed
    finally:
        await c.close()


async def test_a_main_target_an_older_gateway_left_at_a_strangers_chat_is_forgotten_at_their_next_message(
        gw: GatewayProcess, tg: FakeTelegram, paired: None) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        await set_scope(c, "main")
        await say(tg, OWNER, "owner is here", "echo: owner is here")
        with sqlite3.connect(gw.state_dir / "remoteclaw.db") as db:  # as a stranger's message left it before #51
            db.execute("UPDATE sessions SET peer_id = ? WHERE key = 'agent:main:main'", (str(STRANGER),))
        await say(tg, STRANGER, "stranger again", "echo: stranger again")
        before = len(tg.calls)
        job = await c.call("cron.add", {"name": "late brief", "schedule": {"kind": "at", "at": "2020-01-01T00:00Z"},
                                        "payload": {"kind": "agentTurn", "message": "the owner's late brief"},
                                        "delivery": {"mode": "announce", "channel": "last"}})
        runs: list[dict[str, Any]] = []
        for _ in range(300):
            runs = (await c.call("cron.runs", {"id": job["id"]}))["entries"]
            if runs and runs[0]["status"] != "running":
                break
            await asyncio.sleep(0.1)
        assert runs and runs[0]["status"] == "ok" and runs[0]["deliveryStatus"] == "transcript", runs
        assert not [x for x in tg.calls[before:] if x.method == "sendMessage"
                    and "late brief" in x.params["text"] and x.params["chat_id"] == str(STRANGER)]
        await c.call("cron.remove", {"id": job["id"]})
    finally:
        await c.close()
