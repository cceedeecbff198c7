"""Chat commands are declared once, with ``@command`` beside what each serves (``gateway.dispatch.commands``), with
what they act on (``CommandSpec.access``), and decided by the access model: the chat's own session for everyone,
the owner's desktop node for the owner alone. ``/help``, the Telegram menu and docs/security.md's access table are
generated from the declarations."""

from __future__ import annotations

import ast
import asyncio
import sys
from collections.abc import AsyncIterator, Iterator

import pytest

from gateway.access import Obj, Principal, may
from gateway.access.table import render
from gateway.dispatch.commands import CommandRegistry, Speaker, commands
from tests.support import ROOT as REPO
from tests.support.fake_telegram import FakeTelegram
from tests.support.gateway_proc import ROOT, GatewayProcess

OWNER_TG, STRANGER_TG = 411, 412
KEY = "agent:main:telegram:direct:412"
STRANGER = Speaker("telegram", "412", "dm", person_id=None, owner=False, key=KEY)
OWNER = Speaker("telegram", "411", "dm", person_id=None, owner=True, key="agent:main:main")


def _declared_in_source() -> list[str]:
    """Every ``@command("<name>", ...)`` in the gateway's source, read from the files (not from the registry, which
    refuses a second declaration and so could not show one)."""
    names: list[str] = []
    for path in sorted((REPO / "gateway").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for deco in node.decorator_list:
                    if (isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "command" and deco.args
                            and isinstance(deco.args[0], ast.Constant) and isinstance(deco.args[0].value, str)):
                        names.append(deco.args[0].value)
    return names


def test_every_command_is_declared_once_and_in_the_generated_help() -> None:
    declared = _declared_in_source()
    specs = commands.specs()
    assert sorted(declared) == sorted(s.name for s in specs), declared  # each declaration, once, registered
    words = [w for s in specs for w in (s.name, *s.aliases)]
    assert len(words) == len(set(words)), words
    shown = commands.help_text(OWNER)
    for spec in specs:  # the owner, in a direct chat, may use every one
        assert f"/{spec.name} — {spec.help}" in shown, spec.name


def test_a_second_declaration_of_a_word_is_refused() -> None:
    again = CommandRegistry()
    again.command("ping", access=commands.specs()[0].access, help="once")(commands.specs()[0].handler)
    with pytest.raises(ValueError, match="/ping"):
        again.command("pong", access=commands.specs()[0].access, help="twice", aliases=("ping",))(
            commands.specs()[0].handler)


def test_each_commands_access_is_in_the_generated_access_table() -> None:
    rows = {tuple(c.strip() for c in line.strip("|").split("|")[:2]): line for line in render().splitlines()}
    for spec in commands.specs():
        row = rows[(spec.access.kind, spec.access.action)]
        assert f"`/{spec.name}`" in row.split("|")[4], (spec.name, row)


def test_the_help_lists_what_the_asker_may_use_there() -> None:
    stranger = commands.help_text(STRANGER)
    assert "/record" not in stranger and "/login" not in stranger  # the owner's node; a sign-in is a person's
    assert "/status" in stranger and "/whoami" in stranger and "/link" in stranger
    group = commands.help_text(Speaker("telegram", "-5", "group", person_id="bob", owner=False,
                                       key="agent:main:telegram:group:-5"))
    assert "/whoami" not in group and "/status" in group  # codes and links are for direct chats only
    person = commands.help_text(Speaker("telegram", "7", "dm", person_id="bob", owner=False,
                                        key="agent:main:person:bob"))
    assert "/login" in person and "/record" not in person


def test_a_stranger_may_use_the_commands_of_their_own_chat_but_not_the_owners_node() -> None:
    stranger = Principal.for_chat(KEY, "telegram", "412", person_id=None, owner=False)
    owner = Principal.for_chat("agent:main:main", "telegram", "411", person_id=None, owner=True)
    session = commands.specs("session")
    allowed = {c.name for c in session
               if may(stranger, c.access.action, Obj(c.access.kind, key=KEY, channel="telegram", peer_id="412"))}
    assert allowed == {c.name for c in session} - {"record"}, allowed
    assert {c.name for c in session if STRANGER.may_use(c)} == allowed
    assert all(may(owner, c.access.action, Obj(c.access.kind, key="agent:main:main")) for c in commands.specs())


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
