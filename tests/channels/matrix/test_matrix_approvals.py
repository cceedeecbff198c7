"""Approvals and questions on Matrix: the options as the bot's reactions, a pick as someone's reaction (or a reply
with a number), the outcome as an edit.

The real matrix-nio in the real gateway against a real Synapse (the fixtures of ``test_matrix``); the run's side
is the real MCP shim started with the session's key, as the agent CLI would start it; people are second
matrix-nio clients.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from gateway.sessions.service import inbound_key
from tests.channels.matrix.test_matrix import Event, Person, body_is, bot, gw, me, nio, owner, synapse
from tests.mcp_shim import conftest as shim_fixtures
from tests.mcp_shim.conftest import ShimFactory
from tests.support.channel_admin import set_enabled, wait_state
from tests.support.gateway_proc import GatewayProcess
from tests.support.synapse import MatrixUser, Synapse
from tests.support.ws import operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

__all__ = ["bot", "gw", "me", "owner", "synapse"]  # the Matrix fixtures, used here by name

start_shim = shim_fixtures.start_shim  # the real shim, as the agent CLI starts it
NO_TOOLS: dict[str, Any] = {"tools": []}
QUESTIONS = [
    {
        "id": "db",
        "header": "Database",
        "question": "Which database?",
        "options": [{"label": "Postgres", "description": "a server"}, {"label": "SQLite"}],
    }
]


def payload(result: dict[str, Any]) -> dict[str, Any]:
    assert not result.get("isError"), result
    return dict(json.loads(result["content"][0]["text"]))


def contains(text: str) -> Any:
    return lambda ev: ev.get("type") == "m.room.message" and text in ev["content"].get("body", "")


async def react(person: Person, room: str, event_id: str, key: str) -> None:
    content = {"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": key}}
    got = await person.client.room_send(room, "m.reaction", content)
    assert isinstance(got, nio.RoomSendResponse), got


async def keys_on(person: Person, bot: MatrixUser, room: str, prompt: Event, count: int) -> dict[str, str]:
    """The bot's reactions on ``prompt`` (key -> reaction event id), once all ``count`` are there."""

    def mine(r: str, ev: Event) -> bool:
        relates = ev.get("content", {}).get("m.relates_to") or {}
        return (
            r == room
            and ev.get("sender") == bot.user_id
            and ev.get("type") == "m.reaction"
            and relates.get("event_id") == prompt["event_id"]
        )

    await person.wait_for(lambda r, ev: sum(mine(r2, e) for r2, e in person.events) >= count, "the bot's keys")
    return {e["content"]["m.relates_to"]["key"]: e["event_id"] for r, e in person.events if mine(r, e)}


async def edited_to(person: Person, bot: MatrixUser, room: str, prompt: Event, text: str) -> str:
    """The prompt's edit (``m.replace``) whose new text contains ``text``; its whole new text."""

    def edit(ev: Event) -> bool:
        relates = ev["content"].get("m.relates_to") or {}
        new = ev["content"].get("m.new_content") or {}
        return (
            relates.get("rel_type") == "m.replace"
            and relates.get("event_id") == prompt["event_id"]
            and (text in new.get("body", ""))
        )

    got = await person.from_bot(bot, room, edit, f"the prompt edited to {text!r}")
    return str(got["content"]["m.new_content"]["body"])


async def redacted(person: Person, room: str, event_ids: list[str]) -> None:
    def gone() -> set[str]:
        return {ev.get("redacts") for r, ev in person.events if r == room and ev.get("type") == "m.room.redaction"}

    await person.wait_for(lambda _r, _ev: set(event_ids) <= gone(), "the bot's keys taken off")


async def test_an_approval_in_a_room_is_decided_by_the_owners_reaction_not_a_strangers(
    gw: GatewayProcess, synapse: Synapse, me: Person, bot: MatrixUser, start_shim: ShimFactory
) -> None:
    room = await me.room_with(bot, "ops")
    stranger = Person(synapse, synapse.register("mallory" + secrets.token_hex(3)))
    try:
        await me.client.room_invite(room, stranger.user.user_id)
        joined = await stranger.client.join(room)
        assert isinstance(joined, nio.JoinResponse), joined
        # A first message, so the session exists and this room is its route (the stand-in CLI echoes it).
        await me.say(room, "rcbot: hello there", **{"m.mentions": {"user_ids": [bot.user_id]}})
        await me.from_bot(bot, room, body_is("echo: [owner] hello there"), "the first answer")
        key = inbound_key(
            "main",
            "main",
            channel="matrix",
            account_id="default",
            chat_type="group",
            chat_id=room,
            sender_id=me.user.user_id,
        )
        shim = await start_shim(gw, session_key=key, channel="matrix", to=room, plugin_manifest=NO_TOOLS)
        call = asyncio.create_task(
            shim.call("approval_prompt", {"tool_name": "Bash", "input": {"command": "make deploy"}}, timeout=90)
        )
        prompt = await me.from_bot(bot, room, contains("asks to use Bash: make deploy"), "the request")
        body = prompt["content"]["body"]
        assert (
            "React with ✅ Allow once · ♾️ Allow always · ⛔ Deny (or reply to this message with a number from 1 to 3)."
            in body
        )
        keys = await keys_on(me, bot, room, prompt, 3)
        assert set(keys) == {"✅", "♾️", "⛔"}

        await react(stranger, room, prompt["event_id"], "✅")
        await me.from_bot(bot, room, contains("Only the session's owner may decide this"), "the stranger refused")
        assert not call.done()

        await react(me, room, prompt["event_id"], "✅")
        verdict = payload(await call)
        assert verdict == {"behavior": "allow", "updatedInput": {"command": "make deploy"}}
        text = await edited_to(me, bot, room, prompt, f"✅ Allowed once by matrix:{me.user.user_id}")
        assert text.startswith("🔐 The agent asks to use Bash: make deploy") and "React with" not in text
        await redacted(me, room, list(keys.values()))  # nothing left to pick
    finally:
        await stranger.close()


