"""Discord across ``kill -9``: what arrived while the gateway was down is read from the channel's history when
it is back, and answered once (real gateway process, discord.py, the loopback Discord fake).

Discord does not redeliver to a new session: without the catch-up these messages would simply be lost.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.fake_discord import FakeDiscord, snowflake
from tests.support.gateway_proc import ROOT, GatewayProcess

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = await FakeDiscord().start()
    yield server
    await server.stop()


def posted(fake: FakeDiscord, channel_id: str, text: str) -> int:
    path = f"/channels/{channel_id}/messages"
    return sum(1 for r in fake.requests if r.method == "POST" and r.path == path
               and text in ((r.json or {}).get("content") or ""))


async def test_messages_missed_while_down_are_read_back_and_answered_once(fake: FakeDiscord, tmp_path: Path) -> None:
    config = {
        "agents": {"list": [{"id": "main", "command": [sys.executable, str(ROOT / "tests/support/fake_cli.py")]}]},
        "channels": {"discord": fake.config() | {"dmPolicy": "open", "groupPolicy": "open"}},
        "session": {"dmScope": "per-channel-peer"},
    }
    gw = GatewayProcess(tmp_path / "gw", config=config, env={"FAKE_CLI_LOG": str(tmp_path / "cli.log")})
    dm, guild = snowflake(), fake.text_channel_id
    bot_id = fake.bot["id"]
    try:
        await asyncio.to_thread(gw.start)
        await asyncio.wait_for(fake.identified.wait(), 20)
        first = fake.message_payload(content="before going down", author_id="7001", channel_id=dm)
        await fake.dispatch("MESSAGE_CREATE", first)
        await fake.wait_posted(dm, "echo: before going down", timeout=20)
        in_guild = fake.message_payload(content=f"<@{bot_id}> guild before", author_id="7002", guild=True,
                                        mention_bot=True)
        await fake.dispatch("MESSAGE_CREATE", in_guild)
        await fake.wait_posted(guild, "echo: [alice] guild before", timeout=20)

        await asyncio.sleep(2)  # both turns finished and recorded (a turn killed mid-reply is retried by run recovery)
        await asyncio.to_thread(gw.stop, signal.SIGKILL)
        # While it is down: three messages that only Discord's history will ever show.
        fake.message_payload(content="missed one", author_id="7001", channel_id=dm)
        fake.message_payload(content="missed two", author_id="7001", channel_id=dm)
        fake.message_payload(content=f"<@{bot_id}> missed in guild", author_id="7002", guild=True, mention_bot=True)
        fake.identified.clear()

        await asyncio.to_thread(gw.start)
        await asyncio.wait_for(fake.identified.wait(), 20)
        await fake.wait_posted(dm, "echo: missed one", timeout=30)
        await fake.wait_posted(dm, "echo: missed two", timeout=30)
        await fake.wait_posted(guild, "echo: [alice] missed in guild", timeout=30)
        read = [r for r in fake.requests if r.method == "GET" and r.path == f"/channels/{dm}/messages"]
        assert read and read[0].query["after"] == first["id"]  # from the last message handled there

        # A message arriving live now is answered as usual, and nothing is answered twice.
        await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="after coming back", author_id="7001",
                                                                   channel_id=dm))
        await fake.wait_posted(dm, "echo: after coming back", timeout=20)
        await asyncio.sleep(1.5)
        for text, where in (("before going down", dm), ("missed one", dm), ("missed two", dm),
                            ("after coming back", dm), ("[alice] guild before", guild),
                            ("[alice] missed in guild", guild)):
            assert posted(fake, where, f"echo: {text}") == 1, text

        # Another restart reads the history again and answers nothing a second time.
        await asyncio.to_thread(gw.stop, signal.SIGKILL)
        fake.identified.clear()
        await asyncio.to_thread(gw.start)
        await asyncio.wait_for(fake.identified.wait(), 20)
        await asyncio.sleep(3)
        assert posted(fake, dm, "echo: missed one") == posted(fake, dm, "echo: after coming back") == 1
    finally:
        await asyncio.to_thread(gw.stop)


async def test_a_message_cut_off_mid_handling_is_replayed_from_the_journal(fake: FakeDiscord, tmp_path: Path) -> None:
    """A message taken in but not yet handled when the gateway dies (its attachment still downloading) is in the
    inbound journal: the next start fetches it again by id and answers it once. Its conversation has no message
    handled before, so the history catch-up has no point to resume from: only the journal can bring it back."""
    config = {
        "agents": {"list": [{"id": "main", "command": [sys.executable, str(ROOT / "tests/support/fake_cli.py")]}]},
        "channels": {"discord": fake.config() | {"dmPolicy": "open"}},
    }
    gw = GatewayProcess(tmp_path / "gw", config=config, env={"FAKE_CLI_LOG": str(tmp_path / "cli.log")})
    dm = snowflake()
    slow = fake.attachment("notes.txt", b"slow to arrive", "text/plain")
    fake.cdn_delays[slow["id"]] = 60.0
    try:
        await asyncio.to_thread(gw.start)
        await asyncio.wait_for(fake.identified.wait(), 20)
        cut_off = fake.message_payload(content="caught mid-download", author_id="7101", channel_id=dm,
                                       attachments=[slow])
        await fake.dispatch("MESSAGE_CREATE", cut_off)
        await asyncio.sleep(1.5)  # journalled, its attachment downloading
        await asyncio.to_thread(gw.stop, signal.SIGKILL)
        assert posted(fake, dm, "caught mid-download") == 0

        fake.cdn_delays[slow["id"]] = 0.0
        fake.identified.clear()
        await asyncio.to_thread(gw.start)
        await fake.wait_posted(dm, "echo: caught mid-download", timeout=30)
        again = f"/channels/{dm}/messages/{cut_off['id']}"
        assert any(r.method == "GET" and r.path == again for r in fake.requests), "the replay read it again by id"
        await asyncio.sleep(1.5)
        assert posted(fake, dm, "echo: caught mid-download") == 1
        assert (gw.state_dir / "media" / "discord" / "default" / f"{slow['id']}-notes.txt").read_bytes() == \
            b"slow to arrive"
    finally:
        await asyncio.to_thread(gw.stop)
