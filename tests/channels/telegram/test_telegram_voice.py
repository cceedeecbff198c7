"""A voice conversation on Telegram: the user's voice note is transcribed before the stand-in agent sees it,
and the reply comes back as text and as a voice note (``sendVoice`` with OGG/Opus bytes).

The Bot API is the loopback fake; transcription goes through the openai SDK to the fake voice API; the
reply is spoken offline by espeak-ng. Audio is decoded with PyAV to check what it is.
"""

from __future__ import annotations

import asyncio
import io
import shutil
from collections.abc import Iterator

import av
import pytest

from tests.support.fake_telegram import FakeTelegram, cli_runs, module_fake, telegram_gateway
from tests.support.fake_voice import FakeVoiceAPI, spoken_note
from tests.support.gateway_proc import GatewayProcess
from tests.support.requires import require
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(120)

OWNER = 111
fake = module_fake()


@pytest.fixture(scope="module")
def api() -> Iterator[FakeVoiceAPI]:
    with FakeVoiceAPI(transcript="what is the weather tomorrow") as voice_api:
        yield voice_api


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram, api: FakeVoiceAPI) -> Iterator[GatewayProcess]:
    config = {"messages": {
        "tts": {"enabled": True, "auto": "inbound", "provider": "local"},
        "stt": {"provider": "openai", "openai": {"apiKey": "sk-test", "baseUrl": f"{api.url}/v1"}}}}
    with telegram_gateway(tmp_path_factory.mktemp("tg-voice") / "gw", fake, config=config,
                          ownerAllowFrom=[OWNER]) as proc:
        yield proc


def opus_seconds(data: bytes) -> float:
    with av.open(io.BytesIO(data)) as container:
        assert container.format.name == "ogg"
        assert container.streams.audio[0].codec_context.name == "opus"
        return sum(f.samples / f.sample_rate for f in container.decode(audio=0))


async def test_a_voice_note_is_heard_and_answered_with_a_voice_note(gw: GatewayProcess, fake: FakeTelegram,
                                                                     api: FakeVoiceAPI) -> None:
    require(shutil.which("espeak-ng") is not None, "espeak-ng is not installed")
    await fake.wait_polling()
    fake.files["VN1"] = await asyncio.to_thread(spoken_note, "What is the weather tomorrow?")
    fake.user_message(chat_id=OWNER, user_id=OWNER,
                      voice={"file_id": "VN1", "file_unique_id": "vn1", "duration": 2, "mime_type": "audio/ogg",
                             "file_size": len(fake.files["VN1"])})
    # The stand-in agent echoes its prompt: the transcript is in what it saw.
    text = await fake.wait_call("sendMessage", lambda c: "what is the weather tomorrow" in c.params["text"])
    run = cli_runs(gw.state_dir)[-1]
    assert "[voice transcript (openai): what is the weather tomorrow]" in run["prompt"]
    assert "[attachment: voice attachments/vn1.oga]" in run["prompt"]  # and the audio itself is there
    assert api.transcriptions and api.transcriptions[-1]["bytes"] > len(fake.files["VN1"])

    voice = await fake.wait_call("sendVoice", timeout=30)
    assert voice.params["chat_id"] in (OWNER, str(OWNER))
    seconds = await asyncio.to_thread(opus_seconds, voice.files["voice"]["data"])
    assert seconds > 1.0
    assert fake.calls.index(voice) > fake.calls.index(text)  # the text first, the voice after it


async def test_a_failed_transcription_is_told_and_the_message_still_reaches_the_agent(
        gw: GatewayProcess, fake: FakeTelegram, api: FakeVoiceAPI) -> None:
    api.fail("stt", 500)
    try:
        before = len(cli_runs(gw.state_dir))
        fake.files["VN2"] = await asyncio.to_thread(spoken_note, "hello")
        fake.user_message(chat_id=OWNER, user_id=OWNER, caption="voice test two",
                          voice={"file_id": "VN2", "file_unique_id": "vn2", "duration": 1, "mime_type": "audio/ogg",
                                 "file_size": len(fake.files["VN2"])})
        notice = await fake.wait_call("sendMessage", lambda c: "could not transcribe" in c.params["text"])
        assert "500" in notice.params["text"]
        # The message still became a turn, with the audio and a note of what went wrong.
        run = await until(lambda: next((r for r in cli_runs(gw.state_dir)[before:]
                                        if "voice test two" in r["prompt"]), None), 20, "the turn")
        assert "[voice transcript unavailable:" in run["prompt"]
        assert "[attachment: voice attachments/vn2.oga]" in run["prompt"]
    finally:
        api.fail("stt", None)
