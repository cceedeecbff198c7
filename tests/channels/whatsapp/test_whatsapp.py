"""WhatsApp end to end: the real gateway (its ``whatsapp`` plugin) against a loopback fake of the Cloud API.

Meta's side is ``tests/support/fake_whatsapp.py``: it answers the Graph API calls the channel makes and records
them, and plays the webhook, posting signed messages to the gateway. The agent is the stand-in CLI (it echoes);
the run's tools are the real MCP shim. What is asserted is what reached the fake, and what the CLI saw.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.mcp_shim import conftest as shim_fixtures
from tests.mcp_shim.conftest import ShimFactory
from tests.support import FAKE_CLI
from tests.support.channel_admin import set_enabled, wait_state
from tests.support.fake_telegram import cli_runs, files_named_in
from tests.support.fake_voice import FakeVoiceAPI, spoken_note
from tests.support.fake_whatsapp import VERIFY_TOKEN, FakeWhatsApp
from tests.support.gateway_proc import GatewayProcess
from tests.support.requires import require
from tests.support.waiting import until
from tests.support.ws import operator

pytestmark = pytest.mark.timeout(120)

OWNER = "15551230001"
LATE = "15551230002"  # an owner too, whose last message is more than a day old
STRANGER = "15559870003"
start_shim = shim_fixtures.start_shim


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeWhatsApp]:
    server = FakeWhatsApp().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def voice_api() -> Iterator[FakeVoiceAPI]:
    with FakeVoiceAPI(transcript="what is the weather tomorrow") as api:
        yield api


@pytest.fixture(scope="module")
def gw(
    tmp_path_factory: pytest.TempPathFactory, fake: FakeWhatsApp, voice_api: FakeVoiceAPI
) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("wa") / "gw"
    cfg = {
        "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
        "channels": {"whatsapp": fake.channel_config(ownerAllowFrom=[OWNER, LATE])},
        "messages": {
            "tts": {"enabled": True, "auto": "inbound", "provider": "local"},
            "stt": {"provider": "openai", "openai": {"apiKey": "sk-test", "baseUrl": f"{voice_api.url}/v1"}},
        },
    }
    with GatewayProcess(d, config=cfg, env={"FAKE_CLI_LOG": str(d / "cli.log")}) as proc:
        yield proc


async def test_the_webhook_is_verified_with_the_verify_token(gw: GatewayProcess) -> None:
    url = f"{gw.http}/channels/whatsapp/default/webhook"
    async with httpx.AsyncClient() as http:
        ok = await http.get(url, params={"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN,
                                         "hub.challenge": "1158201444"})
        assert ok.status_code == 200 and ok.text == "1158201444"
        wrong = await http.get(url, params={"hub.mode": "subscribe", "hub.verify_token": "guess",
                                            "hub.challenge": "1"})
        assert wrong.status_code == 403 and "1" not in wrong.text


async def test_an_owners_message_is_answered_once_in_whatsapps_markup(gw: GatewayProcess, fake: FakeWhatsApp) -> None:
    msg = fake.message(OWNER, text="hello **agent**")
    assert (await fake.deliver(gw.http, msg)).status_code == 200
    reply = await fake.wait_text(OWNER, "echo: hello *agent*")  # Markdown's bold in WhatsApp's
    assert reply.body["messaging_product"] == "whatsapp"
    read = await fake.wait_sent(lambda s: s.type == "read" and s.body["message_id"] == msg["id"], "a read receipt")
    assert read.body["typing_indicator"] == {"type": "text"}
    run = next(r for r in cli_runs(gw.state_dir) if "hello **agent**" in r["prompt"])
    assert run["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "true"
    assert run["env"]["REMOTECLAW_CHANNEL"] == "whatsapp" and run["env"]["REMOTECLAW_TO"] == OWNER
    # Meta retries a webhook it did not see answered: the same message again is not handled twice.
    assert (await fake.deliver(gw.http, msg)).status_code == 200
    await asyncio.sleep(1.0)
    assert sum("hello **agent**" in r["prompt"] for r in cli_runs(gw.state_dir)) == 1


async def test_a_bad_signature_is_refused_and_nothing_runs(gw: GatewayProcess, fake: FakeWhatsApp) -> None:
    forged = fake.message(OWNER, text="rm -rf please")
    assert (await fake.deliver(gw.http, forged, secret="not-the-app-secret")).status_code == 403
    async with httpx.AsyncClient() as http:
        unsigned = await http.post(f"{gw.http}/channels/whatsapp/default/webhook",
                                   content=fake.webhook_body(forged))
    assert unsigned.status_code == 403
    # Signed, but for another number of the same app: accepted (Meta must not retry it) and left alone.
    elsewhere = fake.message(OWNER, text="rm -rf elsewhere")
    assert (await fake.deliver(gw.http, elsewhere, number="999000111")).status_code == 200
    await asyncio.sleep(1.0)
    assert not any("rm -rf please" in r["prompt"] for r in cli_runs(gw.state_dir))
    assert not [s for s in fake.sent if "rm -rf" in s.text]


async def test_a_stranger_gets_a_pairing_code_then_an_answer_after_approval(
    gw: GatewayProcess, fake: FakeWhatsApp
) -> None:
    await fake.deliver(gw.http, fake.message(STRANGER, text="let me in"), name="Stranger")
    note = await fake.wait_sent(lambda s: s.to == STRANGER and "pairing code" in s.text, "the pairing code")
    code = note.text.split("Your pairing code: ")[1].split()[0]
    assert not any("let me in" in r["prompt"] for r in cli_runs(gw.state_dir))
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        await c.call("channels.pairing.approve", {"channel": "whatsapp", "code": code})
    finally:
        await c.close()
    await fake.wait_sent(lambda s: s.to == STRANGER and "You're approved" in s.text, "the approval notice")
    await fake.deliver(gw.http, fake.message(STRANGER, text="now answer me"), name="Stranger")
    await fake.wait_text(STRANGER, "echo: now answer me")
    run = next(r for r in cli_runs(gw.state_dir) if "now answer me" in r["prompt"])
    assert run["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "false"


QUESTION = [{"id": "db", "header": "Database", "question": "Which database?",
             "options": [{"label": "Postgres", "description": "a server"}, {"label": "SQLite"}]}]


async def test_a_button_press_answers_the_agents_question(
    gw: GatewayProcess, fake: FakeWhatsApp, start_shim: ShimFactory
) -> None:
    """ask_user through the real shim: the question goes out with reply buttons, and the press (its id is the
    ``/approve <id> <n>`` the button types) comes back as the owner's message and answers it."""
    await fake.deliver(gw.http, fake.message(OWNER, text="route me"))
    await fake.wait_text(OWNER, "echo: route me")  # the session's chat is now this one
    shim = await start_shim(gw, session_key="agent:main:main", channel="whatsapp", to=OWNER,
                            plugin_manifest={"tools": []})
    call = asyncio.create_task(shim.call("ask_user", {"questions": QUESTION}, timeout=60))
    prompt = await fake.wait_sent(lambda s: s.type == "interactive" and "Which database?" in s.text, "the question")
    interactive = prompt.body["interactive"]
    assert interactive["type"] == "button"
    buttons = [b["reply"] for b in interactive["action"]["buttons"]]
    assert [b["title"] for b in buttons] == ["Postgres", "SQLite"]
    press = fake.message(OWNER, "interactive", interactive={
        "type": "button_reply", "button_reply": {"id": buttons[1]["id"], "title": buttons[1]["title"]}},
        reply_to=prompt.message_id)
    await fake.deliver(gw.http, press)
    result = await call
    assert not result.get("isError"), result
    answered = json.loads(result["content"][0]["text"])
    assert answered["answers"] == {"db": ["SQLite"]} and answered["answeredBy"] == f"whatsapp:{OWNER}"
    # WhatsApp cannot edit the question: the outcome comes as a message of its own.
    await fake.wait_sent(lambda s: s.to == OWNER and "Answered by whatsapp" in s.text, "the outcome")


