"""The ten ``message.*`` methods over the real gateway, through the real Telegram library, to the fake Bot API.

Each test asserts the effect at the fake (the Bot API call and its params) and, for errors, the
error code a client gets: chat not found -> INVALID_REQUEST/TARGET_NOT_FOUND, 429 -> UNAVAILABLE
with retryAfterMs, 403 -> FORBIDDEN.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.fake_telegram import FakeTelegram, telegram_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

CHAT = "111"
T = {"channel": "telegram"}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeTelegram]:
    f = FakeTelegram().start()
    f.missing_chats.add("404")
    yield f
    f.stop()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram) -> Iterator[GatewayProcess]:
    with telegram_gateway(tmp_path_factory.mktemp("msg") / "gw", fake, dmPolicy="open") as proc:
        yield proc


@pytest.fixture
async def c(gw: GatewayProcess, fake: FakeTelegram) -> AsyncIterator[RawClient]:
    await fake.wait_polling()
    client = await operator(gw.url, gw.token or "", scopes=["operator.write"])
    yield client
    await client.close()


async def test_send_splits_long_text_at_the_4096_limit(c: RawClient, fake: FakeTelegram) -> None:
    text = ("paragraph " * 300 + "\n\n") * 3  # ~9,000 characters
    res = await c.call("message.send", {**T, "to": CHAT, "message": text})
    assert res["ok"] and res["channel"] == "telegram" and res["to"] == CHAT and len(res["messageIds"]) == 3
    sent = [x.params["text"] for x in fake.calls_of("sendMessage") if x.params["chat_id"] == CHAT][-3:]
    assert all(len(s) <= 4096 for s in sent) and " ".join(sent).split() == text.split()
    alias = await c.call("message:send", {**T, "to": int(CHAT), "message": "via the colon alias"})
    assert alias["ok"] and fake.calls_of("sendMessage")[-1].params["text"] == "via the colon alias"


async def test_reply_thread_reply_and_effect(c: RawClient, fake: FakeTelegram) -> None:
    await c.call("message.reply", {**T, "to": CHAT, "message": "a reply", "replyToId": "77"})
    params = fake.calls_of("sendMessage")[-1].params
    assert params["reply_parameters"]["message_id"] == 77 and params["reply_parameters"]["allow_sending_without_reply"]
    res = await c.call("message.threadReply", {**T, "to": "-100300", "message": "in the topic", "threadId": "42"})
    assert fake.calls_of("sendMessage")[-1].params["message_thread_id"] == "42" and res["threadId"] == "42"
    effect = {**T, "to": CHAT, "message": "party", "effectId": "5046509860389126442"}
    res = await c.call("message.sendWithEffect", effect)
    assert fake.calls_of("sendMessage")[-1].params["message_effect_id"] == "5046509860389126442"
    assert res["effectId"] == "5046509860389126442" and res["messageId"]


async def test_broadcast_reports_each_target(c: RawClient, fake: FakeTelegram) -> None:
    res = await c.call("message.broadcast", {**T, "targets": ["111", "404", "222"], "message": "news"})
    assert res["delivered"] == 2 and res["failed"] == 1 and res["to"] == ["111", "222"]
    failed = next(r for r in res["results"] if not r["ok"])
    assert failed["to"] == "404" and failed["error"]["details"]["code"] == "TARGET_NOT_FOUND"
    tried = [x.params["chat_id"] for x in fake.calls_of("sendMessage") if x.params["text"] == "news"]
    assert tried == ["111", "404", "222"]  # one failing target did not stop the ones after it


async def test_react_delete_pin(c: RawClient, fake: FakeTelegram) -> None:
    await c.call("message.react", {**T, "to": CHAT, "messageId": "12", "emoji": "👍"})
    assert fake.calls_of("setMessageReaction")[-1].params["reaction"] == [{"type": "emoji", "emoji": "👍"}]
    res = await c.call("message.react", {**T, "to": CHAT, "messageId": "12", "emoji": ""})
    assert res["removed"] and fake.calls_of("setMessageReaction")[-1].params.get("reaction") in ([], None)
    await c.call("message.pin", {**T, "to": CHAT, "messageId": 12})
    assert fake.calls_of("pinChatMessage")[-1].params["message_id"] == "12"
    sent = await c.call("message.send", {**T, "to": CHAT, "message": "soon gone"})
    await c.call("message.delete", {**T, "to": CHAT, "messageId": sent["messageId"]})
    assert fake.calls_of("deleteMessage")[-1].params["message_id"] == sent["messageId"]
    read = await c.call("message.read", {**T, "channelId": CHAT, "limit": 50})
    assert "soon gone" not in [m["text"] for m in read["messages"]]


async def test_attachments_by_path_and_url(c: RawClient, fake: FakeTelegram, tmp_path: Path,
                                           gw: GatewayProcess) -> None:
    voice = tmp_path / "note.ogg"
    await asyncio.to_thread(voice.write_bytes, b"OggS" + b"\0" * 100)
    res = await c.call("message.sendAttachment", {**T, "to": CHAT, "file": str(voice), "caption": "listen"})
    call = fake.calls_of("sendVoice")[-1]
    assert call.files["voice"]["size"] == 104 and call.params["caption"] == "listen" and res["messageId"]
    await c.call("message.sendAttachment", {**T, "to": CHAT, "file": "https://example.org/report.pdf"})
    assert fake.calls_of("sendDocument")[-1].params["document"] == "https://example.org/report.pdf"
    await c.call("message.send", {**T, "to": CHAT, "message": "with a picture", "media": str(voice)})
    assert fake.calls_of("sendVoice")[-1].params["chat_id"] == CHAT
    missing = await c.req("message.sendAttachment", {**T, "to": CHAT, "file": str(tmp_path / "nope.pdf")})
    assert missing["error"]["code"] == "INVALID_REQUEST" and "not found" in missing["error"]["message"]
    secret = await c.req("message.sendAttachment", {**T, "to": CHAT, "file": str(gw.state_dir / "gateway.token")})
    assert secret["error"]["code"] == "INVALID_REQUEST" and "state directory" in secret["error"]["message"]


async def test_read_returns_inbound_and_outbound(c: RawClient, fake: FakeTelegram) -> None:
    fake.user_message(chat_id=555, user_id=555, text="question from a user")
    await fake.wait_call("sendMessage", lambda x: x.params["chat_id"] == "555")  # the agent's answer
    await c.call("message.send", {**T, "to": "555", "message": "and a follow-up"})
    got = await c.call("message.read", {**T, "to": "555"})
    assert [(m["direction"], m["text"]) for m in got["messages"]] == [
        ("in", "question from a user"), ("out", "echo: question from a user"), ("out", "and a follow-up")]
    assert got["messages"][0]["from"] == "555" and got["messages"][0]["senderName"] == "Ada"
    last_two = await c.call("message.read", {**T, "to": "555", "limit": 2})
    assert [m["text"] for m in last_two["messages"]] == ["echo: question from a user", "and a follow-up"]


async def test_bot_api_errors_become_clear_results(c: RawClient, fake: FakeTelegram) -> None:
    nf = await c.req("message.send", {**T, "to": "404", "message": "x"})
    assert nf["error"]["code"] == "INVALID_REQUEST" and nf["error"]["details"]["code"] == "TARGET_NOT_FOUND"
    assert "chat not found" in nf["error"]["message"].lower()
    fake.fail("sendMessage", 429, "Too Many Requests: retry after 7", retry_after=7)
    rl = await c.req("message.send", {**T, "to": CHAT, "message": "x"})
    assert rl["error"]["code"] == "UNAVAILABLE" and rl["error"]["retryAfterMs"] == 7000 and rl["error"]["retryable"]
    fake.fail("sendMessage", 403, "Forbidden: bot was blocked by the user")
    fb = await c.req("message.send", {**T, "to": CHAT, "message": "x"})
    assert fb["error"]["code"] == "FORBIDDEN" and "blocked" in fb["error"]["message"]
    assert fb["error"]["details"]["code"] == "CHANNEL_FORBIDDEN"
    fake.fail("deleteMessage", 400, "Bad Request: message to delete not found")
    gone = await c.req("message.delete", {**T, "to": CHAT, "messageId": "1"})
    assert gone["error"]["details"]["code"] == "TARGET_NOT_FOUND"


async def test_bad_input_and_unknown_targets(c: RawClient) -> None:
    no_to = await c.req("message.send", {**T, "message": "x"})
    assert no_to["error"]["code"] == "INVALID_REQUEST" and "'to'" in no_to["error"]["message"]
    empty = await c.req("message.send", {**T, "to": CHAT, "message": ""})
    assert "/message" in empty["error"]["message"]
    no_chat = await c.req("message.read", {**T})
    assert no_chat["error"]["code"] == "INVALID_REQUEST" and "channelId" in no_chat["error"]["message"]
    unknown = await c.req("message.send", {"channel": "carrier-pigeon", "to": "1", "message": "x"})
    assert unknown["error"]["code"] == "NOT_LINKED" and "unknown channel" in unknown["error"]["message"]
    acct = await c.req("message.send", {**T, "accountId": "second", "to": CHAT, "message": "x"})
    assert acct["error"]["code"] == "NOT_LINKED" and "second" in acct["error"]["message"]
    bad_target = await c.req("message.send", {**T, "to": "not a chat", "message": "x"})
    assert bad_target["error"]["code"] == "INVALID_REQUEST" and "not a chat id" in bad_target["error"]["message"]
    assert (await c.call("health"))["ok"]  # nothing above hurt the gateway