async def test_a_question_in_a_dm_answered_by_a_reaction_and_an_approval_by_a_numbered_reply(
    gw: GatewayProcess, me: Person, bot: MatrixUser, start_shim: ShimFactory
) -> None:
    room = await me.dm(bot)
    await me.say(room, "hello there")
    await me.from_bot(bot, room, body_is("echo: hello there"), "the first answer")
    shim = await start_shim(gw, session_key="agent:main:main", channel="matrix", to=room, plugin_manifest=NO_TOOLS)

    call = asyncio.create_task(shim.call("ask_user", {"questions": QUESTIONS}, timeout=90))
    prompt = await me.from_bot(bot, room, contains("Which database?"), "the question")
    body = prompt["content"]["body"]
    assert "1. Postgres — a server" in body and "React with 1️⃣ Postgres · 2️⃣ SQLite" in body
    keys = await keys_on(me, bot, room, prompt, 2)
    assert set(keys) == {"1️⃣", "2️⃣"}
    await react(me, room, prompt["event_id"], "2\u20e3")  # a client that leaves out the emoji selector
    answered = payload(await call)
    assert answered["answers"] == {"db": ["SQLite"]} and answered["answeredBy"] == f"matrix:{me.user.user_id}"
    await edited_to(me, bot, room, prompt, f"✅ Answered by matrix:{me.user.user_id}: SQLite")

    call = asyncio.create_task(
        shim.call("approval_prompt", {"tool_name": "Write", "input": {"file_path": "/srv/app.conf"}}, timeout=90)
    )
    prompt = await me.from_bot(bot, room, contains("asks to use Write: /srv/app.conf"), "the request")
    await keys_on(me, bot, room, prompt, 3)
    await me.say(room, "3", **{"m.relates_to": {"m.in_reply_to": {"event_id": prompt["event_id"]}}})  # Deny
    verdict = payload(await call)
    assert verdict["behavior"] == "deny" and f"matrix:{me.user.user_id}" in verdict["message"]
    await edited_to(me, bot, room, prompt, f"⛔ Denied by matrix:{me.user.user_id}")


async def test_a_pick_made_while_the_account_was_off_decides_after_it_is_back(
    gw: GatewayProcess, me: Person, bot: MatrixUser, start_shim: ShimFactory
) -> None:
    """The open choices are kept in the state dir: the account stopped and started again (a config change)
    still knows what the reaction made in between picks."""
    room = await me.dm(bot)
    await me.say(room, "hello again")
    await me.from_bot(bot, room, body_is("echo: hello again"), "the first answer")
    shim = await start_shim(gw, session_key="agent:main:main", channel="matrix", to=room, plugin_manifest=NO_TOOLS)
    call = asyncio.create_task(
        shim.call("approval_prompt", {"tool_name": "Bash", "input": {"command": "make backup"}}, timeout=90)
    )
    prompt = await me.from_bot(bot, room, contains("asks to use Bash: make backup"), "the request")
    await keys_on(me, bot, room, prompt, 3)
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        await set_enabled(c, "matrix", False)
        await wait_state(c, "matrix", "absent", "the Matrix account stopped")
        await react(me, room, prompt["event_id"], "♾️")
        await set_enabled(c, "matrix", True)
        await wait_state(c, "matrix", "running", "the Matrix account running again")
    finally:
        await c.close()
    assert payload(await call)["behavior"] == "allow"
    await edited_to(me, bot, room, prompt, f"✅ Allowed always by matrix:{me.user.user_id}")


def test_choice_keys_and_their_memory_across_a_restart(tmp_path: Path) -> None:
    """The keys a message offers: the labels' own emoji when distinct, else numbers; the open choices are saved
    in the state dir (the newest ``CHOICES_KEPT``) and read back by the next start."""
    from channels.matrix.channel import MatrixChannel
    from channels.matrix.choices import CHOICES_KEPT, choice_keys
    from channels.matrix.config import parse_config

    assert choice_keys([("✅ Allow once", "a"), ("♾️ Allow always", "b"), ("⛔ Deny", "c")]) == ["✅", "♾️", "⛔"]
    assert choice_keys([("✅ Yes", "a"), ("✅ Sure", "b")]) == ["1️⃣", "2️⃣"]  # the same emoji twice: numbers
    assert choice_keys([("Postgres", "a"), ("SQLite", "b")]) == ["1️⃣", "2️⃣"]
    assert choice_keys([(str(n), str(n)) for n in range(11)]) is None

    async def nobody(_msg: Any) -> None:
        return None

    settings = parse_config({"homeserver": "http://127.0.0.1:9", "userId": "@b:rc.test", "accessToken": "t"})
    first = MatrixChannel("default", nobody, settings, state_dir=tmp_path)
    for n in range(CHOICES_KEPT + 5):
        first._choices.open[f"$e{n}"] = {
            "room": "!r",
            "thread": None,
            "keys": {"✅": f"/approve {n} allow-once"},
            "mine": [],
        }
    first._choices.save()
    later = MatrixChannel("default", nobody, settings, state_dir=tmp_path)._choices
    later.load()
    again = later.open
    assert len(again) == CHOICES_KEPT and "$e4" not in again and "$e5" in again
    assert again[f"$e{CHOICES_KEPT + 4}"]["keys"] == {"✅": f"/approve {CHOICES_KEPT + 4} allow-once"}
    assert again == first._choices.open
    assert (tmp_path / "choices.json").stat().st_mode & 0o777 == 0o600
