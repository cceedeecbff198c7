"""Approvals and questions decided by typing in the chat, through the loopback Telegram and the real shim.

The gateway's Telegram bot (python-telegram-bot) talks to the fake Bot API; the run's side is the real MCP shim
started with the session's key, as the agent CLI would start it. The request is told in the chat, the person
answers there (a number, a free answer, ``/approve``), and the answer reaches the shim's caller.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_shim import conftest as shim_fixtures
from tests.mcp_shim.conftest import ShimFactory
from tests.support.fake_telegram import Call, FakeTelegram, module_fake, module_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(120)

OWNER = 111
STRANGER = 222
GROUP = -1001234
DM_KEY = "agent:main:main"

fake = module_fake()
start_shim = shim_fixtures.start_shim  # the real shim, as the agent CLI starts it
gw = module_gateway(ownerAllowFrom=[OWNER], groupPolicy="open", requireMention=False)


async def sent(fake: FakeTelegram, chat_id: int, contains: str, method: str = "sendMessage") -> Call:
    """The first matching call not yet consumed by this helper (earlier prompts look alike)."""
    seen = fake.__dict__.setdefault("consumed", [])

    def match(c: Call) -> bool:
        fresh = not any(c is x for x in seen)
        return fresh and str(c.params.get("chat_id")) == str(chat_id) and contains in c.params["text"]

    call = await fake.wait_call(method, match, timeout=20)
    seen.append(call)
    return call


async def said(fake: FakeTelegram, chat_id: int, contains: str) -> str:
    return str((await sent(fake, chat_id, contains)).params["text"])


async def edited(fake: FakeTelegram, chat_id: int, contains: str) -> str:
    """The request's message, edited to its outcome (its buttons gone)."""
    call = await sent(fake, chat_id, contains, "editMessageText")
    assert not call.params.get("reply_markup")
    return str(call.params["text"])


async def route(fake: FakeTelegram, chat_id: int, user_id: int, chat_type: str = "private") -> None:
    """A first message, so the session exists and its chat is the session's route."""
    fake.user_message(chat_id=chat_id, user_id=user_id, text="hello there", chat_type=chat_type)
    await said(fake, chat_id, "hello there")  # the stand-in CLI echoes it


QUESTIONS = [
    {
        "id": "db",
        "header": "Database",
        "question": "Which database?",
        "options": [{"label": "Postgres", "description": "a server"}, {"label": "SQLite"}],
    }
]


async def ask(shim: Any, **args: Any) -> asyncio.Task[dict[str, Any]]:
    return asyncio.create_task(shim.call("ask_user", {"questions": QUESTIONS, **args}, timeout=60))


def payload(result: dict[str, Any]) -> dict[str, Any]:
    assert not result.get("isError"), result
    return json.loads(result["content"][0]["text"])


async def test_a_question_is_answered_by_a_number_then_by_a_free_reply(
    gw: GatewayProcess,
    fake: FakeTelegram,
    start_shim: ShimFactory,
    tmp_path: Path,
) -> None:
    await fake.wait_polling()
    await route(fake, OWNER, OWNER)
    shim = await start_shim(gw, session_key=DM_KEY, channel="telegram", to=str(OWNER), plugin_manifest={"tools": []})
    call = await ask(shim)
    prompt = await sent(fake, OWNER, "Which database?")
    assert "1. Postgres — a server" in prompt.params["text"] and "2. SQLite" in prompt.params["text"]
    assert [label for label, _data in fake.buttons(prompt)] == ["Postgres", "SQLite"]
    fake.user_message(chat_id=OWNER, user_id=OWNER, text="2")
    answered = payload(await call)
    assert answered["answers"] == {"db": ["SQLite"]} and answered["answeredBy"] == f"telegram:{OWNER}"
    await edited(fake, OWNER, "✅ Answered by telegram:111: SQLite")
    call = await ask(shim)
    await said(fake, OWNER, "Which database?")
    fake.user_message(chat_id=OWNER, user_id=OWNER, text="DuckDB, it is embedded")
    assert payload(await call)["answers"] == {"db": ["DuckDB, it is embedded"]}
    # A button press answers too.
    call = await ask(shim)
    prompt = await sent(fake, OWNER, "Which database?")
    fake.press(message=prompt.result, user_id=OWNER, data=fake.buttons(prompt)[0][1])
    assert payload(await call)["answers"] == {"db": ["Postgres"]}
    await fake.wait_call("answerCallbackQuery")


