"""Who may talk to the agent: the pure decision table, then pairing end to end over Telegram.

End to end: an unknown DM gets a code (once), ``remoteclaw pairing approve`` lets the sender in, the
sender is told, and their runs never get the owner tool tier. Policy changes apply live.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator

import pytest

from gateway.platforms.access import access_config, decide, is_owner
from gateway.platforms.messages import Inbound
from tests.support.fake_telegram import FakeTelegram, cli_runs, module_fake, telegram_gateway
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.ws import operator

pytestmark = pytest.mark.openclaw_frames  # every frame received is checked against OpenClaw's schema


def msg(sender: str = "42", *, chat_type: str = "dm", chat_id: str | None = None, mentioned: bool = False,
        channel: str = "telegram") -> Inbound:
    return Inbound(channel=channel, account_id="default", sender_id=sender, chat_id=chat_id or sender,
                   chat_type=chat_type, message_id="1", text="hi", mentioned=mentioned)  # type: ignore[arg-type]


@pytest.mark.parametrize(("policy", "approved", "listed", "expected"), [
    ("pairing", False, False, "pair"),
    ("pairing", True, False, "allow"),
    ("pairing", False, True, "allow"),
    ("allowlist", False, False, "drop"),
    ("allowlist", False, True, "allow"),
    ("open", False, False, "allow"),
    ("disabled", True, True, "drop"),
])
def test_dm_policies(policy: str, approved: bool, listed: bool, expected: str) -> None:
    cfg = access_config({"dmPolicy": policy, "allowFrom": ["42"] if listed else []})
    assert decide(cfg, msg(), owner=False, approved=approved).action == expected


def test_group_rules() -> None:
    cfg = access_config({"groups": {"-1": {}, "-2": {"requireMention": False, "allowFrom": ["7"]}}})
    assert decide(cfg, msg(chat_type="group", chat_id="-9", mentioned=True), owner=False, approved=False).action \
        == "drop"  # not on the allowlist
    assert decide(cfg, msg(chat_type="group", chat_id="-1"), owner=False, approved=False).action == "drop"
    assert decide(cfg, msg(chat_type="group", chat_id="-1", mentioned=True), owner=False, approved=False).action \
        == "allow"
    assert decide(cfg, msg("7", chat_type="group", chat_id="-2"), owner=False, approved=False).action == "allow"
    assert decide(cfg, msg("8", chat_type="group", chat_id="-2"), owner=False, approved=False).action == "drop"
    open_cfg = access_config({"groupPolicy": "open", "requireMention": False})
    assert decide(open_cfg, msg(chat_type="group", chat_id="-5"), owner=False, approved=False).action == "allow"
    assert decide(access_config({"groupPolicy": "disabled", "groups": {"*": {}}}),
                  msg(chat_type="group", chat_id="-1", mentioned=True), owner=True, approved=False).action == "drop"


def test_owner_decision() -> None:
    cfg = access_config({"ownerAllowFrom": ["telegram:42", "99"], "dmPolicy": "disabled"})
    assert is_owner(cfg, [], msg("42")) and is_owner(cfg, [], msg("99"))
    assert not is_owner(cfg, [], msg("43"))
    assert not is_owner(access_config({"ownerAllowFrom": ["discord:42"]}), [], msg("42"))
    assert is_owner(access_config({}), ["telegram:42"], msg("42"))
    assert not is_owner(access_config({}), ["telegram:42"], msg("42", channel="discord"))
    assert not is_owner(access_config({"ownerAllowFrom": ["*"]}), ["*"], msg("1"))  # never a wildcard owner
    d = decide(cfg, msg("42"), owner=True, approved=False)
    assert d.action == "allow" and d.is_owner  # the owner may DM even when DMs are off


# -- end to end ------------------------------------------------------------------------------------

OWNER, STRANGER, OTHER = 111, 222, 333


fake = module_fake()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("access")
    with telegram_gateway(d / "gw", fake, channels={"ownerAllowFrom": [f"telegram:{OWNER}"]}) as proc:
        yield proc


async def cli(gw: GatewayProcess, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "gateway.cli", "pairing", *args, "--url", gw.url, "--token", gw.token or ""]
    return await asyncio.to_thread(subprocess.run, argv, cwd=ROOT, capture_output=True, text=True, timeout=30)


def code_sent_to(fake: FakeTelegram, chat: int) -> list[str]:
    texts = [c.params["text"] for c in fake.calls_of("sendMessage") if c.params["chat_id"] == str(chat)]
    return [t.split("pairing code: ", 1)[1].split("\n", 1)[0] for t in texts if "pairing code" in t]


async def test_unknown_sender_pairs_and_never_gets_owner_tools(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    fake.user_message(chat_id=STRANGER, user_id=STRANGER, text="let me in", first_name="Stranger")
    await fake.wait_call("sendMessage", lambda c: c.params["chat_id"] == str(STRANGER))
    fake.user_message(chat_id=STRANGER, user_id=STRANGER, text="hello?")  # no second code for the same person
    await fake.wait_call("getUpdates", lambda c: int(c.params.get("offset") or 0) > fake.last_update_id)
    codes = code_sent_to(fake, STRANGER)
    assert len(codes) == 1
    assert not any("let me in" in r["prompt"] or "hello?" in r["prompt"] for r in cli_runs(gw.state_dir))

    listed = await cli(gw, "list")
    assert listed.returncode == 0 and codes[0] in listed.stdout and "Stranger" in listed.stdout
    wrong = await cli(gw, "approve", "telegram", "ZZZZZZZZ")
    assert wrong.returncode == 1 and "ZZZZZZZZ" in wrong.stderr
    ok = await cli(gw, "approve", "telegram", codes[0].lower())  # codes are not case-sensitive
    assert ok.returncode == 0, ok.stderr
    assert "approved Stranger" in ok.stdout
    await fake.wait_call("sendMessage",
                         lambda c: c.params["chat_id"] == str(STRANGER) and "approved" in c.params["text"])

    fake.user_message(chat_id=STRANGER, user_id=STRANGER, text="now answer me")
    await fake.wait_call("sendMessage", lambda c: c.params["text"] == "echo: now answer me")
    run = next(r for r in cli_runs(gw.state_dir) if "now answer me" in r["prompt"])
    assert run["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "false"

    fake.user_message(chat_id=OWNER, user_id=OWNER, text="owner here")
    await fake.wait_call("sendMessage", lambda c: c.params["text"] == "echo: owner here")
    run = next(r for r in cli_runs(gw.state_dir) if "owner here" in r["prompt"])
    assert run["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "true"


async def test_reject_and_method_errors(gw: GatewayProcess, fake: FakeTelegram) -> None:
    fake.user_message(chat_id=OTHER, user_id=OTHER, text="me too")
    await fake.wait_call("sendMessage", lambda c: c.params["chat_id"] == str(OTHER))
    code = code_sent_to(fake, OTHER)[0]
    c = await operator(gw.url, gw.token or "", scopes=["operator.pairing"])
    pending = await c.call("channels.pairing.list", {"channel": "telegram"})
    assert [r["senderId"] for r in pending["requests"]] == [str(OTHER)]
    rejected = await c.call("channels.pairing.reject", {"channel": "telegram", "code": code})
    assert rejected["rejected"]["status"] == "rejected"
    again = await c.req("channels.pairing.approve", {"channel": "telegram", "code": code})
    assert again["error"]["code"] == "APPROVAL_NOT_FOUND" and "rejected" in again["error"]["message"]
    bad = await c.req("channels.pairing.approve", {"channel": "telegram"})
    assert bad["error"]["code"] == "INVALID_REQUEST" and "code" in bad["error"]["message"]
    await c.close()
    reader = await operator(gw.url, gw.token or "", scopes=["operator.read"])
    denied = await reader.req("channels.pairing.list", {})
    assert denied["error"]["code"] == "FORBIDDEN"
    await reader.close()


async def test_policy_changes_apply_live_without_restarting_the_bot(gw: GatewayProcess, fake: FakeTelegram) -> None:
    c = await operator(gw.url, gw.token or "")
    get_me = len(fake.calls_of("getMe"))
    base = (await c.call("config.get"))["hash"]
    await c.call("config.patch", {"patch": {"channels": {"telegram": {"dmPolicy": "open"}}}, "baseHash": base})
    fake.user_message(chat_id=444, user_id=444, text="open door")
    await fake.wait_call("sendMessage", lambda c: c.params["text"] == "echo: open door")
    base = (await c.call("config.get"))["hash"]
    await c.call("config.patch", {"patch": {"channels": {"telegram": {"dmPolicy": "disabled"}}}, "baseHash": base})
    fake.user_message(chat_id=445, user_id=445, text="closed door")
    await fake.wait_call("getUpdates", lambda c: int(c.params.get("offset") or 0) > fake.last_update_id)
    assert not [x for x in fake.calls_of("sendMessage") if x.params["chat_id"] == "445"]
    assert len(fake.calls_of("getMe")) == get_me
    bad = await c.req("config.patch", {"patch": {"channels": {"telegram": {"dmPolicy": "sometimes"}}},
                                       "baseHash": (await c.call("config.get"))["hash"]})
    assert bad["error"]["code"] == "INVALID_REQUEST" and "dmPolicy" in bad["error"]["message"]
    await c.close()
