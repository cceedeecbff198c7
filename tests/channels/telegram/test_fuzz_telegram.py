"""Fuzzing chat input: random Telegram updates into a real gateway, through the real python-telegram-bot,
from the loopback fake Bot API.

Random text (any unicode, Markdown and HTML look-alikes, up to 20,000 characters), entities with offsets and
types of every kind (in range or not), captions, media descriptions (photos, documents, voice notes,
stickers with file ids the fake cannot serve, sizes and durations of any kind), replies to junk, edited
messages, button presses with random data and update kinds the bot does not know, from the owner, strangers
and groups. Updates are well-typed, as Telegram's are: python-telegram-bot stops at an update whose known
fields have the wrong type and fetches the same batch again for ever (see docs/reliability.md).
After each batch the owner sends a normal message, and it must be answered by a real run (the stand-in CLI
echoes it): the channel keeps working, the gateway never crashes.
``REMOTECLAW_FUZZ_EXAMPLES`` sets the number of updates (CI: 10,000), sent in batches of 50: one ``getUpdates``
answer carries a whole batch (as Telegram hands out a backlog), and the bot still handles each update, so one
agent run per batch (not per update) is what a case costs. Shrinking is off: each attempt would push updates
again and wait out the sentinel's timeout.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.fake_telegram import BOT_USERNAME, FakeTelegram, module_fake, telegram_gateway
from tests.support.frame_fuzz import fresh_health, int64_values
from tests.support.gateway_proc import GatewayProcess

pytestmark = pytest.mark.timeout(1200)

OWNER, STRANGER, GROUP = 111, 222, -100500
UPDATES = int(os.environ.get("REMOTECLAW_FUZZ_EXAMPLES", "150"))
BATCH = 50
ENTITY_TYPES = ["mention", "hashtag", "bot_command", "url", "email", "bold", "italic", "code", "pre", "text_link",
                "text_mention", "spoiler", "custom_emoji", "blockquote", "underline", "strikethrough", "nonsense"]
MAX_MESSAGE_ID = 2**31
_sentinels = itertools.count(1)

fake = module_fake()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram) -> Iterator[GatewayProcess]:
    # The stand-in CLI only echoes: a fuzzed "#tag" or "hang" in the owner's text is no directive to it.
    proc = telegram_gateway(tmp_path_factory.mktemp("tg-fuzz") / "gw", fake, ownerAllowFrom=[OWNER],
                            groups={str(GROUP): {}}, env={"FAKE_CLI_ECHO_ONLY": "1"})
    with proc:
        yield proc


markupish = st.sampled_from(["*", "_", "`", "```", "[", "](", "<b>", "</b>", "<a href='x'>", "&amp;", "\\", "~",
                             "||", "@" + BOT_USERNAME, "/start", "#tag", "\n", "\u202e", "\x00", "\ud7ff", "😀"])
texts = (st.lists(markupish | st.text(max_size=20), max_size=30).map("".join)
         | st.builds(lambda ch, n: ch * n, st.characters(codec="utf-8"), st.integers(4000, 20_000)))
small_int = st.integers(-(2**31), 2**31) | st.integers(0, 100)


@st.composite
def entities(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for _ in range(draw(st.integers(0, 4))):
        e: dict[str, Any] = {"type": draw(st.sampled_from(ENTITY_TYPES)), "offset": draw(small_int),
                             "length": draw(small_int)}
        if e["type"] == "text_link" and draw(st.booleans()):
            e["url"] = draw(st.text(max_size=30))
        if e["type"] == "text_mention" and draw(st.booleans()):
            e["user"] = {"id": draw(small_int), "is_bot": False, "first_name": draw(st.text(max_size=10))}
        out.append(e)
    return out


def _file(draw: st.DrawFn) -> dict[str, Any]:
    return {"file_id": draw(st.text(min_size=1, max_size=40)), "file_unique_id": draw(st.text(min_size=1, max_size=8)),
            "file_size": draw(small_int)}


@st.composite
def media(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["photo", "document", "voice", "audio", "video", "sticker", "location", "contact",
                                 "animation", "video_note", "dice"]))
    if kind == "photo":
        return {"photo": [{**_file(draw), "width": draw(small_int), "height": draw(small_int)}
                          for _ in range(draw(st.integers(0, 3)))]}
    if kind == "location":
        return {"location": {"latitude": draw(st.floats(-1000, 1000)), "longitude": draw(st.floats(-1000, 1000))}}
    if kind == "contact":
        return {"contact": {"phone_number": draw(st.text(max_size=20)), "first_name": draw(st.text(max_size=20))}}
    if kind == "dice":
        return {"dice": {"emoji": draw(st.text(max_size=2)), "value": draw(small_int)}}
    body = {**_file(draw), "duration": draw(small_int), "width": draw(small_int), "height": draw(small_int),
            "mime_type": draw(st.text(max_size=30)), "file_name": draw(st.text(max_size=60)),
            "is_animated": False, "is_video": False, "type": "regular", "length": draw(small_int)}
    return {kind: body}


@st.composite
def updates(draw: st.DrawFn) -> dict[str, Any]:
    """One random update, without its ``update_id`` (the fake numbers it)."""
    who = draw(st.sampled_from([OWNER, STRANGER, GROUP, STRANGER, GROUP]))
    chat: dict[str, Any] = ({"id": who, "type": "private", "first_name": draw(st.text(max_size=10))} if who > 0
                            else {"id": who, "type": "supergroup", "title": draw(st.text(max_size=10))})
    msg: dict[str, Any] = {"message_id": draw(st.integers(1, MAX_MESSAGE_ID)), "date": int(time.time()),
                           "chat": chat,
                           "from": {"id": OWNER if who == OWNER else draw(small_int), "is_bot": draw(st.booleans()),
                                    "first_name": draw(st.text(max_size=10))}}
    shape = draw(st.integers(0, 8))
    if shape <= 4:
        msg["text"] = draw(texts)
        msg["entities"] = draw(entities())
    elif shape <= 7:
        msg.update(draw(media()))
        if draw(st.booleans()):
            msg["caption"] = draw(texts)
            msg["caption_entities"] = draw(entities())
    elif shape == 8:
        msg["text"] = draw(st.text(max_size=50))
        msg["reply_to_message"] = {"message_id": draw(st.integers(1, MAX_MESSAGE_ID)), "date": 0, "chat": chat,
                                   "text": draw(texts)}
    kind = draw(st.integers(0, 9))
    if kind <= 6:
        return {"message": msg}
    if kind == 7:
        return {"edited_message": {**msg, "edit_date": int(time.time())}}
    if kind == 8:
        return {"callback_query": {"id": "cb", "chat_instance": "ci", "data": draw(st.text(max_size=64)),
                                   "from": msg["from"], "message": msg}}
    return {"zz_unknown_kind": draw(int64_values)}


async def _answered(fake: FakeTelegram, n: int) -> None:
    """The owner's normal message number ``n`` is answered by a real run."""
    text = f"sentinel-{n}"
    # Its id is above every fuzzed one: a fuzzed owner message with the same id would make the gateway drop the
    # sentinel as delivered twice (it deduplicates by chat and message id).
    fake.user_message(chat_id=OWNER, user_id=OWNER, text=text, message_id=MAX_MESSAGE_ID + n)
    # Alone ("echo: sentinel-7"), or the last of a collected turn when the owner's fuzzed messages were still
    # being answered ("(2 messages arrived while you were busy ...) ... [2] sentinel-7"): then the answer may be
    # split into several messages, and the sentinel may sit inside formatting a fuzzed message left open
    # ("<pre>...sentinel-7</pre>"). One word, so no split falls inside it; found in any of the owner's answers.
    word = re.compile(rf"(?<![\w-]){re.escape(text)}(?!\d)")
    await fake.wait_call("sendMessage", lambda c: str(c.params.get("chat_id")) == str(OWNER)
                         and bool(word.search(str(c.params.get("text") or ""))), timeout=90)


def test_random_updates_never_stop_the_channel(gw: GatewayProcess, fake: FakeTelegram) -> None:
    loop = asyncio.new_event_loop()
    loop.run_until_complete(fake.wait_polling())
    batches = -(-UPDATES // BATCH)
    pushed = 0

    @settings(max_examples=batches, deadline=None, suppress_health_check=list(HealthCheck), database=None,
              phases=[Phase.generate], report_multiple_bugs=False)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        nonlocal pushed
        batch = [data.draw(updates()) for _ in range(min(BATCH, UPDATES - pushed))]
        fake.push_many(batch)
        pushed += len(batch)
        loop.run_until_complete(_answered(fake, next(_sentinels)))
        assert gw.proc is not None and gw.proc.poll() is None, gw.output()

    try:
        check()
        assert pushed >= UPDATES, (pushed, UPDATES)
        loop.run_until_complete(_answered(fake, next(_sentinels)))  # and once more at the end
        assert loop.run_until_complete(fresh_health(gw))["ok"] is True
    finally:
        loop.close()
