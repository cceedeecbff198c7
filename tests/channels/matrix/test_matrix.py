"""Matrix end to end: the real matrix-nio in the real gateway (through the ``matrix`` plugin), against a real
Synapse on loopback, with people played by second matrix-nio clients.

One Synapse per module (a few seconds to start); each test registers the users it needs. What is asserted is
what the person's client sees arrive in the room, and the rows the gateway stored.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import secrets
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_shim.shim import Shim, shim_env
from tests.support import FAKE_CLI
from tests.support.channel_admin import set_enabled, wait_state
from tests.support.fake_telegram import cli_runs, files_named_in
from tests.support.gateway_proc import GatewayProcess
from tests.support.requires import require
from tests.support.synapse import MatrixUser, Synapse
from tests.support.waiting import until
from tests.support.ws import operator

try:
    import nio
except ImportError:  # pragma: no cover - the dev extra brings it
    nio = None  # type: ignore[assignment]
HAVE_SYNAPSE = importlib.util.find_spec("synapse") is not None

Event = dict[str, Any]


@pytest.fixture(scope="module")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synapse]:
    require(nio is not None and HAVE_SYNAPSE, "needs matrix-nio and matrix-synapse (pip install -e '.[dev]')")
    with Synapse(tmp_path_factory.mktemp("synapse")) as server:
        yield server


@pytest.fixture(scope="module")
def bot(synapse: Synapse) -> MatrixUser:
    return synapse.register("rcbot")


@pytest.fixture(scope="module")
def owner(synapse: Synapse) -> MatrixUser:
    return synapse.register("owner")


def matrix_config(synapse: Synapse, bot: MatrixUser, owner: MatrixUser, **extra: Any) -> dict[str, Any]:
    return {
        "homeserver": synapse.url,
        "userId": bot.user_id,
        "accessToken": bot.access_token,
        "ownerAllowFrom": [owner.user_id],
        "syncTimeoutSeconds": 1,
        **extra,
    }


@pytest.fixture(scope="module")
def gw(
    tmp_path_factory: pytest.TempPathFactory, synapse: Synapse, bot: MatrixUser, owner: MatrixUser
) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("mx") / "gw"
    cfg = {
        "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
        "channels": {"matrix": matrix_config(synapse, bot, owner, groups={"*": {}})},
    }
    with GatewayProcess(d, config=cfg, env={"FAKE_CLI_LOG": str(d / "cli.log")}) as proc:
        yield proc


class Person:
    """Someone on the homeserver, with their own matrix-nio client, reading what arrives in their rooms."""

    def __init__(self, synapse: Synapse, user: MatrixUser) -> None:
        self.user = user
        self.client = nio.AsyncClient(synapse.url, user.user_id, config=nio.AsyncClientConfig(encryption_enabled=False))
        self.client.restore_login(user.user_id, "TESTDEVICE", user.access_token)
        self.events: list[tuple[str, Event]] = []  # (room id, event source) in arrival order
        self.since: str | None = None

    async def sync(self) -> None:
        resp = await self.client.sync(timeout=500, since=self.since)
        assert isinstance(resp, nio.SyncResponse), resp
        self.since = resp.next_batch
        for room_id, info in resp.rooms.join.items():
            self.events.extend((room_id, ev.source) for ev in info.timeline.events)

    async def wait_for(self, match: Callable[[str, Event], bool], what: str, timeout: float = 30) -> Event:
        deadline = time.monotonic() + timeout
        while True:
            for room_id, ev in self.events:
                if match(room_id, ev):
                    return ev
            assert time.monotonic() < deadline, f"timed out waiting for {what}; seen: {self.events[-8:]}"
            await self.sync()

    async def from_bot(self, bot: MatrixUser, room: str, match: Callable[[Event], bool], what: str) -> Event:
        return await self.wait_for(lambda r, ev: r == room and ev.get("sender") == bot.user_id and match(ev), what)

    async def dm(self, bot: MatrixUser) -> str:
        """A direct room with the bot, once it has joined."""
        got = await self.client.room_create(invite=[bot.user_id], is_direct=True)
        assert isinstance(got, nio.RoomCreateResponse), got
        await self.wait_for(
            lambda r, ev: (
                r == got.room_id
                and ev.get("type") == "m.room.member"
                and ev.get("state_key") == bot.user_id
                and ev["content"].get("membership") == "join"
            ),
            "the bot joining the DM",
        )
        return str(got.room_id)

    async def room_with(self, bot: MatrixUser, name: str) -> str:
        """A room of their own with the bot invited, once it has joined."""
        made = await self.client.room_create(name=name, invite=[bot.user_id])
        assert isinstance(made, nio.RoomCreateResponse), made
        await self.wait_for(
            lambda r, ev: (
                r == made.room_id and ev.get("state_key") == bot.user_id and ev["content"].get("membership") == "join"
            ),
            "the bot joining the room",
        )
        return str(made.room_id)

    async def say(self, room: str, text: str, **content: Any) -> str:
        got = await self.client.room_send(room, "m.room.message", {"msgtype": "m.text", "body": text, **content})
        assert isinstance(got, nio.RoomSendResponse), got
        return str(got.event_id)

    async def close(self) -> None:
        await self.client.close()


@pytest.fixture
async def me(synapse: Synapse, owner: MatrixUser) -> AsyncIterator[Person]:
    person = Person(synapse, owner)
    await person.sync()
    yield person
    await person.close()


def body_is(text: str) -> Callable[[Event], bool]:
    return lambda ev: ev.get("type") == "m.room.message" and ev["content"].get("body") == text


async def test_owner_dm_is_answered_by_a_real_run(gw: GatewayProcess, me: Person, bot: MatrixUser) -> None:
    room = await me.dm(bot)
    await me.say(room, "hello **agent**")
    reply = await me.from_bot(bot, room, body_is("echo: hello **agent**"), "the agent's reply")
    assert reply["content"]["formatted_body"] == "<p>echo: hello <strong>agent</strong></p>"  # Markdown as HTML
    run = next(r for r in cli_runs(gw.state_dir) if "hello **agent**" in r["prompt"])
    assert run["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "true"
    assert run["env"]["REMOTECLAW_CHANNEL"] == "matrix" and run["env"]["REMOTECLAW_TO"] == room
    c = await operator(gw.url, gw.token or "")
    try:

        async def stored() -> bool:  # the reply can reach the room a moment before its row is written
            got = await c.call("message.read", {"channel": "matrix", "to": room})
            rows = {(m["direction"], m["text"]) for m in got["messages"]}
            return ("in", "hello **agent**") in rows and ("out", "echo: hello **agent**") in rows

        await until(stored, timeout=10, what="both messages in the message log")
    finally:
        await c.close()


async def test_a_restart_does_not_answer_old_messages_again(
    tmp_path: Path, synapse: Synapse, owner: MatrixUser, me: Person
) -> None:
    """The since-token is kept in the state dir: a second start sees only what is new. The bot logs in with a
    password here: the session it gets is kept too, so the restart reuses the same device."""
    other_bot = synapse.register("rcbot" + secrets.token_hex(3))
    settings = {**matrix_config(synapse, other_bot, owner), "password": other_bot.password}
    del settings["accessToken"]
    cfg = {
        "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
        "channels": {"matrix": settings},
    }
    d = tmp_path / "gw"
    proc = GatewayProcess(d, config=cfg, env={"FAKE_CLI_LOG": str(d / "cli.log")})
    session_file = d / "matrix" / "default" / "session.json"
    with proc:
        room = await me.dm(other_bot)
        await me.say(room, "first question")
        await me.from_bot(other_bot, room, body_is("echo: first question"), "the first reply")
        first_session = json.loads(session_file.read_text())
    assert session_file.stat().st_mode & 0o777 == 0o600  # it holds an access token
    await me.say(room, "asked while it was down")
    with proc:
        await me.from_bot(other_bot, room, body_is("echo: asked while it was down"), "the reply after the restart")
        await me.say(room, "third question")
        await me.from_bot(other_bot, room, body_is("echo: third question"), "the third reply")
    assert json.loads(session_file.read_text()) == first_session  # no second login, no new device
    prompts = [r["prompt"] for r in cli_runs(d)]
    assert sum("first question" in p for p in prompts) == 1, prompts
    assert sum("asked while it was down" in p for p in prompts) == 1, prompts


async def test_a_thread_is_answered_in_the_thread(gw: GatewayProcess, me: Person, bot: MatrixUser) -> None:
    room = await me.dm(bot)
    root = await me.say(room, "start of a thread")
    await me.from_bot(bot, room, body_is("echo: start of a thread"), "the answer to the root")
    await me.say(room, "inside the thread", **{"m.relates_to": {"rel_type": "m.thread", "event_id": root}})
    answer = await me.from_bot(bot, room, body_is("echo: inside the thread"), "the answer in the thread")
    assert answer["content"]["m.relates_to"]["rel_type"] == "m.thread"
    assert answer["content"]["m.relates_to"]["event_id"] == root


async def test_an_encrypted_room_is_explained_once_and_refused(gw: GatewayProcess, me: Person, bot: MatrixUser) -> None:
    made = await me.client.room_create(
        invite=[bot.user_id],
        is_direct=True,
        initial_state=[
            {"type": "m.room.encryption", "state_key": "", "content": {"algorithm": "m.megolm.v1.aes-sha2"}}
        ],
    )
    room = made.room_id
    await me.wait_for(
        lambda r, ev: r == room and ev.get("state_key") == bot.user_id and ev["content"].get("membership") == "join",
        "the bot joining the encrypted room",
    )
    ciphertext = {
        "algorithm": "m.megolm.v1.aes-sha2",
        "ciphertext": "AwgA…",
        "sender_key": "k",
        "session_id": "s",
        "device_id": "TESTDEVICE",
    }
    for _ in range(2):
        sent = await me.client.room_send(room, "m.room.encrypted", ciphertext)
        assert isinstance(sent, nio.RoomSendResponse), sent
    note = await me.from_bot(
        bot,
        room,
        lambda ev: "end-to-end encrypted" in ev["content"].get("body", ""),
        "the bot saying it cannot read encrypted rooms",
    )
    assert note["content"]["msgtype"] == "m.notice"
    c = await operator(gw.url, gw.token or "", scopes=["operator.write"])
    try:
        refused = await c.req("message.send", {"channel": "matrix", "to": room, "message": "secret?"})
    finally:
        await c.close()
    assert not refused["ok"] and "encrypted" in refused["error"]["message"], refused
    await me.sync()
    notes = [
        ev
        for r, ev in me.events
        if r == room and ev.get("sender") == bot.user_id and ev.get("type") == "m.room.message"
    ]
    assert len(notes) == 1, notes  # said once, however many encrypted messages came


async def test_a_stranger_gets_a_pairing_code_then_an_answer_after_approval(
    gw: GatewayProcess, synapse: Synapse, bot: MatrixUser
) -> None:
    stranger = Person(synapse, synapse.register("stranger"))
    try:
        room = await stranger.dm(bot)  # dmPolicy pairing: a DM invite from anyone is joined, to answer with a code
        await stranger.say(room, "let me in")
        note = await stranger.from_bot(
            bot, room, lambda ev: "pairing code" in ev["content"].get("body", ""), "the pairing code"
        )
        code = note["content"]["body"].split("Your pairing code: ")[1].split()[0]
        assert not any("let me in" in r["prompt"] for r in cli_runs(gw.state_dir))
        c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
        try:
            await c.call("channels.pairing.approve", {"channel": "matrix", "code": code})
        finally:
            await c.close()
        await stranger.from_bot(
            bot, room, lambda ev: "You're approved" in ev["content"].get("body", ""), "the approval notice"
        )
        await stranger.say(room, "now answer me")
        await stranger.from_bot(bot, room, body_is("echo: now answer me"), "the answer after approval")
        run = next(r for r in cli_runs(gw.state_dir) if "now answer me" in r["prompt"])
        assert run["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "false"
    finally:
        await stranger.close()


async def test_in_a_room_the_bot_answers_when_mentioned_or_replied_to(
    gw: GatewayProcess, synapse: Synapse, me: Person, bot: MatrixUser
) -> None:
    room = await me.room_with(bot, "team")
    colleague = synapse.register("colleague" + secrets.token_hex(3))
    invited = await me.client.room_invite(room, colleague.user_id)  # a third member makes it a group
    assert isinstance(invited, nio.RoomInviteResponse), invited
    await me.say(room, "chatter nobody asked about")
    await me.say(room, "rcbot: what is the plan", **{"m.mentions": {"user_ids": [bot.user_id]}})
    answer = await me.from_bot(
        bot, room, lambda ev: "what is the plan" in ev["content"].get("body", ""), "the answer to the mention"
    )
    assert answer["content"]["body"] == "echo: [owner] what is the plan"  # the mention is taken out
    await me.say(room, "and then?", **{"m.relates_to": {"m.in_reply_to": {"event_id": answer["event_id"]}}})
    await me.from_bot(bot, room, body_is("echo: [owner] and then?"), "the answer to a reply")
    assert not any("chatter nobody asked" in r["prompt"] for r in cli_runs(gw.state_dir))


async def test_message_tools_through_the_real_shim(
    gw: GatewayProcess, me: Person, bot: MatrixUser, tmp_path: Path
) -> None:
    room = await me.dm(bot)
    asked = await me.say(room, "tools please")
    await me.from_bot(bot, room, body_is("echo: tools please"), "the first answer")
    shim = await Shim.start(shim_env(gw, tmp_path, channel="matrix", to=room, session_key=f"agent:main:matrix:{room}"))
    try:
        await shim.initialize()
        sent = await shim.call_ok("message_send", {"target": room, "message": "from a tool"})
        await me.from_bot(bot, room, body_is("from a tool"), "message_send")
        await shim.call_ok("message_reply", {"message": "a reply", "replyToId": asked})
        reply = await me.from_bot(bot, room, body_is("a reply"), "message_reply")
        assert reply["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == asked
        await shim.call_ok("message_thread_reply", {"message": "in a thread", "threadId": asked})
        threaded = await me.from_bot(bot, room, body_is("in a thread"), "message_thread_reply")
        assert threaded["content"]["m.relates_to"]["rel_type"] == "m.thread"
        assert threaded["content"]["m.relates_to"]["event_id"] == asked
        await shim.call_ok("message_react", {"emoji": "👍", "messageId": asked})
        reaction = await me.from_bot(bot, room, lambda ev: ev.get("type") == "m.reaction", "message_react")
        assert reaction["content"]["m.relates_to"] == {"rel_type": "m.annotation", "event_id": asked, "key": "👍"}
        picture = tmp_path / "chart.png"
        picture.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
        await shim.call_ok("message_send_attachment", {"target": room, "file": str(picture), "caption": "the chart"})
        image = await me.from_bot(
            bot, room, lambda ev: ev["content"].get("msgtype") == "m.image", "message_send_attachment"
        )
        assert image["content"]["filename"] == "chart.png" and image["content"]["body"] == "the chart"
        downloaded = await me.client.download(mxc=image["content"]["url"])
        assert isinstance(downloaded, nio.MemoryDownloadResponse) and downloaded.body == picture.read_bytes()
        # Pinning needs the right to change room state: a moderator's power level, which the owner grants.
        levels = await me.client.room_get_state_event(room, "m.room.power_levels", "")
        granted = {**levels.content, "users": {**levels.content.get("users", {}), bot.user_id: 50}}
        await me.client.room_put_state(room, "m.room.power_levels", granted)
        await shim.call_ok("message_pin", {"messageId": asked})
        pinned = await me.client.room_get_state_event(room, "m.room.pinned_events", "")
        assert pinned.content["pinned"] == [asked]
        message_id = sent["messageId"] if isinstance(sent, dict) else None
        assert message_id and message_id.startswith("$")
        await shim.call_ok("message_delete", {"messageId": message_id})
        await me.wait_for(
            lambda r, ev: r == room and ev.get("type") == "m.room.redaction" and ev.get("redacts") == message_id,
            "the redaction",
        )
    finally:
        await shim.close()


async def test_an_attachment_reaches_the_agent(gw: GatewayProcess, me: Person, bot: MatrixUser) -> None:
    room = await me.dm(bot)
    data = b"remember the milk\n"
    up, _ = await me.client.upload(lambda *_: data, content_type="text/plain", filename="note.txt", filesize=len(data))
    assert isinstance(up, nio.UploadResponse)
    await me.say(
        room,
        "read this",
        msgtype="m.file",
        url=up.content_uri,
        filename="note.txt",
        info={"mimetype": "text/plain", "size": len(data)},
    )
    await me.from_bot(bot, room, lambda ev: ev["content"].get("body", "").startswith("echo:"), "the answer")
    run = next(r for r in cli_runs(gw.state_dir) if "read this" in r["prompt"])
    assert data in files_named_in(run["prompt"], gw.state_dir), run["prompt"]


async def test_switched_off_and_on_live(gw: GatewayProcess, me: Person, bot: MatrixUser) -> None:
    """Off and on through the config (``channels.matrix.enabled``), with no restart."""
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])

    async def answered(text: str) -> None:
        dm = await me.dm(bot)
        await me.say(dm, text)
        await me.from_bot(bot, dm, body_is(f"echo: {text}"), f"an answer to {text!r}")

    try:
        await wait_state(c, "matrix", "running", "the Matrix account running")
        await set_enabled(c, "matrix", False)
        await wait_state(c, "matrix", "absent", "the Matrix account stopped by config.patch")
        await set_enabled(c, "matrix", True)
        await wait_state(c, "matrix", "running", "the Matrix account running again")
        await answered("back after config.patch?")
    finally:
        await c.close()


def test_bad_config_names_the_field() -> None:
    from channels.base import ChannelError
    from channels.matrix.config import parse_config

    with pytest.raises(ChannelError) as err:
        parse_config({"homeserver": "matrix.example.org", "userId": "@bot:example.org", "accessToken": "t"})
    assert "channels.matrix.homeserver" in err.value.message
    with pytest.raises(ChannelError) as err:
        parse_config({"homeserver": "https://matrix.example.org", "userId": "@bot:example.org"})
    assert "accessToken or password" in err.value.message


async def test_a_live_reply_is_one_notice_edited_in_place_then_the_answer(
    gw: GatewayProcess, me: Person, bot: MatrixUser
) -> None:
    """``stream: edits``: the answer as it is written shows in one notice (edited with ``m.replace``), which is
    redacted when the answer itself arrives as a normal message."""
    room = await me.dm(bot)
    await me.say(room, "stream:10 explain")

    def mine(ev: Event) -> bool:
        return ev.get("sender") == bot.user_id

    note = await me.from_bot(bot, room, lambda ev: ev["content"].get("msgtype") == "m.notice", "the live note")
    redaction = await me.wait_for(
        lambda r, ev: (
            r == room and mine(ev) and ev.get("type") == "m.room.redaction" and ev.get("redacts") == note["event_id"]
        ),
        "the live note redacted",
        timeout=60,
    )
    answer = await me.from_bot(bot, room, lambda ev: ev["content"].get("msgtype") == "m.text", "the answer")
    in_room = [ev for r, ev in me.events if r == room and mine(ev)]
    edits = [ev for ev in in_room if (ev["content"].get("m.relates_to") or {}).get("rel_type") == "m.replace"]
    assert edits and all(ev["content"]["m.relates_to"]["event_id"] == note["event_id"] for ev in edits)
    texts = [ev["content"]["m.new_content"]["body"] for ev in edits]
    assert all(len(a) <= len(b) for a, b in itertools.pairwise(texts)), texts  # the answer grows
    assert in_room.index(redaction) < in_room.index(answer)  # the note goes, then the answer comes


async def test_chat_commands_are_answered_by_the_gateway(gw: GatewayProcess, me: Person, bot: MatrixUser) -> None:
    room = await me.dm(bot)
    await me.say(room, "/help")
    answer = await me.from_bot(bot, room, lambda ev: "/status" in ev["content"].get("body", ""), "the command list")
    assert "/stop" in answer["content"]["body"]
    assert not any(r["prompt"].strip() == "/help" for r in cli_runs(gw.state_dir))


async def test_refusals_become_the_gateways_errors(gw: GatewayProcess, me: Person, bot: MatrixUser) -> None:
    room = await me.dm(bot)
    c = await operator(gw.url, gw.token or "", scopes=["operator.write"])
    try:
        missing = await c.req("message.send", {"channel": "matrix", "to": "!nosuchroom", "message": "hello?"})
        assert missing["error"]["code"] == "INVALID_REQUEST", missing
        assert missing["error"]["details"]["code"] == "TARGET_NOT_FOUND", missing
        bad_id = await c.req("message.react", {"channel": "matrix", "to": room, "messageId": "42", "emoji": "👍"})
        assert not bad_id["ok"] and "messageId" in bad_id["error"]["message"], bad_id
        mine = await c.call("message.send", {"channel": "matrix", "to": room, "message": "pin me"})
        no_right = await c.req("message.pin", {"channel": "matrix", "to": room, "messageId": mine["messageId"]})
        assert no_right["error"]["code"] == "FORBIDDEN", no_right  # the bot is no moderator in this room
    finally:
        await c.close()


async def test_a_voice_message_is_heard_and_answered_with_a_voice_message(
    tmp_path: Path, synapse: Synapse, owner: MatrixUser, me: Person
) -> None:
    """The voice capability on Matrix: a voice message (MSC3245) is transcribed before the agent sees it (the
    fake speech-to-text API), and the reply comes back as text and as a voice message spoken by espeak-ng."""
    require(shutil.which("espeak-ng") is not None, "espeak-ng is not installed")
    from tests.support.fake_voice import FakeVoiceAPI, spoken_note

    voice_bot = synapse.register("rcvoice" + secrets.token_hex(3))
    with FakeVoiceAPI(transcript="what is the weather tomorrow") as api:
        cfg = {
            "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
            "channels": {"matrix": matrix_config(synapse, voice_bot, owner)},
            "messages": {
                "tts": {"enabled": True, "auto": "inbound", "provider": "local"},
                "stt": {"provider": "openai", "openai": {"apiKey": "sk-test", "baseUrl": f"{api.url}/v1"}},
            },
        }
        d = tmp_path / "gw"
        with GatewayProcess(d, config=cfg, env={"FAKE_CLI_LOG": str(d / "cli.log")}):
            room = await me.dm(voice_bot)
            note = await asyncio.to_thread(spoken_note, "What is the weather tomorrow?")
            up, _ = await me.client.upload(
                lambda *_: note, content_type="audio/ogg", filename="voice.ogg", filesize=len(note)
            )
            assert isinstance(up, nio.UploadResponse)
            await me.say(
                room,
                "Voice message",
                msgtype="m.audio",
                url=up.content_uri,
                info={"mimetype": "audio/ogg", "size": len(note)},
                **{"org.matrix.msc3245.voice": {}, "org.matrix.msc1767.audio": {}},
            )
            text = await me.from_bot(
                voice_bot,
                room,
                lambda ev: "what is the weather tomorrow" in ev["content"].get("body", ""),
                "the answer to the transcript",
            )
            spoken = await me.from_bot(
                voice_bot,
                room,
                lambda ev: ev["content"].get("msgtype") == "m.audio",
                "the spoken reply",
            )
        run = cli_runs(d)[-1]
        assert "[voice transcript (openai): what is the weather tomorrow]" in run["prompt"]
        assert api.transcriptions
    assert "org.matrix.msc3245.voice" in spoken["content"] and spoken["content"]["info"]["mimetype"] == "audio/ogg"
    audio = await me.client.download(mxc=spoken["content"]["url"])
    assert isinstance(audio, nio.MemoryDownloadResponse) and audio.body[:4] == b"OggS"
    events = [ev for _r, ev in me.events]
    assert events.index(text) < events.index(spoken)  # the text first, the voice after it


async def test_a_bad_account_is_reported_with_the_field_named(gw: GatewayProcess) -> None:
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])

    async def broken() -> dict[str, Any] | None:
        status = await c.call("channels.status")
        for ch in status["channels"].values():
            for a in ch["accounts"]:
                if a["channel"] == "matrix" and a.get("accountId") == "broken" and a["state"] == "error":
                    return dict(a)
        return None

    try:
        base = (await c.call("config.get"))["hash"]
        patch = {"channels": {"matrix": {"accounts": {"broken": {"userId": "not-a-matrix-id"}}}}}
        await c.call("config.patch", {"patch": patch, "baseHash": base})
        account = await until(broken, what="the broken account's error")
        assert "channels.matrix.userId" in str(account), account
        base = (await c.call("config.get"))["hash"]
        await c.call("config.patch", {"patch": {"channels": {"matrix": {"accounts": None}}}, "baseHash": base})
    finally:
        await c.close()


async def test_an_encrypted_dm_is_read_and_answered_encrypted(
    tmp_path: Path, synapse: Synapse, owner: MatrixUser
) -> None:
    """``encryption: true`` (extra matrix-e2e): the bot has its own device keys, reads Megolm-encrypted messages
    and answers encrypted; the person's client (with encryption too) decrypts the answer."""
    require(nio.crypto.ENCRYPTION_ENABLED, "needs matrix-nio[e2e] (pip install -e '.[matrix-e2e]')")
    from nio.crypto.attachments import decrypt_attachment

    e2e_bot = synapse.register("rce2e" + secrets.token_hex(3))
    cfg = {
        "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
        "channels": {"matrix": matrix_config(synapse, e2e_bot, owner, encryption=True)},
    }
    d = tmp_path / "gw"
    store = tmp_path / "person-store"
    store.mkdir()
    person = nio.AsyncClient(
        synapse.url,
        owner.user_id,
        store_path=str(store),
        config=nio.AsyncClientConfig(encryption_enabled=True, store_sync_tokens=False),
    )
    try:
        person.access_token = owner.access_token
        who = await person.whoami()  # keys belong to the device the access token was issued to
        assert isinstance(who, nio.WhoamiResponse) and who.device_id, who
        person.restore_login(owner.user_id, who.device_id, owner.access_token)
        await person.keys_upload()
        with GatewayProcess(d, config=cfg, env={"FAKE_CLI_LOG": str(d / "cli.log")}) as proc:
            made = await person.room_create(
                invite=[e2e_bot.user_id],
                is_direct=True,
                initial_state=[
                    {"type": "m.room.encryption", "state_key": "", "content": {"algorithm": "m.megolm.v1.aes-sha2"}}
                ],
            )
            room = made.room_id
            seen: list[Any] = []
            since: str | None = None

            async def sync() -> None:
                nonlocal since
                resp = await person.sync(timeout=500, since=since)
                assert isinstance(resp, nio.SyncResponse), resp
                since = resp.next_batch
                if person.should_query_keys:
                    await person.keys_query()
                if person.should_claim_keys:
                    await person.keys_claim(person.get_users_for_key_claiming())
                await person.send_to_device_messages()
                for rid, info in resp.rooms.join.items():
                    seen.extend(ev for ev in info.timeline.events if rid == room)

            async def bot_joined() -> bool:
                await sync()
                return any(
                    getattr(ev, "state_key", None) == e2e_bot.user_id and getattr(ev, "membership", "") == "join"
                    for ev in seen
                )

            await until(bot_joined, what="the bot joining the encrypted DM")
            sent = await person.room_send(
                room,
                "m.room.message",
                {"msgtype": "m.text", "body": "a secret question"},
                ignore_unverified_devices=True,
            )
            assert isinstance(sent, nio.RoomSendResponse), sent

            async def answer() -> Any:
                await sync()
                return next(
                    (
                        ev
                        for ev in seen
                        if getattr(ev, "sender", "") == e2e_bot.user_id
                        and getattr(ev, "body", None) == "echo: a secret question"
                    ),
                    None,
                )

            reply = await until(answer, what="the encrypted answer")
            assert reply.decrypted  # it came encrypted and the person's device could read it

            # Files both ways, encrypted in the content repository.
            data = b"the secret plan\n"
            up, keys = await person.upload(
                lambda *_: data, content_type="text/plain", filename="plan.txt", filesize=len(data), encrypt=True
            )
            assert isinstance(up, nio.UploadResponse) and keys
            file_msg = {
                "msgtype": "m.file",
                "body": "plan.txt",
                "info": {"mimetype": "text/plain"},
                "file": {**keys, "url": up.content_uri},
            }
            await person.room_send(room, "m.room.message", file_msg, ignore_unverified_devices=True)

            async def file_answer() -> Any:
                await sync()
                return next(
                    (
                        ev
                        for ev in seen
                        if getattr(ev, "sender", "") == e2e_bot.user_id
                        and "[attachment: file" in str(getattr(ev, "body", ""))
                    ),
                    None,
                )

            await until(file_answer, what="the answer to the encrypted file")
            run = next(r for r in cli_runs(d) if "[attachment: file" in r["prompt"])
            assert data in files_named_in(run["prompt"], d), run["prompt"]  # decrypted before the agent saw it
            out = tmp_path / "report.txt"
            out.write_bytes(b"the answer, encrypted at rest\n")
            c = await operator(proc.url, proc.token or "", scopes=["operator.write"])
            try:
                await c.call("message.sendAttachment", {"channel": "matrix", "to": room, "file": str(out)})
            finally:
                await c.close()

            async def sent_file() -> Any:
                await sync()
                return next(
                    (
                        ev
                        for ev in seen
                        if getattr(ev, "sender", "") == e2e_bot.user_id and "file" in ev.source.get("content", {})
                    ),
                    None,
                )

            got = await until(sent_file, what="the bot's encrypted file")
            enc = got.source["content"]["file"]
            assert "url" not in got.source["content"]  # only the encrypted copy is in the repository
            fetched = await person.download(mxc=enc["url"])
            assert isinstance(fetched, nio.MemoryDownloadResponse) and fetched.body != out.read_bytes()
            plain = decrypt_attachment(fetched.body, enc["key"]["k"], enc["hashes"]["sha256"], enc["iv"])
            assert plain == out.read_bytes()
        assert any("a secret question" in r["prompt"] for r in cli_runs(d))
    finally:
        await person.close()