async def test_a_list_is_sent_for_more_than_three_options(gw: GatewayProcess, fake: FakeWhatsApp,
                                                          start_shim: ShimFactory) -> None:
    shim = await start_shim(gw, session_key="agent:main:main", channel="whatsapp", to=OWNER,
                            plugin_manifest={"tools": []})
    options = [{"label": f"Option number {n} with a long name"} for n in range(1, 5)]  # ask_user takes 4 at most
    many = [{**QUESTION[0], "options": options}]
    call = asyncio.create_task(shim.call("ask_user", {"questions": many}, timeout=60))
    prompt = await fake.wait_sent(lambda s: s.type == "interactive" and s.body["interactive"]["type"] == "list",
                                  "the list")
    rows = prompt.body["interactive"]["action"]["sections"][0]["rows"]
    assert len(rows) == 4 and all(len(r["title"]) <= 24 for r in rows)
    await fake.deliver(gw.http, fake.message(OWNER, "interactive", interactive={
        "type": "list_reply", "list_reply": {"id": rows[3]["id"], "title": rows[3]["title"]}}))
    answered = json.loads((await call)["content"][0]["text"])
    assert answered["answers"] == {"db": ["Option number 4 with a long name"]}


async def test_files_both_ways(gw: GatewayProcess, fake: FakeWhatsApp, tmp_path: Path) -> None:
    """A document and a photo people send reach the agent as files; a file the gateway sends is uploaded first,
    then sent by its media id (a document with its name, for what WhatsApp cannot show inline)."""
    data = b"remember the milk\n"
    fake.media["2001"] = (data, "text/plain")
    await fake.deliver(gw.http, fake.message(OWNER, "document", document={
        "id": "2001", "mime_type": "text/plain", "filename": "note.txt", "caption": "read this"}))
    await fake.wait_sent(lambda s: s.to == OWNER and s.text.startswith("echo:") and "read this" in s.text,
                         "the answer")
    run = next(r for r in cli_runs(gw.state_dir) if "read this" in r["prompt"])
    assert "[attachment: file" in run["prompt"]
    assert data in files_named_in(run["prompt"], gw.state_dir), run["prompt"]
    assert "2001" in fake.downloads
    photo = b"\xff\xd8\xff\xe0" + b"\0" * 32
    fake.media["2002"] = (photo, "image/jpeg")
    await fake.deliver(gw.http, fake.message(OWNER, "image", image={"id": "2002", "mime_type": "image/jpeg",
                                                                      "caption": "look at this"}))
    await fake.wait_sent(lambda s: s.to == OWNER and "look at this" in s.text, "the answer to the photo")
    run = next(r for r in cli_runs(gw.state_dir) if "look at this" in r["prompt"])
    assert "[attachment: photo" in run["prompt"] and photo in files_named_in(run["prompt"], gw.state_dir)
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF-1.4 the report")
    c = await operator(gw.url, gw.token or "", scopes=["operator.write"])
    try:
        await c.call("message.sendAttachment", {"channel": "whatsapp", "to": OWNER, "file": str(report)})
    finally:
        await c.close()
    doc = await fake.wait_sent(lambda s: s.type == "document", "the document")
    assert doc.body["document"]["filename"] == "report.pdf"
    upload = next(u for u in fake.uploads if u.media_id == doc.body["document"]["id"])
    assert upload.data == report.read_bytes() and upload.mime == "application/pdf"


