"""Live replies: the answer shown on Telegram while the agent writes it, ending as one normal message.

Telegram through the whole gateway (loopback Bot API); the stand-in CLI's ``stream:<n>`` directive writes its
answer in n pieces 0.5 s apart as Claude Code's ``stream_event`` text deltas (only when the gateway runs it with
``--include-partial-messages``, as the real CLI needs). ``channels.telegram.stream`` picks how the answer shows
while it is written: ``edits`` (default), ``draft``, ``off``; it changes live, without restarting the bot.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from channels.base import Channel, Sent
from channels.progress import ProgressNote
from tests.support.fake_telegram import Call, FakeTelegram, module_fake, module_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = pytest.mark.timeout(90)

OWNER = 111
ANSWER = " ".join(f"Part {i} of the answer." for i in range(1, 11))

fake = module_fake()
gw = module_gateway(ownerAllowFrom=[OWNER])


async def set_stream(gw: GatewayProcess, mode: str) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        h = (await c.call("config.get"))["hash"]
        await c.call("config.patch", {"patch": {"channels": {"telegram": {"stream": mode}}}, "baseHash": h})
    finally:
        await c.close()


async def turn(fake: FakeTelegram, text: str) -> list[Call]:
    """The owner says ``text``; the calls the bot made until (and with) the final answer."""
    await fake.wait_polling()
    start = len(fake.calls)
    fake.user_message(chat_id=OWNER, user_id=OWNER, text=text)
    earlier = {id(c) for c in fake.calls[:start]}  # an earlier turn sent the same answer
    final = await fake.wait_call("sendMessage", lambda c: id(c) not in earlier and c.params["text"] == ANSWER and
                                 not c.params.get("disable_notification"), timeout=30)
    calls = fake.calls[start:fake.calls.index(final) + 1]
    return [c for c in calls if c.method not in ("getUpdates", "sendChatAction")]


def growing(texts: list[str]) -> None:
    """Each shown text is the one before it with more written (the ✍️ mark aside)."""
    bare = [t.removesuffix(" ✍️") for t in texts]
    assert bare and all(b.startswith("Part 1 of the answer.") for b in bare), bare
    assert all(len(a) < len(b) and b.startswith(a) for a, b in itertools.pairwise(bare)), bare


async def test_edits_show_the_answer_as_it_is_written_then_one_message_notifies(
        gw: GatewayProcess, fake: FakeTelegram) -> None:
    calls = await turn(fake, "stream:10 explain")
    note = calls[0]
    assert note.method == "sendMessage" and note.params.get("disable_notification") in (True, "true"), note
    note_id = str(note.result["message_id"])
    edits = [c for c in calls if c.method == "editMessageText"]
    assert len(edits) >= 2 and all(str(c.params["message_id"]) == note_id for c in edits)
    growing([note.params["text"], *(c.params["text"] for c in edits)])
    assert [c.method for c in calls[-2:]] == ["deleteMessage", "sendMessage"]  # the note goes, the answer comes
    assert str(calls[-2].params["message_id"]) == note_id
    loud = [c for c in calls if c.method == "sendMessage" and not c.params.get("disable_notification")]
    assert loud == [calls[-1]]  # one notification for the turn


async def test_draft_mode_streams_a_draft_and_sends_the_answer_once(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await set_stream(gw, "draft")
    try:
        calls = await turn(fake, "stream:10 draft it")
    finally:
        await set_stream(gw, "edits")
    drafts = [c for c in calls if c.method == "sendMessageDraft"]
    assert len(drafts) >= 2 and len({str(c.params["draft_id"]) for c in drafts}) == 1
    assert all(str(c.params["chat_id"]) == str(OWNER) for c in drafts)
    growing([c.params["text"] for c in drafts])
    assert [c.method for c in calls if c.method != "sendMessageDraft"] == ["sendMessage"]  # nothing to delete


async def test_off_shows_nothing_but_the_answer(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await set_stream(gw, "off")
    try:
        calls = await turn(fake, "stream:10 quietly")
    finally:
        await set_stream(gw, "edits")
    assert [c.method for c in calls] == ["sendMessage"]


async def test_the_web_chat_sees_the_answer_grow(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        sent = await c.call("chat.send", {"sessionKey": "agent:main:main", "message": "stream:10 on the page",
                                          "idempotencyKey": "live-1"})
        deltas: list[str] = []
        while True:
            ev = (await c.next_event("chat", timeout=20))["payload"]
            if ev.get("runId") != sent["runId"]:
                continue
            if ev["state"] == "final":
                break
            if ev["state"] == "delta":
                deltas.append(ev["message"]["text"])
        assert len(deltas) >= 5  # one per piece written, then the whole block
        growing(deltas[:5])
    finally:
        await c.close()


class _Recorder(Channel):
    name = "recorder"
    text_limit = 60

    @classmethod
    def from_config(cls, account_id: str, settings: dict[str, Any], env: Any) -> Channel:
        return cls(account_id, env.receive)

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, to: str, text: str, *, thread_id: str | None = None, reply_to_id: str | None = None,
                   effect_id: str | None = None, silent: bool = False) -> Sent:
        return Sent(message_id="1", chat_id=to)


async def test_a_long_answer_shows_its_latest_part_within_the_limit() -> None:
    note = ProgressNote(_Recorder("a", lambda _m: None), "chat", stream="edits")  # type: ignore[arg-type,return-value]
    try:
        note.text("word " * 40 + "the end")
        shown = note.render()
        assert len(shown) <= 60 and shown.startswith("…") and shown.endswith("the end ✍️")
        note.step("mcp__remoteclaw__web_fetch")
        assert note.render().endswith("⏳ Working… step 1: web_fetch") and len(note.render()) <= 60
    finally:
        await note.close()