async def test_a_user_id_or_an_alias_as_the_target(
    gw: GatewayProcess, synapse: Synapse, me: Person, bot: MatrixUser
) -> None:
    """``to`` may name a person (their direct chat with the bot, created when there is none) or a room alias."""
    newcomer = Person(synapse, synapse.register("newcomer" + secrets.token_hex(3)))
    c = await operator(gw.url, gw.token or "", scopes=["operator.write"])
    try:
        await newcomer.sync()
        sent = await c.call("message.send", {"channel": "matrix", "to": newcomer.user.user_id, "message": "hello"})
        invited = await newcomer.client.sync(timeout=3000, since=newcomer.since)
        assert isinstance(invited, nio.SyncResponse) and invited.rooms.invite, (sent, invited)
        dm = next(iter(invited.rooms.invite))
        await newcomer.client.join(dm)
        await newcomer.from_bot(bot, dm, body_is("hello"), "the message in the new direct chat")
        alias_local = "team" + secrets.token_hex(3)
        made = await me.client.room_create(alias=alias_local, invite=[bot.user_id])
        await me.wait_for(
            lambda r, ev: (
                r == made.room_id and ev.get("state_key") == bot.user_id and ev["content"].get("membership") == "join"
            ),
            "the bot joining the aliased room",
        )
        alias = f"#{alias_local}:{bot.user_id.split(':', 1)[1]}"
        await c.call("message.send", {"channel": "matrix", "to": alias, "message": "via the alias"})
        await me.from_bot(bot, made.room_id, body_is("via the alias"), "the message sent to the alias")
    finally:
        await c.close()
        await newcomer.close()
