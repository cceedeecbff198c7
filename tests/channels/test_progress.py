"""What a chat user sees while the agent works: the typing indicator and the progress note.

Telegram through the whole gateway (loopback Bot API); the stand-in CLI's ``tools:<n>`` directive
pretends to call n tools 0.8 s apart. The Discord side (a note inside a thread) is in
``test_discord_gateway.py``.
"""

from __future__ import annotations

from typing import Any

from channels.progress import step_label
from tests.support.fake_telegram import FakeTelegram, module_fake, module_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

OWNER = 111


fake = module_fake()


gw = module_gateway(ownerAllowFrom=[OWNER])


async def say(fake: FakeTelegram, text: str, answer: Any, timeout: float = 20.0) -> int:
    """Send ``text`` as the owner; wait for the reply that satisfies ``answer``; its index in ``fake.calls``."""
    fake.user_message(chat_id=OWNER, user_id=OWNER, text=text)
    call = await fake.wait_call("sendMessage", lambda c: answer(c.params["text"]), timeout=timeout)
    return fake.calls.index(call)


def test_step_labels() -> None:
    assert step_label("mcp__remoteclaw__message_send") == "message_send"
    assert step_label("Bash") == "Bash"


async def test_typing_is_renewed_while_the_agent_works(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    start = len(fake.calls)
    replied = await say(fake, "sleep:4.5 think hard", lambda t: t == "echo: sleep:4.5 think hard")
    typing = [c for c in fake.calls[start:replied] if c.method == "sendChatAction"]
    # Telegram shows "typing…" for 5 s: once on arrival, then again at least every 4 s of the turn.
    assert len(typing) >= 3 and all(c.params["action"] == "typing" for c in typing)
    assert not [c for c in fake.calls[replied:] if c.method == "sendChatAction"]  # stopped with the turn
    # No tool was called: no progress note either, just the answer.
    assert [c.method for c in fake.calls[start:replied] if c.method not in ("sendChatAction", "getUpdates")] == []


async def test_a_progress_note_follows_the_steps_and_goes_away(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    start = len(fake.calls)
    replied = await say(fake, "tools:5 busy work", lambda t: t == "echo: tools:5 busy work")
    during = [c for c in fake.calls[start:replied] if c.method not in ("sendChatAction", "getUpdates")]
    note = during[0]
    assert note.method == "sendMessage" and note.params["text"] == "⏳ Working… step 1: Bash"
    note_id = str(note.result["message_id"])
    edits = [c for c in during if c.method == "editMessageText"]
    assert edits and all(str(c.params["message_id"]) == note_id for c in edits)
    for c in edits:  # odd steps are Bash, even ones the MCP tool, shown by its own name
        step = int(c.params["text"].split("step ", 1)[1].split(":", 1)[0])
        tool = "Bash" if step % 2 else "sessions_list"
        assert 1 < step <= 5 and c.params["text"] == f"⏳ Working… step {step}: {tool}"
    deleted = [c for c in during if c.method == "deleteMessage"]
    assert [str(c.params["message_id"]) for c in deleted] == [note_id]  # removed before the answer
    assert during.index(deleted[0]) == len(during) - 1
    # The note is not part of the conversation's stored messages; the answer is.
    c = await operator(gw.url, gw.token or "")
    try:
        texts = [m["text"] for m in (await c.call("message.read", {"channel": "telegram", "to": str(OWNER)}))
                 ["messages"]]
        assert "echo: tools:5 busy work" in texts and not any(t.startswith("⏳") for t in texts)
        h = (await c.call("config.get"))["hash"]
        await c.call("config.patch", {"patch": {"messages": {"progress": False}}, "baseHash": h})
        start = len(fake.calls)
        replied = await say(fake, "tools:2 quietly", lambda t: t == "echo: tools:2 quietly")
        assert [c.method for c in fake.calls[start:replied] if c.method not in ("sendChatAction", "getUpdates")] == []
    finally:
        await c.close()
