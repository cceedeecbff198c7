"""Discord through the whole gateway: config -> channel manager -> discord.py -> the loopback fake.

Outbound, every ``message.*`` operation must arrive at the fake's REST API; inbound, a
``MESSAGE_CREATE`` on the fake's gateway socket must reach the gateway, run the (stand-in) agent
and come back to the same Discord chat as a reply.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_discord import FakeDiscord, discord_gateway, module_fake, snowflake
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.slow


fake = module_fake()


@pytest.fixture(scope="module")
async def gw(fake: FakeDiscord, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[GatewayProcess]:
    config = {
        "agents": {"list": [{"id": "main", "command": [sys.executable, str(ROOT / "tests/support/fake_cli.py")]}]},
        "channels": {"discord": fake.config() | {"dmPolicy": "open", "groupPolicy": "open"}},
    }
    state = tmp_path_factory.mktemp("discord-gw")
    async with discord_gateway(fake, state, config, env={"FAKE_CLI_LOG": str(state / "cli.log")}) as proc:
        yield proc


@pytest.fixture
async def client(gw: GatewayProcess) -> AsyncIterator[RawClient]:
    c = await operator(gw.url, gw.token or "")
    yield c
    await c.close()


async def call(client: RawClient, method: str, params: dict[str, Any]) -> Any:
    """Call, waiting out the short moment after start when the account is still connecting."""
    for _ in range(50):
        frame = await client.req(method, {"channel": "discord", **params})
        if frame["ok"] or "still starting" not in frame["error"]["message"]:
            assert frame["ok"], frame
            return frame["payload"]
        await asyncio.sleep(0.1)
    raise AssertionError("discord account never became ready")


async def test_a_message_while_the_bot_is_still_connecting_is_answered(gw: GatewayProcess, fake: FakeDiscord) -> None:
    """First in the module: the fixture hands over at READY, before the account is reported running."""
    dm = snowflake()
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="are you up yet?", author_id="5550005",
                                                               channel_id=dm))
    await fake.wait_posted(dm, "echo: are you up yet?", timeout=15)


async def test_send_reply_thread_reply_react_pin_delete(client: RawClient, fake: FakeDiscord) -> None:
    chan = fake.text_channel_id
    sent = await call(client, "message.send", {"to": chan, "message": "hello guild"})
    assert sent["ok"] and fake.messages[sent["messageId"]]["content"] == "hello guild"

    reply = await call(client, "message.reply", {"to": chan, "message": "replying", "replyToId": sent["messageId"]})
    assert str(fake.messages[reply["messageId"]]["message_reference"]["message_id"]) == sent["messageId"]

    threaded = await call(client, "message.threadReply", {"to": chan, "message": "in thread",
                                                          "threadId": fake.thread_id})
    assert fake.messages[threaded["messageId"]]["channel_id"] == fake.thread_id

    await call(client, "message.react", {"to": chan, "messageId": sent["messageId"], "emoji": "🎉"})
    assert fake.reactions[sent["messageId"]] == {"🎉"}
    await call(client, "message.pin", {"to": chan, "messageId": sent["messageId"]})
    assert sent["messageId"] in fake.pins
    await call(client, "message.delete", {"to": chan, "messageId": reply["messageId"]})
    assert reply["messageId"] not in fake.messages

    long = await call(client, "message.send", {"to": chan, "message": "x " * 1500})
    assert len(long["messageIds"]) == 2
    assert all(len(fake.messages[m]["content"]) <= 2000 for m in long["messageIds"])

    read = await call(client, "message.read", {"to": chan, "limit": 50})
    texts = [m["text"] for m in read["messages"]]
    assert "hello guild" in texts and "replying" not in texts  # deleted messages drop out


async def test_attachment_reaches_the_fake(client: RawClient, fake: FakeDiscord, tmp_path: Path) -> None:
    path = tmp_path / "chart.png"
    path.write_bytes(b"\x89PNG fake image")
    res = await call(client, "message.sendAttachment", {"to": fake.text_channel_id, "file": str(path),
                                                        "caption": "the chart"})
    msg = fake.messages[res["messageId"]]
    assert msg["content"] == "the chart" and msg["attachments"][0]["filename"] == "chart.png"
    rec = next(r for r in fake.requests if r.files and r.files[0][0] == "chart.png")
    assert rec.files[0][1] == b"\x89PNG fake image"


async def test_errors_are_clear_and_the_gateway_survives(client: RawClient, fake: FakeDiscord) -> None:
    frame = await client.req("message.send", {"channel": "discord", "to": "424242", "message": "hi"})
    assert not frame["ok"] and "not found" in frame["error"]["message"]
    frame = await client.req("message.sendWithEffect", {"channel": "discord", "to": fake.text_channel_id,
                                                        "message": "boom", "effectId": "confetti"})
    assert not frame["ok"] and "does not support sendWithEffect" in frame["error"]["message"]
    assert (await client.call("health"))["ok"]


async def test_inbound_dm_runs_the_agent_and_replies_in_discord(client: RawClient, fake: FakeDiscord) -> None:
    await call(client, "message.read", {"to": "0"})  # wait until the account runs
    dm = snowflake()
    before = len(fake.requests)
    payload = fake.message_payload(content="hello from discord", author_id="5550001", channel_id=dm)
    await fake.dispatch("MESSAGE_CREATE", payload)

    async def reply_posted() -> Any:
        while True:
            for r in fake.requests[before:]:
                if r.method == "POST" and r.path == f"/channels/{dm}/messages" and r.json:
                    return r
            await asyncio.sleep(0.05)

    rec = await asyncio.wait_for(reply_posted(), 20)
    assert "hello from discord" in rec.json["content"]
    read = await call(client, "message.read", {"to": dm})
    directions = [(m["direction"], m["text"]) for m in read["messages"]]
    assert directions[0] == ("in", "hello from discord") and directions[-1][0] == "out"


async def test_inbound_attachment_reaches_the_agent_workspace(client: RawClient, fake: FakeDiscord,
                                                              gw: GatewayProcess) -> None:
    await call(client, "message.read", {"to": "0"})  # wait until the account runs
    dm = snowflake()
    photo = fake.attachment("my photo?.png", b"\x89PNG from a user", "image/png")
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="show attachments", author_id="5550002",
                                                               channel_id=dm, attachments=[photo]))
    name = f"{photo['id']}-my_photo_.png"  # a safe name on disk, whatever the sender called it

    async def reply_posted() -> Any:
        while True:
            for r in fake.requests:
                if r.method == "POST" and r.path == f"/channels/{dm}/messages" and r.json:
                    return r
            await asyncio.sleep(0.05)

    rec = await asyncio.wait_for(reply_posted(), 20)
    assert rec.json["content"] == f"attachments: {name}=b'\\x89PNG from a user'"
    kept = gw.state_dir / "media" / "discord" / "default" / name
    assert await asyncio.to_thread(kept.read_bytes) == b"\x89PNG from a user"


async def test_a_progress_note_lives_in_the_thread(client: RawClient, fake: FakeDiscord) -> None:
    """While the agent works, one message in the thread shows its step; edited there, deleted there."""
    await call(client, "message.read", {"to": "0"})  # wait until the account runs (edits need it registered)
    before = len(fake.requests)
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(
        content=f"<@{fake.bot['id']}> tools:5 in a thread", author_id="777", guild=True, mention_bot=True,
        channel_id=fake.thread_id))
    thread = f"/channels/{fake.thread_id}/messages"

    async def answered() -> int:
        while True:
            for i, r in enumerate(fake.requests[before:], before):
                if r.method == "POST" and r.path == thread and (r.json or {}).get("content", "").startswith("echo:"):
                    return i
            await asyncio.sleep(0.05)

    end = await asyncio.wait_for(answered(), 20)
    ops = [r for r in fake.requests[before:end] if r.path.startswith(thread)]
    note = next(r for r in ops if r.method == "POST")
    assert note.json["content"] == "⏳ Working… step 1: Bash"
    note_path = next(r.path for r in ops if r.method in ("PATCH", "DELETE"))
    assert [r.method for r in ops if r.path == note_path][-1] == "DELETE"
    assert any(r.method == "PATCH" for r in ops if r.path == note_path)


async def test_each_channel_in_order_and_channels_side_by_side(client: RawClient, fake: FakeDiscord,
                                                               gw: GatewayProcess) -> None:
    await call(client, "message.read", {"to": "0"})  # wait until the account runs
    dm, other = snowflake(), snowflake()
    photo = fake.attachment("big.png", b"\x89PNG big", "image/png")
    fake.cdn_delays[photo["id"]] = 3.0  # a big attachment on a slow link
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="first, with a file", author_id="5550003",
                                                               channel_id=dm, attachments=[photo]))
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="second, right after", author_id="5550003",
                                                               channel_id=dm))
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="meanwhile elsewhere", author_id="5550004",
                                                               channel_id=other))
    started = asyncio.get_running_loop().time()
    await fake.wait_posted(other, "meanwhile elsewhere")
    assert asyncio.get_running_loop().time() - started < 2.5  # not stuck behind the download
    await fake.wait_posted(dm, "second, right after", timeout=20)
    log = [json.loads(line)["prompt"] for line in (gw.state_dir / "cli.log").read_text().splitlines()]
    first = next(i for i, p in enumerate(log) if "first, with a file" in p)
    second = next(i for i, p in enumerate(log) if "second, right after" in p)
    assert first <= second  # the file's message reached the agent first, as it was sent
