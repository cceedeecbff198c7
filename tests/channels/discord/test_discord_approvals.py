"""Approvals and questions on Discord: message components, a press as an interaction, the outcome as an edit.

The gateway's bot (discord.py) talks to the loopback Discord; the run's side is the real MCP shim started with
the session's key, as the agent CLI would start it. A press is an ``INTERACTION_CREATE`` on the fake's gateway
socket; the bot must acknowledge it on the interaction callback endpoint and treat it as the presser typing
the button's ``custom_id``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.sessions.service import inbound_key
from tests.mcp_shim import conftest as shim_fixtures
from tests.mcp_shim.conftest import ShimFactory
from tests.support.fake_discord import FakeDiscord, discord_gateway, module_fake, snowflake
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.waiting import until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

OWNER = "7770001"
STRANGER = "7770002"
NO_TOOLS = {"tools": []}

start_shim = shim_fixtures.start_shim  # the real shim, as the agent CLI starts it


fake = module_fake()


@pytest.fixture(scope="module")
async def gw(fake: FakeDiscord, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[GatewayProcess]:
    config = {
        "agents": {"list": [{"id": "main", "command": [sys.executable, str(ROOT / "tests/support/fake_cli.py")]}]},
        "channels": {"discord": fake.config() | {"dmPolicy": "open", "groupPolicy": "open", "requireMention": False,
                                                 "ownerAllowFrom": [OWNER]}},
    }
    state = tmp_path_factory.mktemp("discord-approvals")
    async with discord_gateway(fake, state, config, env={"FAKE_CLI_LOG": str(state / "cli.log")}) as proc:
        yield proc


async def route(fake: FakeDiscord, channel_id: str, user_id: str, *, guild: bool) -> None:
    """A first message, so the session exists and this chat is its route (the stand-in CLI echoes it)."""
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="hello there", author_id=user_id,
                                                               channel_id=channel_id, guild=guild))
    await fake.wait_posted(channel_id, "hello there", timeout=20)


async def posted(fake: FakeDiscord, channel_id: str, needle: str) -> dict[str, Any]:
    """The bot's message in ``channel_id`` containing ``needle`` (as the fake keeps it, components included)."""
    await fake.wait_posted(channel_id, needle, timeout=20)
    return next(m for m in fake.messages.values()
                if m["channel_id"] == channel_id and m["author"]["id"] == fake.bot["id"] and needle in m["content"])


def payload(result: dict[str, Any]) -> dict[str, Any]:
    assert not result.get("isError"), result
    return json.loads(result["content"][0]["text"])


async def test_approval_buttons_in_a_guild_channel_only_the_owner_decides(
    gw: GatewayProcess, fake: FakeDiscord, start_shim: ShimFactory
) -> None:
    chan = fake.text_channel_id
    await route(fake, chan, OWNER, guild=True)
    key = inbound_key("main", "main", channel="discord", account_id="default", chat_type="group", chat_id=chan,
                      sender_id=OWNER, thread_id=None)
    shim = await start_shim(gw, session_key=key, channel="discord", to=chan, plugin_manifest=NO_TOOLS)
    call = asyncio.create_task(
        shim.call("approval_prompt", {"tool_name": "Bash", "input": {"command": "make deploy"}}, timeout=60))
    prompt = await posted(fake, chan, "asks to use Bash: make deploy")
    buttons = fake.buttons(prompt["id"])
    assert [label for label, _ in buttons] == ["✅ Allow once", "♾️ Allow always", "⛔ Deny"]
    assert all(cid.startswith("/approve ") and len(cid) <= 100 for _, cid in buttons)
    styles = [b["style"] for row in prompt["components"] for b in row["components"]]
    assert styles == [3, 3, 4]  # success, success, danger

    pressed = await fake.press(prompt["id"], buttons[0][1], user_id=STRANGER, user_name="mallory")
    assert (await fake.wait_callback(pressed))["type"] == 6  # acknowledged: Discord shows no error
    await fake.wait_posted(chan, "Only the session's owner may decide this", timeout=20)
    assert not call.done()
    assert fake.buttons(prompt["id"]) == buttons  # still pending, still pressable

    pressed = await fake.press(prompt["id"], buttons[0][1], user_id=OWNER, user_name="olivia")
    verdict = payload(await call)
    assert verdict == {"behavior": "allow", "updatedInput": {"command": "make deploy"}}
    await fake.wait_callback(pressed)

    def settled() -> bool:
        return "✅ Allowed once by discord:" + OWNER in fake.messages[prompt["id"]]["content"]

    await until(settled, 10, "the request's message edited to its outcome")
    message = fake.messages[prompt["id"]]
    assert message["content"].startswith("🔐 The agent asks to use Bash: make deploy")
    assert not message.get("components")  # nothing left to press

    # A late press is refused, saying who decided first.
    await fake.press(prompt["id"], buttons[2][1], user_id=OWNER, user_name="olivia")
    await fake.wait_posted(chan, f"already decided (allow-once by discord:{OWNER})", timeout=20)