async def test_a_voice_note_is_heard_and_answered_with_a_voice_note(
    gw: GatewayProcess, fake: FakeWhatsApp, voice_api: FakeVoiceAPI
) -> None:
    require(shutil.which("espeak-ng") is not None, "espeak-ng is not installed")
    note = await asyncio.to_thread(spoken_note, "What is the weather tomorrow?")
    fake.media["3001"] = (note, "audio/ogg; codecs=opus")
    await fake.deliver(gw.http, fake.message(OWNER, "audio", audio={
        "id": "3001", "mime_type": "audio/ogg; codecs=opus", "voice": True}))
    await fake.wait_sent(lambda s: s.to == OWNER and "what is the weather tomorrow" in s.text, "the answer")
    run = next(r for r in cli_runs(gw.state_dir) if "voice transcript" in r["prompt"])
    assert "[voice transcript (openai): what is the weather tomorrow]" in run["prompt"]
    spoken = await fake.wait_sent(lambda s: s.to == OWNER and s.type == "audio", "the spoken reply", timeout=40)
    assert spoken.body["audio"]["voice"] is True
    upload = next(u for u in fake.uploads if u.media_id == spoken.body["audio"]["id"])
    assert upload.mime == "audio/ogg" and upload.data[:4] == b"OggS"


async def test_message_tools_through_the_real_shim(
    gw: GatewayProcess, fake: FakeWhatsApp, start_shim: ShimFactory, tmp_path: Path
) -> None:
    asked = fake.message(OWNER, text="tools please")
    await fake.deliver(gw.http, asked)
    await fake.wait_text(OWNER, "echo: tools please")
    shim = await start_shim(gw, session_key="agent:main:main", channel="whatsapp", to=OWNER)
    await shim.call_ok("message_send", {"target": OWNER, "message": "from a ~~tool~~"})
    await fake.wait_text(OWNER, "from a ~tool~")
    await shim.call_ok("message_reply", {"message": "a reply", "replyToId": asked["id"]})
    reply = await fake.wait_text(OWNER, "a reply")
    assert reply.body["context"] == {"message_id": asked["id"]}
    await shim.call_ok("message_react", {"emoji": "👍", "messageId": asked["id"]})
    reaction = await fake.wait_sent(lambda s: s.type == "reaction", "the reaction")
    assert reaction.to == OWNER and reaction.body["reaction"] == {"message_id": asked["id"], "emoji": "👍"}
    picture = tmp_path / "chart.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    await shim.call_ok("message_send_attachment", {"target": OWNER, "file": str(picture), "caption": "the chart"})
    image = await fake.wait_sent(lambda s: s.type == "image", "the picture")
    assert image.body["image"]["caption"] == "the chart"
    upload = next(u for u in fake.uploads if u.media_id == image.body["image"]["id"])
    assert upload.data == picture.read_bytes() and upload.name == "chart.png" and upload.mime == "image/png"
    for tool, args in (("message_delete", {"messageId": reply.message_id}),
                       ("message_pin", {"messageId": reply.message_id})):
        refused = await shim.call(tool, args)
        assert refused.get("isError") and "whatsapp does not support" in json.dumps(refused), (tool, refused)


