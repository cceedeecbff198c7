"""Chat commands through the whole gateway, typed into the loopback Telegram: /stop, /new, /status, /help.

The stand-in CLI records every run (prompt, argv, pid), so the tests can see that a command never
reached the agent, that /stop killed the running CLI and that /new dropped the resume id.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from gateway.dispatch.commands import commands
from tests.support.fake_telegram import FakeTelegram, cli_runs, module_fake, module_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.procs import alive, host_pid
from tests.support.waiting import until
from tests.support.ws import operator

OWNER = 111
KEY = "agent:main:main"


fake = module_fake()


gw = module_gateway(ownerAllowFrom=[OWNER])


async def say(fake: FakeTelegram, text: str, answer: Any, timeout: float = 15.0) -> str:
    """Send ``text`` as the owner and wait for the bot's message that satisfies ``answer(text)``."""
    before = len(fake.calls)
    fake.user_message(chat_id=OWNER, user_id=OWNER, text=text)
    def fresh_answer(c: Any) -> bool:  # a reply to this message: made after it was sent (by identity)
        return any(c is x for x in fake.calls[before:]) and answer(c.params["text"])

    call = await fake.wait_call("sendMessage", fresh_answer, timeout=timeout)
    return call.params["text"]


parse = commands.parse


def test_parse() -> None:
    assert parse("/stop")[0].name == "stop"  # type: ignore[index]
    assert parse("/STOP@my_bot")[0].name == "stop"  # type: ignore[index]
    assert parse("/reset") is not None and parse("/reset")[0].name == "new"  # type: ignore[index]
    assert parse("/new  write a poem\nabout cats") == (parse("/new")[0], "write a poem\nabout cats")  # type: ignore[index]
    assert parse("stop") is None and parse("/stopp") is None and parse("/ stop") is None
    assert parse("/etc/passwd is a file") is None  # a path, not a command


async def test_the_command_menu_is_registered(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    call = await fake.wait_call("setMyCommands")
    commands = call.params["commands"]
    commands = json.loads(commands) if isinstance(commands, str) else commands
    assert [c["command"] for c in commands] == ["stop", "new", "status", "queue", "handoff", "usage", "project",
                                                "diff", "approve", "record", "help"]


async def test_help_and_status_are_answered_by_the_gateway(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    runs_before = len(cli_runs(gw.state_dir))
    text = await say(fake, "/help", lambda t: "/stop" in t)
    assert "/new" in text and "/status" in text
    await say(fake, "/start", lambda t: "/stop" in t)  # Telegram's first message gets the same list
    status = await say(fake, "/status", lambda t: t.startswith("Agent:"))
    assert "Now: idle" in status and KEY in status
    assert len(cli_runs(gw.state_dir)) == runs_before  # no command reached the agent


async def test_stop_kills_the_running_turn_and_nothing_is_delivered(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    fake.user_message(chat_id=OWNER, user_id=OWNER, text="sleep:30 a long job")
    await fake.wait_call("sendChatAction")
    for _ in range(200):
        mine = [r for r in cli_runs(gw.state_dir) if "a long job" in r["prompt"]]
        if mine:
            break
        await asyncio.sleep(0.05)
    pid = host_pid(mine[-1]["pid"], "REMOTECLAW_RUN_ID=" + mine[-1]["env"]["REMOTECLAW_RUN_ID"])
    busy = await say(fake, "/status", lambda t: t.startswith("Agent:"))
    assert "Now: working" in busy
    assert await say(fake, "/stop", lambda t: "Stopped" in t) == "⏹ Stopped."
    c = await operator(gw.url, gw.token or "")
    try:
        for _ in range(100):
            if not alive(pid):
                break
            await asyncio.sleep(0.05)
        assert not alive(pid)
        assert await say(fake, "/stop", lambda t: "running" in t) == "Nothing is running."
        sent = [x.params["text"] for x in fake.calls if x.method == "sendMessage"]
        assert not any("a long job" in t or "didn't work" in t for t in sent)  # aborted: no reply, no error line
        async def idle() -> bool:  # the lane is free once the stopped turn has given back what it took
            return (await c.call("status", {"sessionKey": KEY}))["busy"] is False

        await until(idle, 10, "the session's lane to be free after /stop")
    finally:
        await c.close()


async def test_new_starts_over_and_can_carry_the_first_message(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    await say(fake, "remember me", lambda t: t == "echo: remember me")
    c = await operator(gw.url, gw.token or "")
    try:
        assert (await c.call("status", {"sessionKey": KEY}))["cliSessionIds"]
        await say(fake, "/new", lambda t: "New conversation" in t)
        st = await c.call("status", {"sessionKey": KEY})
        assert st["cliSessionIds"] == {}
        assert (await c.call("chat.history", {"sessionKey": KEY}))["messages"] == []
        # "/new <text>": reset, then the text is the first message of the new conversation (no --resume).
        await say(fake, "/reset fresh start", lambda t: t == "echo: fresh start")
        first = [r for r in cli_runs(gw.state_dir) if r["prompt"].strip() == "fresh start"][-1]
        assert "--resume" not in first["argv"]
    finally:
        await c.close()


async def test_commands_can_be_turned_off(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    c = await operator(gw.url, gw.token or "")
    try:
        h = (await c.call("config.get"))["hash"]
        await c.call("config.patch", {"patch": {"messages": {"commands": False}}, "baseHash": h})
        assert await say(fake, "/status", lambda t: t.startswith("echo:")) == "echo: /status"
        h = (await c.call("config.get"))["hash"]
        await c.call("config.patch", {"patch": {"messages": {"commands": True}}, "baseHash": h})
    finally:
        await c.close()



async def test_new_during_a_turn_leaves_nothing_of_it_behind(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    before = len(fake.calls)
    fake.user_message(chat_id=OWNER, user_id=OWNER, text="tools:10 a long tool-heavy job")
    c = await operator(gw.url, gw.token or "")
    try:
        for _ in range(200):  # the turn is under way, one tool call has returned (the note shows step 2)
            if any(x.method == "editMessageText" for x in fake.calls[before:]):
                break
            await asyncio.sleep(0.05)
        assert (await c.call("status", {"sessionKey": KEY}))["busy"]
        await say(fake, "/new", lambda t: "New conversation" in t)
        # The stopped turn's tool rows and CLI session id are written before the clearing, not after it.
        assert (await c.call("chat.history", {"sessionKey": KEY}))["messages"] == []
        assert (await c.call("status", {"sessionKey": KEY}))["cliSessionIds"] == {}
    finally:
        await c.close()


async def test_project_without_projects_says_how_to_configure_them(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    runs = len(cli_runs(gw.state_dir))
    answer = await say(fake, "/project", lambda t: "has no projects" in t)
    assert "agents.list[].projects" in answer and "docs/projects.md" in answer
    assert "No turn has changed files" in await say(fake, "/diff", lambda t: "changed files" in t)
    assert len(cli_runs(gw.state_dir)) == runs  # neither reached the agent
