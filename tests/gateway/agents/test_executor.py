"""The agent executor end to end: a loopback test channel -> access check -> session -> stand-in CLI -> reply.

The channel (``tests/support/loop_channel.py``) takes inbound messages on its webhook and records
every send; the CLI is ``tests/support/fake_cli.py``. Pure helpers are tested directly at the end.
"""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator

import pytest

from channels.chunking import split_text
from gateway.agents.reply import clean_reply, is_duplicate
from gateway.runs import Origin
from gateway.sessions.service import inbound_key
from tests.support import SUPPORT
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

FAKE_CLI = str(SUPPORT / "fake_cli.py")


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("executor")
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
           "session": {"dmScope": "per-channel-peer"},
           "channels": {"loop": {"dmPolicy": "open", "groupPolicy": "open", "requireMention": False,
                                 "ownerAllowFrom": ["boss"], "outbox": str(d / "outbox.ndjson"), "textLimit": 200}}}
    env = {"FAKE_CLI_LOG": str(d / "cli.log"), "PYTHONPATH": str(SUPPORT / "loop_site")}
    with GatewayProcess(d / "gw", config=cfg, env=env) as proc:
        proc.outbox = d / "outbox.ndjson"  # type: ignore[attr-defined]
        proc.cli_log = d / "cli.log"  # type: ignore[attr-defined]
        yield proc


@pytest.fixture
async def watcher(gw: GatewayProcess) -> AsyncIterator[RawClient]:
    c = await operator(gw.url, gw.token or "", scopes=["operator.read"])
    yield c
    await c.close()


def post(gw: GatewayProcess, **body: object) -> None:
    req = urllib.request.Request(f"{gw.http}/channels/loop/default/webhook", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200


async def converse(gw: GatewayProcess, c: RawClient, key: str, **body: object) -> list[dict]:
    """Post one inbound message, wait until its run has finished (reply delivered), return its sends."""
    await asyncio.to_thread(post, gw, **body)
    while True:
        ev = await c.next_event("agent", timeout=20)
        p = ev["payload"]
        if p["data"]["sessionKey"] == key and p["stream"] == "lifecycle" and p["data"]["phase"] in ("end", "error"):
            break
    lines = gw.outbox.read_text().splitlines() if gw.outbox.exists() else []  # type: ignore[attr-defined]
    return [r for r in map(json.loads, lines) if r["op"] == "send" and r["to"] == body.get("chat", body["sender"])]


def last_call(gw: GatewayProcess) -> dict:
    return json.loads(gw.cli_log.read_text().splitlines()[-1])  # type: ignore[attr-defined]


async def test_dm_reply_is_delivered_with_context(gw: GatewayProcess, watcher: RawClient) -> None:
    sends = await converse(gw, watcher, "agent:main:loop:direct:u1", sender="u1", text="hello executor", id="m1")
    assert [s["text"] for s in sends] == ["echo: hello executor"]
    env = last_call(gw)["env"]
    assert env["REMOTECLAW_CHANNEL"] == "loop" and env["REMOTECLAW_TO"] == "u1"
    assert env["REMOTECLAW_SENDER_IS_OWNER"] == "false" and env["REMOTECLAW_TOOL_PROFILE"] == "full"
    assert "direct message on loop" in last_call(gw)["argv"][last_call(gw)["argv"].index("--append-system-prompt") + 1]
    await converse(gw, watcher, "agent:main:loop:direct:boss", sender="boss", text="hi", id="m2")
    assert last_call(gw)["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "true"


async def test_reply_already_sent_by_a_tool_is_not_repeated(gw: GatewayProcess, watcher: RawClient) -> None:
    sends = await converse(gw, watcher, "agent:main:loop:direct:u2", sender="u2", text="sent:the answer is 42")
    assert sends == []


async def test_long_reply_is_split_without_breaking_code(gw: GatewayProcess, watcher: RawClient) -> None:
    sends = await converse(gw, watcher, "agent:main:loop:direct:u3", sender="u3", text="long:900")
    assert len(sends) >= 4 and all(len(s["text"]) <= 200 for s in sends)
    assert all(s["text"].count("```") % 2 == 0 for s in sends)
    assert sends[0]["text"].startswith("Here is the code") and sends[-1]["text"].endswith("Done.")


async def test_silent_and_reply_tag(gw: GatewayProcess, watcher: RawClient) -> None:
    assert await converse(gw, watcher, "agent:main:loop:direct:u4", sender="u4", text="silent") == []
    sends = await converse(gw, watcher, "agent:main:loop:direct:u4", sender="u4", text="tag", id="m9")
    assert [(s["text"], s["replyToId"]) for s in sends] == [("tagged answer", "m9")]


async def test_failed_run_tells_the_user_in_one_line(gw: GatewayProcess, watcher: RawClient) -> None:
    sends = await converse(gw, watcher, "agent:main:loop:direct:u5", sender="u5", text="crash")
    assert len(sends) == 1 and "\n" not in sends[0]["text"]
    assert sends[0]["text"].startswith("⚠️") and "exit code 3" in sends[0]["text"]


async def test_groups_and_threads_get_their_own_sessions(gw: GatewayProcess, watcher: RawClient) -> None:
    key = "agent:main:loop:group:g1:thread:t7"
    sends = await converse(gw, watcher, key, sender="u6", name="Ann", chat="g1", chatType="group", thread="t7",
                           text="in a thread")
    assert sends[0]["threadId"] == "t7" and sends[0]["text"] == "echo: [Ann] in a thread"
    sessions = (await watcher.call("sessions.list", {"search": "g1"}))["sessions"]
    assert [s["key"] for s in sessions] == [key] and sessions[0]["chatType"] == "group"


def test_session_keys_follow_dm_scope() -> None:
    kw = {"channel": "Telegram", "account_id": "bot2", "chat_type": "dm", "chat_id": "42", "sender_id": "42"}
    assert inbound_key("main", "main", **kw) == "agent:main:main"
    assert inbound_key("main", "per-peer", **kw) == "agent:main:direct:42"
    assert inbound_key("main", "per-channel-peer", **kw) == "agent:main:telegram:direct:42"
    assert inbound_key("main", "per-account-channel-peer", **kw) == "agent:main:telegram:bot2:direct:42"
    group = {**kw, "chat_type": "group", "chat_id": "-100:x"}
    assert inbound_key("a", "main", **group) == "agent:a:telegram:group:-100_x"


def test_reply_helpers() -> None:
    assert clean_reply("[[reply_to_current]] hi") == ("hi", False, "current")
    assert clean_reply("[[reply_to: 77]] yo") == ("yo", False, "77")
    assert clean_reply("  NO_REPLY ")[1] is True
    origin = Origin(channel="telegram", account_id=None, to="5")
    fx = [{"type": "message_sent", "provider": "telegram", "to": "5", "text": "Hello  World"}]
    assert is_duplicate("hello world", fx, origin)
    assert not is_duplicate("hello world", [{**fx[0], "to": "6"}], origin)
    assert not is_duplicate("something else entirely", fx, origin)
    pieces = split_text("```\n" + "line\n" * 100 + "```", 60)
    assert all(len(p) <= 60 and p.count("```") % 2 == 0 for p in pieces)