async def test_approval_buttons_allow_and_the_message_shows_who(
    gw: GatewayProcess, fake: FakeTelegram, start_shim: ShimFactory
) -> None:
    await fake.wait_polling()
    await route(fake, OWNER, OWNER)
    shim = await start_shim(gw, session_key=DM_KEY, channel="telegram", to=str(OWNER), plugin_manifest={"tools": []})
    args = {"tool_name": "Bash", "input": {"command": "npm publish"}}
    call = asyncio.create_task(shim.call("approval_prompt", args, timeout=60))
    prompt = await sent(fake, OWNER, "asks to use Bash: npm publish")
    labels = [label for label, _data in fake.buttons(prompt)]
    assert labels == ["✅ Allow once", "♾️ Allow always", "⛔ Deny"]
    fake.press(message=prompt.result, user_id=OWNER, data=fake.buttons(prompt)[2][1])  # Deny
    verdict = json.loads((await call)["content"][0]["text"])
    assert verdict["behavior"] == "deny" and f"telegram:{OWNER}" in verdict["message"]
    text = await edited(fake, OWNER, "⛔ Denied by telegram:111: Bash: npm publish")
    assert text.startswith("🔐 The agent asks to use Bash: npm publish")


async def test_approve_in_a_group_only_from_the_owner(
    gw: GatewayProcess, fake: FakeTelegram, start_shim: ShimFactory
) -> None:
    from gateway.sessions.service import inbound_key

    await fake.wait_polling()
    await route(fake, GROUP, STRANGER, chat_type="supergroup")
    key = inbound_key(
        "main",
        "main",
        channel="telegram",
        account_id="default",
        chat_type="group",
        chat_id=str(GROUP),
        sender_id=str(STRANGER),
        thread_id=None,
    )
    shim = await start_shim(
        gw, session_key=key, channel="telegram", to=str(GROUP), owner=False, plugin_manifest={"tools": []}
    )
    call = asyncio.create_task(
        shim.call("approval_prompt", {"tool_name": "Bash", "input": {"command": "make"}}, timeout=60)
    )
    prompt = await sent(fake, GROUP, "asks to use Bash: make")
    approval_id = re.search(r"/approve (\S+) allow-once", prompt.params["text"]).group(1)  # type: ignore[union-attr]
    fake.press(message=prompt.result, user_id=STRANGER, data=fake.buttons(prompt)[0][1])  # a stranger's press
    await said(fake, GROUP, "Only the session's owner may decide this")
    assert not call.done()
    fake.user_message(chat_id=GROUP, user_id=OWNER, text=f"/approve {approval_id} allow-once", chat_type="supergroup")
    verdict = json.loads((await call)["content"][0]["text"])
    assert verdict == {"behavior": "allow", "updatedInput": {"command": "make"}}
    await edited(fake, GROUP, f"✅ Allowed once by telegram:{OWNER}: Bash: make")
    fake.user_message(chat_id=GROUP, user_id=OWNER, text=f"/approve {approval_id} deny", chat_type="supergroup")
    await said(fake, GROUP, "was already decided (allow-once by telegram:111)")


async def test_a_decision_after_the_run_ended_is_refused(
    gw: GatewayProcess, fake: FakeTelegram, start_shim: ShimFactory
) -> None:
    await fake.wait_polling()
    fake.user_message(chat_id=OWNER, user_id=OWNER, text="sleep:6 a short job")  # the run asking (time for its note)
    await fake.wait_call("sendChatAction")
    shim = await start_shim(gw, session_key=DM_KEY, channel="telegram", to=str(OWNER), plugin_manifest={"tools": []})
    call = asyncio.create_task(
        shim.call("approval_prompt", {"tool_name": "Write", "input": {"file_path": "/tmp/x"}}, timeout=60)
    )
    prompt = await sent(fake, OWNER, "asks to use Write: /tmp/x")

    def note_waits() -> bool:  # the run's progress note (sent, or edited) says it waits for the person
        return any(
            c.method in ("sendMessage", "editMessageText") and "⏸ Waiting for you" in str(c.params.get("text"))
            for c in fake.calls
        )

    await until(note_waits, 10, "the progress note saying it waits")
    verdict = json.loads((await call)["content"][0]["text"])  # the run ends: the request is withdrawn
    assert verdict["behavior"] == "deny" and "run-aborted" in verdict["message"]
    await edited(fake, OWNER, "Withdrawn (the run ended)")
    fake.press(message=prompt.result, user_id=OWNER, data=fake.buttons(prompt)[0][1])
    await said(fake, OWNER, "has ended")
