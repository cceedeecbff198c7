"""Voice through a real gateway process: providers reached through their real SDKs (OpenAI, ElevenLabs)
against loopback fakes, Edge without a network, espeak-ng and PocketSphinx offline.

Audio is checked for what it is (an OGG container holding Opus, a duration), not for being "some bytes".
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import av
import pytest

from tests.support.fake_voice import FakeVoiceAPI
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.timeout(120)


def voice_config(api: FakeVoiceAPI, **tts: Any) -> dict[str, Any]:
    return {"messages": {
        "tts": {"provider": "local", "openai": {"apiKey": "sk-test", "baseUrl": f"{api.url}/v1"},
                "elevenlabs": {"apiKey": "el-test", "baseUrl": api.url, "voiceId": "voice123"}, **tts},
        "stt": {"provider": "openai", "openai": {"apiKey": "sk-test", "baseUrl": f"{api.url}/v1"}}}}


@pytest.fixture(scope="module")
def api() -> Iterator[FakeVoiceAPI]:
    with FakeVoiceAPI() as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(api: FakeVoiceAPI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with GatewayProcess(tmp_path_factory.mktemp("voice"), config=voice_config(api)) as gw:
        yield gw


@pytest.fixture
async def admin(gateway: GatewayProcess, api: FakeVoiceAPI) -> AsyncIterator[RawClient]:
    client = await operator(gateway.url, gateway.token or "")
    api.failures.clear()
    yield client
    await client.close()


def probe(path: str) -> tuple[str, str, float]:
    """(container, codec, seconds) of an audio file, read back with PyAV."""
    with av.open(path) as container:
        stream = container.streams.audio[0]
        seconds = sum(f.samples / f.sample_rate for f in container.decode(audio=0))
        return container.format.name, stream.codec_context.name, seconds


async def test_the_local_provider_speaks_a_real_voice_note_offline(admin: RawClient) -> None:
    await admin.call("tts.setProvider", {"provider": "local"})
    out = await admin.call("tts.convert", {"text": "Your build finished, and all tests passed.", "channel": "telegram"})
    assert out["provider"] == "local" and out["voiceCompatible"] is True and out["fallbacks"] == []
    container, codec, seconds = await asyncio.to_thread(probe, out["audioPath"])
    assert (container, codec) == ("ogg", "opus") and seconds > 1.0
    assert abs(out["durationS"] - seconds) < 0.1


async def test_openai_is_asked_through_its_sdk_and_its_audio_becomes_opus(admin: RawClient, api: FakeVoiceAPI) -> None:
    await admin.call("tts.setProvider", {"provider": "openai"})
    out = await admin.call("tts.convert", {"text": "Hello from the fake"})
    assert out["provider"] == "openai"
    assert api.speech[-1] == {"model": "gpt-4o-mini-tts", "voice": "alloy", "input": "Hello from the fake",
                              "response_format": "opus", "speed": 1.0}
    container, codec, seconds = await asyncio.to_thread(probe, out["audioPath"])
    assert (container, codec) == ("ogg", "opus") and 0.5 < seconds < 0.7  # the fake's 0.6 s tone


async def test_elevenlabs_request_shape(admin: RawClient, api: FakeVoiceAPI) -> None:
    await admin.call("tts.setProvider", {"provider": "elevenlabs"})
    out = await admin.call("tts.convert", {"text": "Eleven voices"})
    assert out["provider"] == "elevenlabs"
    sent = api.eleven[-1]
    assert sent["voiceId"] == "voice123" and sent["text"] == "Eleven voices"
    assert sent["model_id"] == "eleven_multilingual_v2" and "output_format=mp3_44100_64" in sent["query"]


async def test_each_failure_falls_through_with_its_reason(admin: RawClient, api: FakeVoiceAPI) -> None:
    api.fail("elevenlabs", 401)
    api.fail("openai", 429)
    await admin.call("tts.setProvider", {"provider": "elevenlabs"})
    out = await admin.call("tts.convert", {"text": "Still heard"})
    # elevenlabs (refused key) -> openai (quota) -> edge (no network here) -> local
    assert out["provider"] == "local"
    assert [(a["provider"], a["kind"]) for a in out["fallbacks"]] == [
        ("elevenlabs", "auth"), ("openai", "quota"), ("edge", "network")]
    assert "sk-test" not in str(out) and "el-test" not in str(out)


async def test_all_failing_is_unavailable_listing_each_reason(admin: RawClient, api: FakeVoiceAPI) -> None:
    api.fail("elevenlabs", 500)
    api.fail("openai", 401)
    h = (await admin.call("config.get"))["hash"]
    await admin.call("config.patch", {"patch": {"messages": {"tts": {"local": {"voice": "xx-nope"}}}}, "baseHash": h})
    try:
        failed = await admin.req("tts.convert", {"text": "nobody can say this"})
        assert failed["error"]["code"] == "UNAVAILABLE"
        message = failed["error"]["message"]
        for name in ("openai: the key was refused", "elevenlabs:", "edge:", "local: espeak-ng failed"):
            assert name in message, message
    finally:
        h = (await admin.call("config.get"))["hash"]
        await admin.call("config.patch", {"patch": {"messages": {"tts": {"local": {"voice": "en-us"}}}},
                                          "baseHash": h})


async def test_an_unknown_provider_is_refused_naming_the_valid_ones(admin: RawClient) -> None:
    refused = await admin.req("tts.setProvider", {"provider": "siri"})
    assert refused["error"]["code"] == "INVALID_REQUEST"
    assert "openai, elevenlabs, edge, local" in refused["error"]["message"]


async def test_speech_to_text_through_the_openai_sdk(admin: RawClient, api: FakeVoiceAPI) -> None:
    spoken = await admin.call("tts.convert", {"text": "anything"})
    heard = await admin.call("stt.transcribe", {"path": spoken["audioPath"]})
    assert heard["text"] == api.transcript and heard["provider"] == "openai" and heard["durationS"] > 0
    assert api.transcriptions[-1]["model"] == "whisper-1"
    missing = await admin.req("stt.transcribe", {"path": "/nonexistent.ogg"})
    assert missing["error"]["code"] == "INVALID_REQUEST" and "path" in missing["error"]["message"]
    private = await admin.req("stt.transcribe", {"url": "http://127.0.0.1:9/a.ogg"})
    assert "private or reserved" in private["error"]["message"]


async def test_offline_round_trip_local_tts_then_local_stt(admin: RawClient) -> None:
    await admin.call("tts.setProvider", {"provider": "local"})
    h = (await admin.call("config.get"))["hash"]
    await admin.call("config.patch", {"patch": {"messages": {"stt": {"provider": "local"}}}, "baseHash": h})
    try:
        spoken = await admin.call("tts.convert", {"text": "Open the window please."})
        heard = await admin.call("stt.transcribe", {"path": spoken["audioPath"]})
        assert heard["provider"] == "local" and heard["text"].strip()  # accuracy is measured, not asserted
        status = await admin.call("stt.status")
        assert status == {"enabled": True, "provider": "local"}
    finally:
        h = (await admin.call("config.get"))["hash"]
        await admin.call("config.patch", {"patch": {"messages": {"stt": {"provider": "openai"}}}, "baseHash": h})


async def test_preferences_survive_a_restart(api: FakeVoiceAPI, tmp_path: Path) -> None:
    gw = GatewayProcess(tmp_path / "gw", config=voice_config(api))
    with gw:
        client = await operator(gw.url, gw.token or "")
        await client.call("tts.enable")
        await client.call("tts.setProvider", {"provider": "elevenlabs"})
        await client.close()
    with gw:
        client = await operator(gw.url, gw.token or "")
        status = await client.call("tts.status")
        await client.close()
    assert status["enabled"] is True and status["provider"] == "elevenlabs"
    assert status["fallbacks"][:2] == ["openai", "edge"]
