"""The ``messages.tts`` and ``messages.stt`` config sections (read live at every use).

Preferences the owner changes through ``tts.enable``/``tts.disable``/``tts.setProvider`` are stored in the
database (``gateway.voice.prefs``) and win over ``enabled`` and ``provider`` here, so they survive restarts
and edits of unrelated config.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gateway.config.sections import OpenSection, Section, secret

__all__ = ["PROVIDERS", "STT_PROVIDERS", "SttConfig", "TtsConfig"]

PROVIDERS = ("openai", "elevenlabs", "edge", "local")
STT_PROVIDERS = ("openai", "local")


class OpenAITts(Section):
    apiKey: str | None = secret("API key (default: $OPENAI_API_KEY).")
    baseUrl: str | None = Field(None, description="An OpenAI-compatible server (e.g. a local one); default: OpenAI.")
    model: str = "gpt-4o-mini-tts"
    voice: str = "alloy"
    speed: float = Field(1.0, ge=0.25, le=4.0)


class VoiceSettings(Section):
    stability: float | None = Field(None, ge=0, le=1)
    similarityBoost: float | None = Field(None, ge=0, le=1)
    style: float | None = Field(None, ge=0, le=1)
    useSpeakerBoost: bool | None = None
    speed: float | None = Field(None, ge=0.5, le=2.0)


class ElevenLabsTts(Section):
    apiKey: str | None = secret("API key (default: $ELEVENLABS_API_KEY).")
    baseUrl: str | None = Field(None, description="API address; default: ElevenLabs.")
    voiceId: str = "21m00Tcm4TlvDq8ikWAM"
    modelId: str = "eleven_multilingual_v2"
    voiceSettings: VoiceSettings = VoiceSettings()


class EdgeTts(Section):
    voice: str = "en-US-AriaNeural"
    rate: str = Field("+0%", pattern=r"^[+-]\d{1,3}%$")
    pitch: str = Field("+0Hz", pattern=r"^[+-]\d{1,4}Hz$")
    volume: str = Field("+0%", pattern=r"^[+-]\d{1,3}%$")


class LocalTts(Section):
    voice: str = Field("en-us", description="An espeak-ng voice (espeak-ng --voices).")
    wordsPerMinute: int = Field(165, ge=80, le=450)
    pitch: int = Field(50, ge=0, le=99)


class TtsConfig(OpenSection):
    enabled: bool = Field(False, description="Speak replies (see auto); tts.enable/tts.disable override this.")
    provider: str = Field("edge", description="The provider tried first: openai, elevenlabs, edge or local.")
    auto: Literal["off", "always", "inbound", "tagged"] = Field(
        "inbound", description="When replies are spoken (while enabled): always; inbound: when the user sent a "
                               "voice note; tagged: when the reply holds [[tts]]; off.")
    maxLength: int = Field(1500, ge=50, le=20_000,
                           description="Replies longer than this are spoken as their opening, the full text beside.")
    timeoutMs: int = Field(30_000, ge=1000, le=300_000, description="How long one provider may take.")
    openai: OpenAITts = OpenAITts()
    elevenlabs: ElevenLabsTts = ElevenLabsTts()
    edge: EdgeTts = EdgeTts()
    local: LocalTts = LocalTts()


class OpenAIStt(Section):
    apiKey: str | None = secret("API key (default: $OPENAI_API_KEY).")
    baseUrl: str | None = Field(None, description="An OpenAI-compatible server, e.g. a self-hosted whisper one.")
    model: str = "whisper-1"
    language: str | None = Field(None, description="ISO-639-1 hint, e.g. en")


class SttConfig(Section):
    enabled: bool = Field(True, description="Transcribe voice notes and audio files before the agent sees them.")
    provider: Literal["auto", "openai", "local"] = Field(
        "auto", description="auto: openai when it has a key, else local (PocketSphinx, English, modest accuracy).")
    maxSeconds: int = Field(600, ge=1, le=7200, description="Longer audio is not transcribed.")
    timeoutMs: int = Field(120_000, ge=1000, le=900_000)
    openai: OpenAIStt = OpenAIStt()
