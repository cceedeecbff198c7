"""Approval requests routed to other chats (``approvals.exec``, OpenClaw's shape), through the loopback Telegram.

The run's side is the real MCP shim started with the session's key; the gateway's Telegram bot talks to the
fake Bot API. With ``mode: targets`` a request of a session the filters select goes to the configured ops chat
only, where the owner decides with its buttons; a request the filters leave out stays in its session's chat.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.config import ConfigError, validate
from gateway.sessions.service import inbound_key
from tests.gateway.approvals.test_approvals_chat import edited, route, said, sent
from tests.mcp_shim import conftest as shim_fixtures
from tests.mcp_shim.conftest import ShimFactory
from tests.support.fake_telegram import FakeTelegram, module_fake, telegram_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = pytest.mark.timeout(120)

OWNER = 111
STRANGER = 222
OPS = -1009999  # the chat approvals are routed to
GROUP = -1004321  # a group whose session the filter leaves out
DM_KEY = "agent:main:main"
NO_TOOLS = {"tools": []}

fake = module_fake()
start_shim = shim_fixtures.start_shim

FORWARDING = {
    "enabled": True,
    "mode": "targets",
    "agentFilter": ["main"],
    "sessionFilter": ["^agent:main:main$"],  # a regular expression: the main DM session only
    # The first target cannot be reached (no Discord on this gateway): the next one still gets the request.
    "targets": [{"channel": "discord", "to": "channel:123456789"}, {"channel": "telegram", "to": str(OPS)}],
}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram) -> Iterator[GatewayProcess]:
    with telegram_gateway(tmp_path_factory.mktemp("routing") / "gw", fake, config={"approvals": {"exec": FORWARDING}},
                          ownerAllowFrom=[OWNER], groupPolicy="open", requireMention=False) as proc:
        yield proc


def told(fake: FakeTelegram, chat_id: int, needle: str) -> list[Any]:
    return [c for c in fake.calls if c.method == "sendMessage" and str(c.params.get("chat_id")) == str(chat_id)
            and needle in str(c.params.get("text"))]


async def test_a_request_goes_to_the_target_only_and_the_owner_decides_there(
    gw: GatewayProcess, fake: FakeTelegram, start_shim: ShimFactory
) -> None:
    await fake.wait_polling()
    await route(fake, OWNER, OWNER)
    shim = await start_shim(gw, session_key=DM_KEY, channel="telegram", to=str(OWNER), plugin_manifest=NO_TOOLS)
    call = asyncio.create_task(
        shim.call("approval_prompt", {"tool_name": "Bash", "input": {"command": "make deploy"}}, timeout=60))
    prompt = await sent(fake, OPS, "asks to use Bash: make deploy")
    assert fake.buttons(prompt)[0][0] == "✅ Allow once"
    fake.press(message=prompt.result, user_id=STRANGER, data=fake.buttons(prompt)[0][1])
    await said(fake, OPS, "Only the session's owner may decide this")  # the ops chat is not the session's
    assert not call.done()
    fake.press(message=prompt.result, user_id=OWNER, data=fake.buttons(prompt)[2][1])  # Deny
    verdict = json.loads((await call)["content"][0]["text"])
    assert verdict["behavior"] == "deny" and f"telegram:{OWNER}" in verdict["message"]
    await edited(fake, OPS, f"⛔ Denied by telegram:{OWNER}: Bash: make deploy")
    assert not told(fake, OWNER, "asks to use")  # mode targets: the session's own chat is not asked

    # Questions are not approvals.exec's: they stay in the session's chat.
    questions = [{"id": "q", "header": "Go", "question": "Ship it?", "options": [{"label": "yes"}, {"label": "no"}]}]
    ask = asyncio.create_task(shim.call("ask_user", {"questions": questions}, timeout=60))
    await sent(fake, OWNER, "Ship it?")
    fake.user_message(chat_id=OWNER, user_id=OWNER, text="1")
    assert json.loads((await ask)["content"][0]["text"])["answers"] == {"q": ["yes"]}
    assert not told(fake, OPS, "Ship it?")


async def test_a_session_the_filter_leaves_out_is_asked_in_its_own_chat(
    gw: GatewayProcess, fake: FakeTelegram, start_shim: ShimFactory
) -> None:
    await fake.wait_polling()
    await route(fake, GROUP, OWNER, chat_type="supergroup")
    key = inbound_key("main", "main", channel="telegram", account_id="default", chat_type="group",
                      chat_id=str(GROUP), sender_id=str(OWNER), thread_id=None)
    shim = await start_shim(gw, session_key=key, channel="telegram", to=str(GROUP), plugin_manifest=NO_TOOLS)
    call = asyncio.create_task(
        shim.call("approval_prompt", {"tool_name": "Write", "input": {"file_path": "/tmp/notes"}}, timeout=60))
    prompt = await sent(fake, GROUP, "asks to use Write: /tmp/notes")
    fake.press(message=prompt.result, user_id=OWNER, data=fake.buttons(prompt)[0][1])
    assert json.loads((await call)["content"][0]["text"])["behavior"] == "allow"
    assert not told(fake, OPS, "Write: /tmp/notes")


@pytest.mark.parametrize(("data", "path"), [
    ({"enabled": True, "mode": "targets"}, "/approvals/exec/targets"),
    ({"enabled": True, "mode": "both", "targets": []}, "/approvals/exec/targets"),
    ({"mode": "everywhere"}, "/approvals/exec/mode"),
    ({"targets": [{"channel": "telegram"}]}, "/approvals/exec/targets/0/to"),
    ({"targets": [{"channel": "telegram", "to": "1", "chat": "x"}]}, "/approvals/exec/targets/0/chat"),
    ({"agentFilter": "main"}, "/approvals/exec/agentFilter"),
])
def test_bad_routing_config_names_the_field(data: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate({"approvals": {"exec": data}})
    assert any(e["path"] == path for e in info.value.details["errors"]), info.value.details


async def test_mode_both_told_in_both_chats_and_a_bad_change_is_refused(
    gw: GatewayProcess, fake: FakeTelegram, start_shim: ShimFactory
) -> None:
    """Last in the module: it changes the live config (read at each request)."""
    await fake.wait_polling()
    client = await operator(gw.url, gw.token or "")
    try:
        h = (await client.call("config.get"))["hash"]
        await client.call("config.patch", {"patch": {"approvals": {"exec": {"mode": "both"}}}, "baseHash": h})
        h = (await client.call("config.get"))["hash"]
        frame = await client.req("config.patch", {"patch": {"approvals": {"exec": {"targets": None}}}, "baseHash": h})
        assert not frame["ok"] and "approvals/exec/targets" in frame["error"]["message"], frame
    finally:
        await client.close()
    shim = await start_shim(gw, session_key=DM_KEY, channel="telegram", to=str(OWNER), plugin_manifest=NO_TOOLS)
    call = asyncio.create_task(
        shim.call("approval_prompt", {"tool_name": "Bash", "input": {"command": "make both"}}, timeout=60))
    in_dm = await sent(fake, OWNER, "asks to use Bash: make both")
    await sent(fake, OPS, "asks to use Bash: make both")
    fake.press(message=in_dm.result, user_id=OWNER, data=fake.buttons(in_dm)[0][1])  # decided in the DM
    assert json.loads((await call)["content"][0]["text"])["behavior"] == "allow"
    await edited(fake, OWNER, f"✅ Allowed once by telegram:{OWNER}: Bash: make both")
    await edited(fake, OPS, f"✅ Allowed once by telegram:{OWNER}: Bash: make both")  # the target too
