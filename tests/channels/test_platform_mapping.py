"""Each channel's platform mapping, built from its constructor (fast tier): which conversation an update belongs
to (the pipeline's order), which updates a channel takes, and a journalled payload mapped back to an ``Inbound``.

No platform and no gateway here: a channel is built with ``ChannelEnvironment.alone`` and fed what its platform
sends. The process tests under ``tests/channels/<name>/`` keep the real libraries against the loopback fakes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from channels.environment import ChannelEnvironment
from channels.pipeline import InboundPipeline
from gateway.platforms import Inbound

pytestmark = pytest.mark.timeout(30)


class Inbox:
    def __init__(self) -> None:
        self.got: list[Inbound] = []

    async def __call__(self, msg: Inbound) -> None:
        self.got.append(msg)


def test_telegram_orders_updates_by_their_chat() -> None:
    from channels.telegram.channel import _conversation

    assert _conversation({"update_id": 1, "message": {"chat": {"id": -100}}}) == -100
    assert _conversation({"update_id": 2, "edited_message": {"chat": {"id": 7}}}) == 7
    assert _conversation({"update_id": 3, "callback_query": {"message": {"chat": {"id": 9}}}}) == 9
    assert _conversation({"update_id": 4, "poll": {}}) == ("update", 4)  # no chat: on its own


def test_slack_orders_events_and_presses_by_their_conversation() -> None:
    from channels.slack.channel import _conversation

    assert _conversation({"kind": "events_api", "data": {"event": {"channel": "D1"}}}) == "D1"
    assert _conversation({"kind": "interactive", "data": {"channel": {"id": "C2"}}}) == "C2"


def test_slack_takes_a_persons_messages_and_mentions_only() -> None:
    from channels.slack.channel import SlackChannel
    from channels.slack.config import parse_config

    settings = parse_config({"botToken": "xoxb-1", "appToken": "xapp-1"})
    channel = SlackChannel("default", Inbox(), settings)
    channel.bot_user_id = "UBOT"
    person = {"type": "message", "channel": "D1", "ts": "1.0", "user": "U1", "text": "hi"}
    assert channel._wanted(person)
    assert channel._wanted({**person, "type": "app_mention"})
    assert not channel._wanted({**person, "user": "UBOT"})  # its own
    assert not channel._wanted({**person, "bot_id": "B2"})  # another bot: answering could loop
    assert not channel._wanted({**person, "subtype": "message_changed"})
    assert not channel._wanted({**person, "type": "reaction_added"})


def test_whatsapp_takes_the_messages_of_its_own_number() -> None:
    from channels.whatsapp.channel import WhatsAppChannel
    from channels.whatsapp.config import parse_config

    settings = parse_config({"phoneNumberId": "123456", "accessToken": "token-123", "appSecret": "secret-12",
                             "verifyToken": "verify-12"})
    channel = WhatsAppChannel("default", Inbox(), settings)

    def change(number: str, *messages: dict[str, Any]) -> dict[str, Any]:
        return {"field": "messages", "value": {"metadata": {"phone_number_id": number},
                                               "contacts": [{"wa_id": "4915", "profile": {"name": "Ana"}}],
                                               "messages": list(messages), "statuses": [{"status": "read"}]}}

    mine = {"id": "wamid.1", "from": "4915", "type": "text", "text": {"body": "hola"}}
    body = {"object": "whatsapp_business_account",
            "entry": [{"changes": [change("123456", mine), change("999999", {**mine, "id": "wamid.2"})]}]}
    assert list(channel._messages(body)) == [{"message": mine, "name": "Ana"}]
    with pytest.raises(ValueError, match="not a WhatsApp"):
        list(channel._messages({"object": "page"}))


async def test_a_journalled_discord_button_press_becomes_the_pressers_message() -> None:
    from channels.discord.channel import DiscordChannel

    inbox = Inbox()
    env = ChannelEnvironment.alone("discord", "default", inbox)
    channel = DiscordChannel("default", inbox, token="t", env=env)
    press = {"channel": "discord", "account_id": "default", "sender_id": "42", "sender_name": "ana",
             "chat_id": "100", "chat_type": "dm", "message_id": "ix-1", "text": "/approve r1 allow-once",
             "thread_id": None, "mentioned": True, "ts": 1.0, "raw": {"interactionId": "1"}}
    await channel._handle({"kind": "press", "channelId": "100", "inbound": press})
    [msg] = inbox.got
    assert (msg.sender_id, msg.chat_id, msg.text, msg.message_id) == ("42", "100", "/approve r1 allow-once", "ix-1")


async def test_every_channel_built_alone_has_a_pipeline_without_a_journal() -> None:
    """Built with ``ChannelEnvironment.alone`` (no gateway), a channel still drops a redelivery."""
    handled: list[str] = []

    async def handle(payload: dict[str, Any]) -> None:
        handled.append(payload["text"])

    env = ChannelEnvironment.alone("x", "default", Inbox())
    pipeline = env.pipeline(handle, lambda payload: "one")
    assert isinstance(pipeline, InboundPipeline) and env.journal is None and env.account_dir is None
    assert await pipeline.receive("1", {"text": "a"}) and not await pipeline.receive("1", {"text": "a"})
    for _ in range(100):
        if handled:
            break
        await asyncio.sleep(0.01)
    assert handled == ["a"]