async def test_a_question_in_a_dm_answered_by_text_then_by_a_press(
    gw: GatewayProcess, fake: FakeDiscord, start_shim: ShimFactory
) -> None:
    dm = snowflake()
    await route(fake, dm, OWNER, guild=False)
    shim = await start_shim(gw, session_key="agent:main:main", channel="discord", to=dm, plugin_manifest=NO_TOOLS)
    questions = [{"id": "db", "header": "Database", "question": "Which database?",
                  "options": [{"label": "Postgres", "description": "a server"}, {"label": "SQLite"}]}]

    call = asyncio.create_task(shim.call("ask_user", {"questions": questions}, timeout=60))
    prompt = await posted(fake, dm, "Which database?")
    assert [label for label, _ in fake.buttons(prompt["id"])] == ["Postgres", "SQLite"]
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="DuckDB, it is embedded", author_id=OWNER,
                                                               channel_id=dm))
    answered = payload(await call)
    assert answered["answers"] == {"db": ["DuckDB, it is embedded"]}
    assert answered["answeredBy"] == f"discord:{OWNER}"

    call = asyncio.create_task(shim.call("ask_user", {"questions": questions}, timeout=60))
    await until(lambda: sum("Which database?" in m["content"] for m in fake.messages.values()) >= 2, 20,
                "the second question")
    second = max((m for m in fake.messages.values() if "Which database?" in m["content"] and m.get("components")),
                 key=lambda m: int(m["id"]))
    await fake.press(second["id"], fake.buttons(second["id"])[1][1], user_id=OWNER, guild=False)
    assert payload(await call)["answers"] == {"db": ["SQLite"]}
    await until(lambda: "✅ Answered by discord:" + OWNER + ": SQLite" in fake.messages[second["id"]]["content"], 10,
                "the question's message edited to its answer")


async def test_a_request_in_a_thread_is_decided_there(
    gw: GatewayProcess, fake: FakeDiscord, start_shim: ShimFactory
) -> None:
    thread = fake.thread_id
    await route(fake, thread, OWNER, guild=True)
    key = inbound_key("main", "main", channel="discord", account_id="default", chat_type="group",
                      chat_id=fake.text_channel_id, sender_id=OWNER, thread_id=thread)
    shim = await start_shim(gw, session_key=key, channel="discord", to=fake.text_channel_id, plugin_manifest=NO_TOOLS)
    call = asyncio.create_task(
        shim.call("approval_prompt", {"tool_name": "Write", "input": {"file_path": "/srv/app.conf"}}, timeout=60))
    prompt = await posted(fake, thread, "asks to use Write: /srv/app.conf")  # in the thread, not its parent
    await fake.press(prompt["id"], fake.buttons(prompt["id"])[2][1], user_id=OWNER)  # Deny
    verdict = payload(await call)
    assert verdict["behavior"] == "deny" and f"discord:{OWNER}" in verdict["message"]
    await until(lambda: "⛔ Denied by discord:" + OWNER in fake.messages[prompt["id"]]["content"], 10,
                "the thread's request edited to its outcome")