async def test_a_reply_comes_in_as_a_reply_and_reactions_only_when_asked_for(
    gw: GatewayProcess, fake: FakeWhatsApp
) -> None:
    answer = await fake.wait_text(OWNER, "echo: hello *agent*")
    await fake.deliver(gw.http, fake.message(OWNER, text="about that", reply_to=answer.message_id))
    await fake.wait_text(OWNER, "echo: about that")
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        got = await c.call("message.read", {"channel": "whatsapp", "to": OWNER, "limit": 50})
        row = next(m for m in got["messages"] if m["text"] == "about that")
        assert row["direction"] == "in" and row["replyToId"] == answer.message_id
        thumbs = {"message_id": answer.message_id, "emoji": "👍"}
        await fake.deliver(gw.http, fake.message(OWNER, "reaction", reaction=thumbs))
        await asyncio.sleep(1.0)
        assert not any("reacted" in r["prompt"] for r in cli_runs(gw.state_dir))  # off by default: no run
        base = (await c.call("config.get"))["hash"]
        await c.call("config.patch", {"patch": {"channels": {"whatsapp": {"inboundReactions": True}}},
                                      "baseHash": base})
        await wait_state(c, "whatsapp", "running", "the account restarted")

        async def reacted() -> bool:
            await fake.deliver(gw.http, fake.message(OWNER, "reaction", reaction=thumbs))
            return any("[reacted 👍 to a message]" in r["prompt"] for r in cli_runs(gw.state_dir))

        await until(reacted, what="a reaction handed to the agent")
    finally:
        await c.close()


async def test_a_refused_token_and_a_bad_key_are_reported(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])

    async def errors() -> dict[str, str] | None:
        status = await c.call("channels.status")
        found = {a["accountId"]: str(a.get("error")) for ch in status["channels"].values() for a in ch["accounts"]
                 if a["channel"] == "whatsapp" and a["state"] == "error" and a.get("retrying") is False}
        return found if {"wrong", "broken"} <= set(found) else None

    try:
        base = (await c.call("config.get"))["hash"]
        accounts = {"wrong": {"accessToken": "EAAnot-the-token"}, "broken": {"phoneNumberId": "+1 555 0100"}}
        await c.call("config.patch", {"patch": {"channels": {"whatsapp": {"accounts": accounts}}}, "baseHash": base})
        found = await until(errors, what="both accounts' errors")
        assert "refused" in found["wrong"] and "Invalid OAuth access token" in found["wrong"], found
        assert "channels.whatsapp.phoneNumberId" in found["broken"], found
        base = (await c.call("config.get"))["hash"]
        await c.call("config.patch", {"patch": {"channels": {"whatsapp": {"accounts": None}}}, "baseHash": base})
    finally:
        await c.close()


async def test_the_24_hour_window_is_kept(gw: GatewayProcess, fake: FakeWhatsApp) -> None:
    """A person whose last message is more than a day old gets nothing free-form (refused here, naming the rule),
    and the Graph API's own refusal (131047, for someone this gateway never heard from) reads the same."""
    old = fake.message(LATE, text="written yesterday", ts=time.time() - 25 * 3600)
    await fake.deliver(gw.http, old)
    await until(lambda: any("written yesterday" in r["prompt"] for r in cli_runs(gw.state_dir)), what="the run")
    c = await operator(gw.url, gw.token or "", scopes=["operator.write"])
    try:
        late = await c.req("message.send", {"channel": "whatsapp", "to": LATE, "message": "too late?"})
        assert not late["ok"] and late["error"]["details"]["code"] == "WINDOW_CLOSED", late
        assert "24 hours" in late["error"]["message"]
        fake.closed.add("15550000004")
        never = await c.req("message.send", {"channel": "whatsapp", "to": "15550000004", "message": "hi?"})
        assert not never["ok"] and never["error"]["details"]["code"] == "WINDOW_CLOSED", never
        assert not [s for s in fake.sent if s.to == LATE and s.type == "text"]  # refused before the API
        await fake.deliver(gw.http, fake.message(LATE, text="back today"))  # a new message reopens it
        await fake.wait_text(LATE, "echo: back today")
        assert (await c.req("message.send", {"channel": "whatsapp", "to": LATE, "message": "now?"}))["ok"]
        bad = await c.req("message.send", {"channel": "whatsapp", "to": "not-a-number", "message": "x"})
        assert bad["error"]["details"]["code"] == "TARGET_NOT_FOUND", bad
    finally:
        await c.close()


