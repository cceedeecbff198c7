"""DiscordChannel with the real discord.py against the loopback fake Discord (no gateway process).

These pin the adapter itself: every inbound shape and outbound operation, as the fake sees them.
The gateway-level path (config -> manager -> message.* methods) is in ``test_discord_gateway.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from channels.base import ChannelError, ChannelForbidden, ChannelUnavailable, Inbound, TargetNotFound
from channels.discord.channel import DiscordChannel
from channels.environment import ChannelEnvironment
from tests.support.fake_discord import FakeDiscord, module_fake, snowflake

fake = module_fake()


@pytest.fixture(scope="module")
async def bot(fake: FakeDiscord) -> AsyncIterator[tuple[DiscordChannel, asyncio.Queue[Inbound]]]:
    inbox: asyncio.Queue[Inbound] = asyncio.Queue()
    env = ChannelEnvironment.alone("discord", "default", inbox.put)
    channel = DiscordChannel.from_config("default", fake.config() | {"readyTimeoutSeconds": 10}, env)
    await channel.start()
    assert channel.ready
    yield channel, inbox
    await channel.stop()


async def test_login_uses_the_token_and_reports_the_bot(bot, fake: FakeDiscord) -> None:
    channel, _ = bot
    assert channel.bot_user_id == fake.bot["id"]
    login = await fake.wait_for("GET", "/users/@me")
    assert login.path == "/users/@me"


async def test_bad_token_is_a_clear_error(fake: FakeDiscord) -> None:
    channel = DiscordChannel("x", lambda m: asyncio.sleep(0), token="wrong", api_base=fake.api_base,
                             gateway_url=fake.gateway_url)
    with pytest.raises(ChannelError, match="token was refused"):
        await channel.start()
    with pytest.raises(ChannelError, match="token is required"):
        DiscordChannel("x", lambda m: asyncio.sleep(0), token=" ")


async def test_inbound_dm(bot, fake: FakeDiscord) -> None:
    _, inbox = bot
    dm = snowflake()
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="hello bot", author_id="111",
                                                               channel_id=dm))
    msg = await asyncio.wait_for(inbox.get(), 5)
    assert (msg.channel, msg.chat_type, msg.chat_id, msg.sender_id, msg.text) == ("discord", "dm", dm, "111",
                                                                                  "hello bot")
    assert msg.sender_name == "alice" and msg.thread_id is None and msg.ts > 0


async def test_inbound_guild_mention_thread_reply_and_attachment(bot, fake: FakeDiscord) -> None:
    _, inbox = bot
    bot_id = fake.bot["id"]
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(
        content=f"<@{bot_id}> look at this", author_id="222", guild=True, mention_bot=True,
        attachments=[{"id": snowflake(), "filename": "a.png", "size": 3, "url": "http://127.0.0.1/a.png",
                      "proxy_url": "http://127.0.0.1/a.png", "content_type": "image/png"}]))
    msg = await asyncio.wait_for(inbox.get(), 5)
    assert msg.chat_type == "group" and msg.chat_id == fake.text_channel_id and msg.mentioned
    assert msg.text == "look at this"
    assert [(m.kind, m.name, m.mime) for m in msg.media] == [("photo", "a.png", "image/png")]

    parent = msg.message_id
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(
        content="in the thread", author_id="222", guild=True, channel_id=fake.thread_id, reply_to=parent))
    msg = await asyncio.wait_for(inbox.get(), 5)
    assert (msg.chat_id, msg.thread_id, msg.reply_to_id, msg.mentioned) == (
        fake.text_channel_id, fake.thread_id, parent, False)


async def test_reply_to_the_bot_counts_as_a_mention(bot, fake: FakeDiscord) -> None:
    channel, inbox = bot
    mine = await channel.send(fake.text_channel_id, "I said something")
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(
        content="answering you", author_id="333", guild=True, reply_to=mine.message_id))
    msg = await asyncio.wait_for(inbox.get(), 5)
    assert msg.reply_to_id == mine.message_id and msg.mentioned


async def test_own_and_other_bot_messages_are_ignored(bot, fake: FakeDiscord) -> None:
    _, inbox = bot
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="me", author_id=fake.bot["id"]))
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="robot", author_id="9", bot_author=True))
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="human", author_id="10"))
    msg = await asyncio.wait_for(inbox.get(), 5)
    assert msg.text == "human"


async def test_send_reply_thread_and_split(bot, fake: FakeDiscord) -> None:
    channel, _ = bot
    sent = await channel.send(f"channel:{fake.text_channel_id}", "plain")
    assert fake.messages[sent.message_id]["content"] == "plain" and sent.chat_id == fake.text_channel_id

    reply = await channel.send(fake.text_channel_id, "answer", reply_to_id=sent.message_id)
    ref = fake.messages[reply.message_id]["message_reference"]
    assert str(ref["message_id"]) == sent.message_id

    in_thread = await channel.send(fake.text_channel_id, "threaded", thread_id=fake.thread_id)
    assert fake.messages[in_thread.message_id]["channel_id"] == fake.thread_id
    assert (in_thread.chat_id, in_thread.thread_id) == (fake.text_channel_id, fake.thread_id)

    long = await channel.send(fake.text_channel_id, ("word " * 500).strip())  # 2499 chars
    first = fake.messages[long.message_id]["content"]
    assert 1500 < len(first) <= 2000
    posted = [r for r in fake.requests if r.json and r.json.get("content", "").startswith("word")]
    assert "".join(r.json["content"] for r in posted).replace(" ", "") == "word" * 500
    assert all(len(r.json["content"]) <= 2000 for r in posted)


async def test_dm_to_a_user_opens_the_dm_channel(bot, fake: FakeDiscord) -> None:
    channel, _ = bot
    sent = await channel.send("user:4242", "hi there")
    assert fake.dm_channels["4242"] == sent.chat_id
    assert fake.messages[sent.message_id]["content"] == "hi there"


async def test_react_unreact_pin_delete(bot, fake: FakeDiscord) -> None:
    channel, _ = bot
    sent = await channel.send(fake.text_channel_id, "react to me")
    await channel.react(fake.text_channel_id, sent.message_id, "👍")
    assert fake.reactions[sent.message_id] == {"👍"}
    await channel.react(fake.text_channel_id, sent.message_id, "")
    assert fake.reactions[sent.message_id] == set()
    await channel.pin(fake.text_channel_id, sent.message_id)
    assert sent.message_id in fake.pins
    await channel.delete(fake.text_channel_id, sent.message_id)
    assert sent.message_id not in fake.messages


async def test_attachment_arrives_as_multipart(bot, fake: FakeDiscord, tmp_path: Path) -> None:
    channel, _ = bot
    path = tmp_path / "report.txt"
    path.write_bytes(b"file body")
    sent = await channel.send_attachment(fake.text_channel_id, str(path), caption="the report")
    rec = next(r for r in fake.requests if r.files)
    assert rec.files == [("report.txt", b"file body")] and rec.json["content"] == "the report"
    assert fake.messages[sent.message_id]["attachments"][0]["filename"] == "report.txt"
    with pytest.raises(ChannelError, match="no such file") as err:
        await channel.send_attachment(fake.text_channel_id, str(tmp_path / "missing"))
    assert err.value.details["field"] == "file"


async def test_attachment_urls_on_private_addresses_are_refused(bot, fake: FakeDiscord) -> None:
    """The gateway downloads URL attachments for Discord: it must not be steered at loopback or metadata IPs."""
    channel, _ = bot
    before = len(fake.requests)
    for url in (f"{fake.api_base}/users/@me", "http://localhost:1/x", "http://169.254.169.254/latest",
                "http://[::ffff:127.0.0.1]/x", "http://10.0.0.1/x"):
        with pytest.raises(ChannelError) as err:
            await channel.send_attachment(fake.text_channel_id, url)
        assert err.value.details == {"field": "file"}
        assert "private or reserved" in err.value.message, err.value.message
    assert len(fake.requests) == before  # nothing was fetched from the fake, nothing was posted


async def test_errors_name_the_problem(bot, fake: FakeDiscord) -> None:
    channel, _ = bot
    with pytest.raises(TargetNotFound, match="not found"):
        await channel.send("123456", "nobody home")
    with pytest.raises(TargetNotFound):
        await channel.delete(fake.text_channel_id, "999")
    with pytest.raises(ChannelError, match="invalid discord target") as err:
        await channel.send("#general", "x")
    assert err.value.details["field"] == "to"
    with pytest.raises(ChannelError, match="messageId"):
        await channel.pin(fake.text_channel_id, "abc")


async def test_a_rate_limited_send_waits_and_arrives_once(bot, fake: FakeDiscord) -> None:
    channel, _ = bot
    before = len(fake.requests)
    fake.rate_limit(2, retry_after=0.2)
    sent = await channel.send(fake.text_channel_id, "after the 429s")
    posts = [r for r in fake.requests[before:] if r.method == "POST" and r.path.endswith("/messages")]
    assert len(posts) == 3  # two refused, the third created the message
    created = [m for m in fake.messages.values() if m["content"] == "after the 429s"]
    assert [m["id"] for m in created] == [sent.message_id]


async def test_endless_429s_and_403_are_clear_errors(bot, fake: FakeDiscord) -> None:
    channel, _ = bot
    fake.rate_limit(10, retry_after=0.01)
    with pytest.raises(ChannelUnavailable, match="429") as err:
        await channel.send(fake.text_channel_id, "never")
    assert err.value.retryable
    fake.rate_limit(0)
    assert not [m for m in fake.messages.values() if m["content"] == "never"]
    # A retry_after longer than we hold a call open is refused at once, with the wait in the answer.
    fake.rate_limit(1, retry_after=120.0)
    with pytest.raises(ChannelUnavailable, match="retry after 120s") as err:
        await asyncio.wait_for(channel.send(fake.text_channel_id, "much later"), 5)
    assert err.value.retry_after_ms == 120_000
    fake.rate_limit(0)
    fake.forbidden.add(fake.text_channel_id)
    try:
        with pytest.raises(ChannelForbidden, match=r"may not do that.*Missing Permissions") as forbidden:
            await channel.send(fake.text_channel_id, "nope")
        assert forbidden.value.details["code"] == "CHANNEL_FORBIDDEN"
    finally:
        fake.forbidden.clear()


async def test_a_dropped_gateway_resumes_and_loses_no_message(bot, fake: FakeDiscord) -> None:
    _, inbox = bot
    identifies, resumes = fake.identifies, fake.resumes
    await fake.drop_gateway()
    # Sent while the bot is away: Discord replays it after the RESUME.
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="while you were out", author_id="222",
                                                               channel_id=snowflake()))
    await fake.wait_connected(resumes=resumes + 1)
    msg = await asyncio.wait_for(inbox.get(), 10)
    assert msg.text == "while you were out" and msg.sender_id == "222"
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="and after", author_id="222",
                                                               channel_id=snowflake()))
    assert (await asyncio.wait_for(inbox.get(), 5)).text == "and after"
    assert fake.identifies == identifies  # resumed the session, not a fresh login
    assert inbox.empty()  # nothing delivered twice
