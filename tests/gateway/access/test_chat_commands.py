"""Chat commands are declared with what they act on (``Command.access``) and decided by the access model: the
chat's own session for everyone, the owner's desktop node for the owner alone."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator

import pytest

from gateway.access import Obj, Principal, may
from gateway.agents.commands import COMMANDS, help_text
from tests.support.fake_telegram import FakeTelegram
from tests.support.gateway_proc import ROOT, GatewayProcess

OWNER_TG, STRANGER_TG = 411, 412
KEY = "agent:main:telegram:direct:412"


def test_every_command_is_declared_once_and_in_the_help() -> None:
    words = [w for c in COMMANDS for w in (c.name, *c.aliases)]
    assert len(words) == len(set(words)), words
    shown = help_text()
    for cmd in COMMANDS:
        assert cmd.access.kind and f"/{cmd.name} — " in shown, cmd


def test_a_stranger_may_use_the_commands_of_their_own_chat_but_not_the_owners_node() -> None:
    stranger = Principal.for_chat(KEY, "telegram", "412", person_id=None, owner=False)
    owner = Principal.for_chat("agent:main:main", "telegram", "411", person_id=None, owner=True)
    allowed = {c.name for c in COMMANDS
               if may(stranger, c.access.action, Obj(c.access.kind, key=KEY, channel="telegram", peer_id="412"))}
    assert allowed == {c.name for c in COMMANDS} - {"record"}, allowed
    assert all(may(owner, c.access.action, Obj(c.access.kind, key="agent:main:main")) for c in COMMANDS)


@pytest.fixture(scope="module")
def tg() -> Iterator[FakeTelegram]:
    server = FakeTelegram().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def gw(tg: FakeTelegram, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[GatewayProcess]:
    state = tmp_path_factory.mktemp("commands") / "gw"
    fake_cli = str(ROOT / "tests/support/fake_cli.py")
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, fake_cli]}]},
              "channels": {"ownerAllowFrom": [f"telegram:{OWNER_TG}"],
                           "telegram": tg.channel_config(dmPolicy="open")}}
    proc = GatewayProcess(state, config=config)
    await asyncio.to_thread(proc.start)
    try:
        await tg.wait_polling()
        yield proc
    finally:
        await asyncio.to_thread(proc.stop)


@pytest.mark.slow
async def test_a_strangers_record_is_refused_by_the_model_and_their_status_answered(
        gw: GatewayProcess, tg: FakeTelegram) -> None:
    tg.user_message(chat_id=STRANGER_TG, user_id=STRANGER_TG, text="/record start")
    await tg.wait_call("sendMessage", lambda c: c.params["chat_id"] == str(STRANGER_TG)
                       and "/record is the owner's only" in c.params["text"], timeout=30)
    tg.user_message(chat_id=STRANGER_TG, user_id=STRANGER_TG, text="/status")
    await tg.wait_call("sendMessage", lambda c: c.params["chat_id"] == str(STRANGER_TG)
                       and "owner's only" not in c.params["text"] and c.params["text"] != "", timeout=30)