async def test_outside_the_window_the_configured_template_goes_instead(gw: GatewayProcess, fake: FakeWhatsApp) -> None:
    """``reengageTemplate``: a send outside the window becomes that approved template (the text itself cannot go);
    the window's state survives the account's restart (it is kept in the state dir)."""
    person = "15551230005"
    await fake.deliver(gw.http, fake.message(person, text="an old hello", ts=time.time() - 30 * 3600))
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        await until(lambda: _refused(c, person), what="the window closed for the old message's sender")
        base = (await c.call("config.get"))["hash"]
        patch = {"channels": {"whatsapp": {"reengageTemplate": "hello_world", "reengageLanguage": "en"}}}
        await c.call("config.patch", {"patch": patch, "baseHash": base})

        async def sent() -> Any:
            got = await c.req("message.send", {"channel": "whatsapp", "to": person, "message": "come back"})
            return got if got["ok"] else None

        await until(sent, what="the send accepted once the account restarted with a template")
        template = await fake.wait_sent(lambda s: s.to == person and s.type == "template", "the template")
        assert template.body["template"] == {"name": "hello_world", "language": {"code": "en"}}
        assert not [s for s in fake.sent if s.to == person and s.type == "text" and "come back" in s.text]
    finally:
        await c.close()


async def _refused(c: Any, person: str) -> bool:
    got = await c.req("message.send", {"channel": "whatsapp", "to": person, "message": "anyone?"})
    return not got["ok"] and got["error"].get("details", {}).get("code") == "WINDOW_CLOSED"


async def test_switched_off_and_on_live(gw: GatewayProcess, fake: FakeWhatsApp) -> None:
    """Off and on through the config (``channels.whatsapp.enabled``), with no restart; while
    off, the webhook has no account to hand messages to."""
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        await wait_state(c, "whatsapp", "running", "the WhatsApp account running")
        await set_enabled(c, "whatsapp", False)
        await wait_state(c, "whatsapp", "absent", "the WhatsApp account stopped by config.patch")
        assert (await fake.deliver(gw.http, fake.message(OWNER, text="anyone?"))).status_code == 404
        await set_enabled(c, "whatsapp", True)
        await wait_state(c, "whatsapp", "running", "the WhatsApp account running again")
        await fake.deliver(gw.http, fake.message(OWNER, text="back again?"))
        await fake.wait_text(OWNER, "echo: back again?")
    finally:
        await c.close()


def test_markdown_becomes_whatsapp_markup() -> None:
    from channels.whatsapp.format import to_whatsapp

    assert to_whatsapp("**bold** and *it* and ~~gone~~") == "*bold* and _it_ and ~gone~"
    assert to_whatsapp("# Plan\n* one\n* two") == "*Plan*\n- one\n- two"
    assert to_whatsapp("see [the docs](https://example.org)") == "see the docs (https://example.org)"
    assert to_whatsapp("```python\nx = **y**\n```") == "```\nx = **y**\n```"  # code kept as written
    assert to_whatsapp("2*3*4 and `a*b*c`") == "2*3*4 and `a*b*c`"


def test_bad_config_names_the_field() -> None:
    from channels.base import ChannelError
    from channels.whatsapp.config import parse_config

    with pytest.raises(ChannelError) as err:
        parse_config({"phoneNumberId": "+1 555", "accessToken": "EAAtoken-long", "appSecret": "s" * 32,
                      "verifyToken": "v" * 10})
    assert "channels.whatsapp.phoneNumberId" in err.value.message
    with pytest.raises(ChannelError) as err:
        parse_config({"phoneNumberId": "1065403522", "accessToken": "EAAtoken-long", "verifyToken": "v" * 10})
    assert "channels.whatsapp.appSecret" in err.value.message
