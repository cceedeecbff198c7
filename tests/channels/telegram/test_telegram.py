"""Telegram end to end: the real python-telegram-bot in the real gateway, against a loopback fake Bot API.

An inbound message goes through access control and a real agent run (the stand-in CLI) and its
reply arrives at the fake as ``sendMessage``; owner-ness reaches the run's environment.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_telegram import BOT_ID, BOT_USERNAME, FakeTelegram, cli_runs, module_fake, telegram_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

OWNER, GROUP, FORUM = 111, -100200, -100300


fake = module_fake()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("tg")
    proc = telegram_gateway(d / "gw", fake, ownerAllowFrom=[OWNER],
                            groups={str(GROUP): {}, str(FORUM): {"requireMention": False}})
    with proc:
        yield proc


def runs(gw: GatewayProcess) -> list[dict]:
    return cli_runs(gw.state_dir)


async def test_owner_dm_gets_a_reply_from_a_real_run(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    fake.user_message(chat_id=OWNER, user_id=OWNER, text="hello agent")
    call = await fake.wait_call("sendMessage", lambda c: c.params["text"] == "echo: hello agent")
    assert call.params["chat_id"] == str(OWNER)
    run = next(r for r in runs(gw) if "hello agent" in r["prompt"])
    assert run["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "true"
    assert run["env"]["REMOTECLAW_CHANNEL"] == "telegram" and run["env"]["REMOTECLAW_TO"] == str(OWNER)
    # Both sides are stored: message.read shows the inbound text and the delivered reply.
    c = await operator(gw.url, gw.token or "")
    got = await c.call("message.read", {"channel": "telegram", "to": str(OWNER)})
    texts = [(m["direction"], m["text"]) for m in got["messages"]]
    assert ("in", "hello agent") in texts and ("out", "echo: hello agent") in texts
    await c.close()


async def test_group_needs_a_mention_and_forum_topics_keep_their_thread(gw: GatewayProcess,
                                                                        fake: FakeTelegram) -> None:
    await fake.wait_polling()
    fake.user_message(chat_id=GROUP, user_id=555, chat_type="supergroup", text="ignored chatter")
    text, entities = fake.mention("group question")
    fake.user_message(chat_id=GROUP, user_id=555, chat_type="supergroup", text=text, entities=entities)
    call = await fake.wait_call("sendMessage", lambda c: "group question" in c.params["text"])
    assert call.params["chat_id"] == str(GROUP)
    assert "@" not in call.params["text"]  # the mention is taken out of what the agent sees
    assert not any("ignored chatter" in r["prompt"] for r in runs(gw))
    group_run = next(r for r in runs(gw) if "group question" in r["prompt"])
    assert group_run["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "false"
    # Forum topic, mention not required there: the reply goes back into the same topic.
    fake.user_message(chat_id=FORUM, user_id=556, chat_type="supergroup", text="topic question", thread_id=42)
    call = await fake.wait_call("sendMessage", lambda c: "topic question" in c.params["text"])
    assert call.params["chat_id"] == str(FORUM) and call.params["message_thread_id"] == "42"
    # A group that is not on the allowlist is ignored even with a mention.
    fake.user_message(chat_id=-100999, user_id=557, chat_type="supergroup", text=text.replace("group", "stranger"),
                      entities=entities)
    await fake.wait_call("getUpdates", lambda c: int(c.params.get("offset") or 0) > fake.last_update_id)
    assert not any("stranger question" in r["prompt"] for r in runs(gw))


async def test_an_entity_splitting_a_character_does_not_lose_the_message(gw: GatewayProcess,
                                                                        fake: FakeTelegram) -> None:
    # Regression (found by the Telegram fuzzer): offsets count UTF-16 units, and a bold entity inside the
    # emoji's surrogate pair failed the whole update, so the mention next to it was never answered.
    handle = "@" + BOT_USERNAME
    entities = [{"type": "bold", "offset": 1, "length": 1}, {"type": "mention", "offset": 3, "length": len(handle)}]
    fake.user_message(chat_id=GROUP, user_id=555, chat_type="supergroup", text=f"\U0001f600 {handle} split entity",
                      entities=entities)
    call = await fake.wait_call("sendMessage", lambda c: "split entity" in c.params["text"])
    assert call.params["chat_id"] == str(GROUP) and handle not in call.params["text"]


async def test_replying_to_the_bot_counts_as_a_mention(gw: GatewayProcess, fake: FakeTelegram) -> None:
    bot_msg = {"message_id": 9, "date": 0, "chat": {"id": GROUP, "type": "supergroup"},
               "from": {"id": BOT_ID, "is_bot": True, "first_name": "Test Bot"}, "text": "earlier answer"}
    fake.user_message(chat_id=GROUP, user_id=555, chat_type="supergroup", text="follow-up please",
                      reply_to=bot_msg)
    await fake.wait_call("sendMessage", lambda c: "follow-up please" in c.params["text"])


async def test_voice_note_is_downloaded_and_handed_to_the_agent(gw: GatewayProcess, fake: FakeTelegram) -> None:
    fake.files["VOICE1"] = b"OggS fake opus bytes"
    fake.user_message(chat_id=OWNER, user_id=OWNER, caption="listen, show attachments",
                      voice={"file_id": "VOICE1", "file_unique_id": "vu1", "duration": 2, "mime_type": "audio/ogg",
                             "file_size": 20})
    # The agent finds the file in its own workspace (CLIs may read only below their working directory).
    call = await fake.wait_call("sendMessage", lambda c: c.params["text"].startswith("attachments:"))
    assert call.params["text"] == "attachments: vu1.oga=b'OggS fake opus bytes'"
    run = [c for c in runs(gw) if "show attachments" in c["prompt"]][-1]
    assert "[attachment: voice attachments/vu1.oga]" in run["prompt"]
    kept = gw.state_dir / "media" / "telegram" / "default" / "vu1.oga"  # and a copy stays for the history
    assert await asyncio.to_thread(kept.read_bytes) == b"OggS fake opus bytes"


async def test_bot_api_outage_at_start_is_retried(tmp_path: Path) -> None:
    fake = FakeTelegram()
    fake.fail("getMe", 502, "Bad Gateway")
    fake.start()
    try:
        with telegram_gateway(tmp_path / "gw", fake) as proc:
            await fake.wait_polling(timeout=20)
            c = await operator(proc.url, proc.token or "")
            status = await c.call("channels.status")
            assert {"channel": "telegram", "accountId": "default", "state": "running"} in _accounts(status)
            await c.close()
            assert len(fake.calls_of("getMe")) >= 2
    finally:
        fake.stop()


async def test_messages_sent_while_the_gateway_was_down_are_answered(tmp_path: Path) -> None:
    fake = FakeTelegram().start()
    try:
        fake.user_message(chat_id=OWNER, user_id=OWNER, text="are you there?")  # waiting at Telegram
        with telegram_gateway(tmp_path / "gw", fake, ownerAllowFrom=[OWNER]):
            await fake.wait_call("sendMessage", lambda c: c.params["text"] == "echo: are you there?", timeout=20)
    finally:
        fake.stop()


async def test_markdown_replies_arrive_formatted_or_as_written(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    fake.user_message(chat_id=OWNER, user_id=OWNER, text="**bold** & `code`")
    call = await fake.wait_call("sendMessage", lambda c: "bold" in c.params["text"])
    assert call.params["parse_mode"] == "HTML"
    assert call.params["text"] == "echo: <b>bold</b> &amp; <code>code</code>"
    # Telegram refusing the markup is not the user's problem: the text goes again as written.
    fake.fail("sendMessage", 400, "Bad Request: can't parse entities: unsupported start tag")
    fake.user_message(chat_id=OWNER, user_id=OWNER, text="*again*")
    call = await fake.wait_call("sendMessage", lambda c: c.params["text"] == "echo: *again*")
    assert "parse_mode" not in call.params


async def test_a_slow_chat_does_not_hold_up_the_others(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    fake.files["BIGVOICE"] = b"OggS a long voice note"
    fake.file_delays["BIGVOICE"] = 4.0  # a big file on a slow link
    fake.user_message(chat_id=OWNER, user_id=OWNER, caption="slow one",
                      voice={"file_id": "BIGVOICE", "file_unique_id": "big1", "duration": 90,
                             "mime_type": "audio/ogg", "file_size": 22})
    fake.user_message(chat_id=OWNER, user_id=OWNER, text="right behind it")  # same chat: waits its turn
    fake.user_message(chat_id=FORUM, user_id=556, chat_type="supergroup", text="meanwhile here", thread_id=42)
    started = time.monotonic()
    await fake.wait_call("sendMessage", lambda c: "meanwhile here" in c.params["text"])
    assert time.monotonic() - started < 3.5  # answered while the owner's download was still going
    await fake.wait_call("sendMessage", lambda c: "slow one" in c.params["text"], timeout=20)
    await fake.wait_call("sendMessage", lambda c: "right behind it" in c.params["text"])
    prompts = [r["prompt"] for r in runs(gw)]
    slow = next(i for i, p in enumerate(prompts) if "slow one" in p)
    behind = next(i for i, p in enumerate(prompts) if "right behind it" in p)
    assert slow <= behind  # the owner's messages reached the agent in the order they were sent


def _accounts(status: dict[str, Any]) -> list[dict[str, Any]]:
    """Every account in a ``channels.status`` answer (ours, under ``channels.<name>.accounts``)."""
    return [a for channel in status["channels"].values() for a in channel["accounts"]]
