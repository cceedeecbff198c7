"""Slack end to end: the real slack-sdk in the real gateway (through the ``slack`` plugin), against the loopback
fake Slack (Web API, file URLs, Socket Mode WebSocket), with the stand-in CLI as the agent.

One gateway for the module runs two accounts of the same app: ``default`` over Socket Mode (the fake pushes
envelopes and waits for their acknowledgement) and ``web`` over the Events API (the test posts signed requests
to the gateway's webhook URL). What is asserted is what reaches the fake (posted messages, uploads, reactions)
and what reaches the agent (the stand-in CLI's log).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from gateway.sessions.service import inbound_key
from tests.mcp_shim import conftest as shim_fixtures
from tests.mcp_shim.conftest import ShimFactory
from tests.support import FAKE_CLI
from tests.support.channel_admin import set_enabled, wait_state
from tests.support.fake_slack import BOT_USER, SIGNING_SECRET, FakeSlack, module_fake, signed
from tests.support.fake_telegram import cli_runs, files_named_in
from tests.support.gateway_proc import GatewayProcess
from tests.support.requires import require
from tests.support.waiting import until
from tests.support.ws import operator

pytest.importorskip("slack_sdk")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

OWNER = "UOWNER01"
STRANGER = "USTRANGE1"
OWNER_DM = "DOWNER01"
GENERAL = "CGENERAL1"

fake = module_fake()
start_shim = shim_fixtures.start_shim  # the real shim, as the agent CLI starts it


@pytest.fixture(scope="module")
async def gw(fake: FakeSlack, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[GatewayProcess]:
    section = fake.config() | {
        "signingSecret": SIGNING_SECRET,
        "ownerAllowFrom": [OWNER],
        "groups": {"*": {}},
        "accounts": {"web": {"mode": "http"}},
    }
    d = tmp_path_factory.mktemp("slack") / "gw"
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}, "channels": {"slack": section}}
    proc = GatewayProcess(d, config=cfg, env={"FAKE_CLI_LOG": str(d / "cli.log")})
    await asyncio.to_thread(proc.start)
    try:
        await fake.until(lambda: fake.connections, "the bot's Socket Mode connection")
        yield proc
    finally:
        await asyncio.to_thread(proc.stop)


def webhook(gw: GatewayProcess, account: str = "web") -> str:
    return f"{gw.http}/channels/slack/{account}/webhook"


async def post_signed(url: str, body: bytes, *, content_type: str = "application/json",
                      headers: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.post(url, content=body, headers={"Content-Type": content_type, **(headers or signed(body))})


async def test_an_owner_dm_is_answered_by_a_real_run(gw: GatewayProcess, fake: FakeSlack) -> None:
    await fake.say(OWNER_DM, OWNER, "hello **agent** & <friends>")
    answer = await fake.posted(OWNER_DM, "echo:")
    run = next(r for r in cli_runs(gw.state_dir) if "hello **agent**" in r["prompt"])
    assert "& <friends>" in run["prompt"]  # Slack's entities decoded before the agent reads it
    # Our Markdown goes out as mrkdwn: single-asterisk bold, and &, <, > escaped.
    assert answer["text"] == "echo: hello *agent* &amp; &lt;friends&gt;", answer


async def test_a_stranger_gets_a_pairing_code_then_an_answer_after_approval(
    gw: GatewayProcess, fake: FakeSlack
) -> None:
    dm = "DSTRANGE1"
    await fake.say(dm, STRANGER, "let me in")
    note = await fake.posted(dm, "pairing code")
    code = note["text"].split("Your pairing code: ")[1].split()[0].strip("*`_")
    assert not any("let me in" in r["prompt"] for r in cli_runs(gw.state_dir))
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        await c.call("channels.pairing.approve", {"channel": "slack", "code": code})
    finally:
        await c.close()
    await fake.posted(dm, "approved")
    await fake.say(dm, STRANGER, "now answer me")
    await fake.posted(dm, "echo: now answer me")


async def test_in_a_channel_a_mention_opens_a_thread_that_is_its_own_session(
    gw: GatewayProcess, fake: FakeSlack
) -> None:
    await fake.say(GENERAL, OWNER, "chatter nobody asked for")
    asked = await fake.say(GENERAL, OWNER, f"<@{BOT_USER}> what is the plan")
    # The twin app_mention event of the same message is handled once.
    await fake.push("events_api", fake.mention_twin(GENERAL, asked))
    top = await fake.posted(GENERAL, "what is the plan")
    assert top["text"].endswith("what is the plan") and f"<@{BOT_USER}>" not in top["text"]
    # In a thread under the mention, no mention is needed: the bot is part of it.
    await fake.say(GENERAL, OWNER, "and in the thread?", thread_ts=asked)
    threaded = await fake.posted(GENERAL, "and in the thread?")
    assert threaded.get("thread_ts") == asked
    prompts = [r["prompt"] for r in cli_runs(gw.state_dir)]
    assert not any("chatter nobody asked" in p for p in prompts)
    assert sum("what is the plan" in p for p in prompts) == 1
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        sessions = (await c.call("sessions.list", {}))["sessions"]
    finally:
        await c.close()
    keys = [s["key"] for s in sessions if GENERAL.lower() in s["key"].lower()]
    assert any(asked in k for k in keys) and any(asked not in k for k in keys), keys  # thread apart from channel


async def test_the_events_api_over_http(gw: GatewayProcess, fake: FakeSlack) -> None:
    url = webhook(gw)
    challenge = json.dumps({"type": "url_verification", "challenge": "c-123", "token": "x"}).encode()
    got = await post_signed(url, challenge)
    assert got.status_code == 200 and got.text == "c-123"
    body = json.dumps(fake.message("DWEBOWNER1", OWNER, "over http")).encode()
    forged = await post_signed(url, body, headers=signed(body, "not-the-secret"))
    assert forged.status_code in (401, 403)
    stale = await post_signed(url, body, headers=signed(body, at=1_000_000_000))
    assert stale.status_code in (401, 403)
    assert not any("over http" in r["prompt"] for r in cli_runs(gw.state_dir))
    ok = await post_signed(url, body)
    assert ok.status_code == 200
    again = await post_signed(url, body)  # Slack retries what it thinks was lost: handled once
    assert again.status_code == 200
    await fake.posted("DWEBOWNER1", "echo: over http")
    await asyncio.sleep(1)
    assert sum("over http" in r["prompt"] for r in cli_runs(gw.state_dir)) == 1
    # The Socket Mode account takes no HTTP events.
    assert (await post_signed(webhook(gw, "default"), challenge)).status_code == 404


async def test_a_button_press_is_the_presser_typing_its_value(
    gw: GatewayProcess, fake: FakeSlack, start_shim: ShimFactory
) -> None:
    """An approval asked in the owner's DM, allowed by pressing a Block Kit button (over Socket Mode), then a
    question answered by a press arriving as an HTTP interactivity POST on the other account."""
    await fake.say(OWNER_DM, OWNER, "route me")
    await fake.posted(OWNER_DM, "echo: route me")
    key = inbound_key("main", "main", channel="slack", account_id="default", chat_type="dm", chat_id=OWNER_DM,
                      sender_id=OWNER, thread_id=None)
    shim = await start_shim(gw, session_key=key, channel="slack", to=OWNER_DM, plugin_manifest={"tools": []})
    call = asyncio.create_task(
        shim.call("approval_prompt", {"tool_name": "Bash", "input": {"command": "make deploy"}}, timeout=60))
    prompt = await fake.posted(OWNER_DM, "make deploy")
    buttons = fake.buttons(OWNER_DM, prompt["ts"])
    assert next(label for label, _ in buttons) == "✅ Allow once" and buttons[0][1].startswith("/approve ")
    await fake.press(OWNER_DM, prompt["ts"], buttons[0][1], user=OWNER)
    verdict = json.loads((await call)["content"][0]["text"])
    assert verdict == {"behavior": "allow", "updatedInput": {"command": "make deploy"}}
    await until(lambda: "Allowed once" in prompt["text"] and prompt.get("blocks") == [], 10,
                "the request's message edited to its outcome, its buttons gone")

    # A press over HTTP (form-encoded payload=...) on the Events API account.
    dm = "DWEBOWNER1"
    await post_signed(webhook(gw), json.dumps(fake.message(dm, OWNER, "route me too")).encode())
    await fake.posted(dm, "echo: route me too")
    posted = await fake.posted(dm, "route me too")
    form = urlencode({"payload": json.dumps(fake.block_actions(dm, posted["ts"], "pressed over http",
                                                               user=OWNER))}).encode()
    bad = await post_signed(webhook(gw), form, content_type="application/x-www-form-urlencoded",
                            headers=signed(form, "wrong-secret-000"))
    assert bad.status_code in (401, 403)
    ok = await post_signed(webhook(gw), form, content_type="application/x-www-form-urlencoded")
    assert ok.status_code == 200
    await fake.posted(dm, "echo: pressed over http")


async def test_files_both_ways_and_a_voice_clip_marked_as_voice(gw: GatewayProcess, fake: FakeSlack) -> None:
    data = b"remember the milk\n"
    note = fake.file(data, "note.txt", "text/plain")
    await fake.say(OWNER_DM, OWNER, "read this", files=[note])
    await fake.posted(OWNER_DM, "echo: read this")
    run = next(r for r in cli_runs(gw.state_dir) if "read this" in r["prompt"])
    assert data in files_named_in(run["prompt"], gw.state_dir), run["prompt"]
    assert (note["id"], "Bearer xoxb-fake-bot-token") in fake.downloads  # fetched with the bot token
    clip = fake.file(b"\x1aE\xdf\xa3 not really webm", "audio_message.webm", "audio/webm", subtype="slack_audio")
    await fake.say(OWNER_DM, OWNER, "", files=[clip])
    await until(lambda: any("[attachment: voice " in r["prompt"] for r in cli_runs(gw.state_dir)), 20,
                "the voice clip handed on as a voice note")


async def test_message_tools_through_the_real_shim(
    gw: GatewayProcess, fake: FakeSlack, start_shim: ShimFactory, tmp_path: Path
) -> None:
    asked = await fake.say(OWNER_DM, OWNER, "tools please")
    await fake.posted(OWNER_DM, "echo: tools please")
    shim = await start_shim(gw, channel="slack", to=OWNER_DM, session_key=f"agent:main:slack:{OWNER_DM}")
    ok = shim.call_ok
    sent = await ok("message_send", {"target": OWNER_DM, "message": "from **a tool**"})
    assert (await fake.posted(OWNER_DM, "from *a tool*"))["ts"] == sent["messageId"]
    await ok("message_reply", {"message": "a reply", "replyToId": asked})
    assert (await fake.posted(OWNER_DM, "a reply")).get("thread_ts") == asked
    await ok("message_thread_reply", {"message": "in a thread", "threadId": asked})
    assert (await fake.posted(OWNER_DM, "in a thread")).get("thread_ts") == asked
    await ok("message_react", {"emoji": "👍", "messageId": asked})
    assert fake.reactions[(OWNER_DM, asked)] == ["+1"]
    await ok("message_pin", {"messageId": asked})
    assert (OWNER_DM, asked) in fake.pins
    picture = tmp_path / "chart.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    await ok("message_send_attachment", {"target": OWNER_DM, "file": str(picture), "caption": "the chart"})
    upload = next(u for u in fake.uploads.values() if u["name"] == "chart.png")
    assert upload["data"] == picture.read_bytes() and upload["comment"] == "the chart"
    history = await ok("message_read", {"limit": 5})
    assert history, history
    await ok("message_delete", {"messageId": sent["messageId"]})
    assert not any(m["ts"] == sent["messageId"] for m in fake.messages[OWNER_DM])


async def test_refusals_become_the_gateways_errors(gw: GatewayProcess, fake: FakeSlack) -> None:
    c = await operator(gw.url, gw.token or "", scopes=["operator.write"])
    try:
        gone = await c.req("message.send", {"channel": "slack", "to": "CGONE0001", "message": "hello?"})
        assert gone["error"]["details"]["code"] == "TARGET_NOT_FOUND", gone
        bad = await c.req("message.send", {"channel": "slack", "to": "#general", "message": "hello?"})
        assert not bad["ok"] and "C…" in bad["error"]["message"], bad
        fake.limited = 1
        limited = await c.req("message.send", {"channel": "slack", "to": OWNER_DM, "message": "slow down"})
        assert limited["error"]["code"] == "UNAVAILABLE" and limited["error"]["retryAfterMs"] == 2000, limited
        assert limited["error"]["retryable"] is True
        bad_id = await c.req("message.react", {"channel": "slack", "to": OWNER_DM, "messageId": "42", "emoji": "👍"})
        assert not bad_id["ok"] and "messageId" in bad_id["error"]["message"], bad_id
    finally:
        await c.close()


def test_bad_config_names_the_field() -> None:
    from channels.base import ChannelError
    from channels.slack.config import parse_config

    with pytest.raises(ChannelError) as err:
        parse_config({"botToken": "not-a-bot-token", "appToken": "xapp-1"})
    assert "channels.slack.botToken" in err.value.message
    with pytest.raises(ChannelError) as err:
        parse_config({"botToken": "xoxb-1"})
    assert "appToken" in err.value.message and "signingSecret" in err.value.message


async def test_switched_off_and_on_live(gw: GatewayProcess, fake: FakeSlack) -> None:
    """Off and on through the config (``channels.slack.enabled``), with no restart."""
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        await wait_state(c, "slack", "running", "the Slack account running")
        await set_enabled(c, "slack", False)
        await wait_state(c, "slack", "absent", "the Slack account stopped by config.patch")
        await set_enabled(c, "slack", True)
        await wait_state(c, "slack", "running", "the Slack account running again")
        await fake.say(OWNER_DM, OWNER, "back after config.patch?")
        await fake.posted(OWNER_DM, "echo: back after config.patch?")
    finally:
        await c.close()


async def test_a_live_reply_is_one_note_edited_in_place_then_the_answer(gw: GatewayProcess, fake: FakeSlack) -> None:
    """``stream: edits``: the answer as it is written shows in one message, edited with ``chat.update`` and
    deleted when the answer itself arrives as a new message (Slack has no typing indicator for bots)."""
    dm = "DLIVE0001"
    start = len(fake.calls)
    await fake.push("events_api", fake.message(dm, OWNER, "stream:6 explain"))
    # The note's edits carry the growing answer too: wait for the answer posted as a message of its own.
    await fake.called("chat.postMessage", lambda a: a.get("channel") == dm and "Part 6 of" in a.get("text", ""))
    calls = [c for c in fake.calls[start:] if c.args.get("channel") == dm]
    posts = [c for c in calls if c.method == "chat.postMessage"]
    edits = [c for c in calls if c.method == "chat.update"]
    deletes = [c for c in calls if c.method == "chat.delete"]
    assert len(posts) == 2 and edits and deletes, [c.method for c in calls]
    assert {c.args["ts"] for c in edits} == {c.args["ts"] for c in deletes}  # one note, edited, then gone
    assert [m for m in fake.messages[dm] if m.get("user") == BOT_USER][-1]["text"].startswith("Part 1")


async def test_a_voice_clip_is_heard_and_answered_with_a_spoken_file(tmp_path: Path, fake: FakeSlack) -> None:
    """The voice capability on Slack (over the Events API): a recorded clip is transcribed before the agent sees
    it (the fake speech-to-text API), and the reply comes back as text, then as an audio file spoken by espeak-ng
    (uploaded with the three-step flow into the same DM)."""
    require(shutil.which("espeak-ng") is not None, "espeak-ng is not installed")
    from tests.support.fake_voice import FakeVoiceAPI, spoken_note

    with FakeVoiceAPI(transcript="what is the weather tomorrow") as api:
        cfg = {
            "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
            "channels": {"slack": fake.config(socket=False) | {"ownerAllowFrom": [OWNER]}},
            "messages": {
                "tts": {"enabled": True, "auto": "inbound", "provider": "local"},
                "stt": {"provider": "openai", "openai": {"apiKey": "sk-test", "baseUrl": f"{api.url}/v1"}},
            },
        }
        d = tmp_path / "gw"
        proc = GatewayProcess(d, config=cfg, env={"FAKE_CLI_LOG": str(d / "cli.log")})
        await asyncio.to_thread(proc.start)
        try:
            dm = "DVOICE001"
            note = await asyncio.to_thread(spoken_note, "What is the weather tomorrow?")
            clip = fake.file(note, "audio_message.ogg", "audio/ogg", subtype="slack_audio")
            body = json.dumps(fake.message(dm, OWNER, "", files=[clip])).encode()
            assert (await post_signed(f"{proc.http}/channels/slack/default/webhook", body)).status_code == 200
            text = await fake.posted(dm, "what is the weather tomorrow")
            spoken = await fake.until(
                lambda: next((u for u in fake.uploads.values() if u.get("channel") == dm), None), "the spoken reply")
        finally:
            await asyncio.to_thread(proc.stop)
        run = cli_runs(d)[-1]
        assert "[voice transcript (openai): what is the weather tomorrow]" in run["prompt"], run["prompt"]
        assert api.transcriptions
    # Auto-TTS speaks in the format the chat app plays: MP3 on Slack (OGG/Opus where voice notes are OGG).
    assert spoken["name"].endswith(".mp3"), spoken["name"]
    head = spoken["data"][:3]
    assert head == b"ID3" or head[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"), head
    shared = [m for m in fake.messages[dm] if m.get("user") == BOT_USER]
    assert shared.index(text) < next(i for i, m in enumerate(shared) if m.get("files"))  # text first, then voice


async def test_a_dropped_socket_reconnects_and_loses_nothing(gw: GatewayProcess, fake: FakeSlack) -> None:
    """Slack closes Socket Mode connections now and then (a refresh, a move): the bot opens a new one."""
    before = fake.connections
    await fake.drop()
    await fake.until(lambda: fake.connections > before, "the bot connected again", timeout=30)
    await fake.say(OWNER_DM, OWNER, "after the drop")
    await fake.posted(OWNER_DM, "echo: after the drop")
    assert sum(c.method == "apps.connections.open" for c in fake.calls) >= 2  # a fresh URL for the new socket


def test_markdown_becomes_mrkdwn_and_emoji_names() -> None:
    from channels.base import ChannelError
    from channels.slack.channel import emoji_name
    from channels.slack.format import to_mrkdwn

    md = "# Plan\n**bold**, *it*, ~~gone~~, [docs](https://x.example/a) <!channel>\n- one\n```py\nif a < b: pass\n```"
    assert to_mrkdwn(md) == (
        "*Plan*\n*bold*, _it_, ~gone~, <https://x.example/a|docs> &lt;!channel&gt;\n• one\n```\nif a &lt; b: pass\n```"
    )
    assert to_mrkdwn("`**not bold**`") == "`**not bold**`"
    assert [emoji_name(e) for e in ("👍", "✅", ":tada:", "eyes")] == ["+1", "white_check_mark", "tada", "eyes"]
    with pytest.raises(ChannelError) as err:
        emoji_name("🦖")
    assert (err.value.details or {}).get("field") == "emoji"


async def test_in_a_channel_only_the_owner_decides_an_approval(
    gw: GatewayProcess, fake: FakeSlack, start_shim: ShimFactory
) -> None:
    chan = "CDECIDE01"
    await fake.say(chan, OWNER, f"<@{BOT_USER}> route me here")
    await fake.posted(chan, "route me here")
    key = inbound_key("main", "main", channel="slack", account_id="default", chat_type="group", chat_id=chan,
                      sender_id=OWNER, thread_id=None)
    shim = await start_shim(gw, session_key=key, channel="slack", to=chan, plugin_manifest={"tools": []})
    call = asyncio.create_task(
        shim.call("approval_prompt", {"tool_name": "Bash", "input": {"command": "rm -rf build"}}, timeout=60))
    prompt = await fake.posted(chan, "rm -rf build")
    buttons = fake.buttons(chan, prompt["ts"])
    await fake.press(chan, prompt["ts"], buttons[0][1], user=STRANGER)
    await fake.posted(chan, "Only the session's owner may decide this")
    assert not call.done() and fake.buttons(chan, prompt["ts"]) == buttons  # still pending, still pressable
    deny = next(value for label, value in buttons if "Deny" in label)
    await fake.press(chan, prompt["ts"], deny, user=OWNER)
    verdict = json.loads((await call)["content"][0]["text"])
    assert verdict["behavior"] == "deny", verdict
