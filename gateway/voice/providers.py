"""Text-to-speech providers behind one interface: ``synthesize(text) -> audio bytes`` or ``TtsFailure``.

- ``openai``: the openai SDK's ``audio.speech`` (model, voice, speed; ``baseUrl`` reaches any
  OpenAI-compatible server, a local one too);
- ``elevenlabs``: the elevenlabs SDK's ``text_to_speech.convert`` (voice id, model id, voice settings);
- ``edge``: Microsoft Edge's read-aloud voices through edge-tts (no key; needs the network);
- ``local``: espeak-ng, offline: speech on a machine with no key and no network.

Each failure is classified (``network``, ``auth``, ``quota``, ``timeout``, ``missing``, ``error``) so the
service can say in one line why each provider was passed over. Keys are read from the config or the
environment and never logged or returned.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.extras import install_hint
from gateway.voice.config import TtsConfig

__all__ = ["PROVIDER_CLASSES", "TtsFailure", "TtsProvider", "make_provider"]


class TtsFailure(Exception):
    """Why one provider did not speak: ``kind`` (network, auth, quota, timeout, missing, error) and a reason."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


class TtsProvider(Protocol):
    name: str

    def configured(self) -> tuple[bool, str | None]:
        """Whether it can be tried at all, and if not why (no key, no binary, no package)."""

    async def synthesize(self, text: str) -> bytes: ...

    def describe(self) -> dict[str, Any]: ...


def _status_failure(status: int | None, message: str) -> TtsFailure:
    if status in (401, 403):
        return TtsFailure("auth", f"the key was refused ({status})")
    if status == 429 or "quota" in message.lower():
        return TtsFailure("quota", f"rate limit or quota reached ({status or 'quota'})")
    return TtsFailure("error", f"the service answered {status}: {message[:200]}" if status else message[:200])


@dataclass
class OpenAIProvider:
    cfg: TtsConfig
    name: str = "openai"

    def _key(self) -> str | None:
        return self.cfg.openai.apiKey or os.environ.get("OPENAI_API_KEY")

    def configured(self) -> tuple[bool, str | None]:
        return (True, None) if self._key() else (False, "no API key (messages.tts.openai.apiKey or OPENAI_API_KEY)")

    def describe(self) -> dict[str, Any]:
        c = self.cfg.openai
        return {"model": c.model, "voice": c.voice, "baseUrl": c.baseUrl}

    async def synthesize(self, text: str) -> bytes:
        import openai

        c = self.cfg.openai
        client = openai.AsyncOpenAI(api_key=self._key(), base_url=c.baseUrl, max_retries=0,
                                    timeout=self.cfg.timeoutMs / 1000)
        try:
            response = await client.audio.speech.create(model=c.model, voice=c.voice, input=text,
                                                        response_format="opus", speed=c.speed)
            return response.content
        except openai.APITimeoutError:
            raise TtsFailure("timeout", "the request timed out") from None
        except openai.APIConnectionError as exc:
            raise TtsFailure("network", f"cannot reach {c.baseUrl or 'api.openai.com'}: {exc}") from None
        except openai.APIStatusError as exc:
            raise _status_failure(exc.status_code, str(exc.message)) from None
        finally:
            await client.close()


@dataclass
class ElevenLabsProvider:
    cfg: TtsConfig
    name: str = "elevenlabs"

    def _key(self) -> str | None:
        return self.cfg.elevenlabs.apiKey or os.environ.get("ELEVENLABS_API_KEY")

    def configured(self) -> tuple[bool, str | None]:
        try:
            import elevenlabs  # noqa: F401
        except ImportError:
            return False, f"the elevenlabs package is not installed ({install_hint('tts')})"
        return (True, None) if self._key() else (False, "no API key (messages.tts.elevenlabs.apiKey or "
                                                        "ELEVENLABS_API_KEY)")

    def describe(self) -> dict[str, Any]:
        c = self.cfg.elevenlabs
        return {"voiceId": c.voiceId, "modelId": c.modelId, "baseUrl": c.baseUrl}

    async def synthesize(self, text: str) -> bytes:
        import httpx
        from elevenlabs.client import AsyncElevenLabs
        from elevenlabs.core.api_error import ApiError
        from elevenlabs.types import VoiceSettings

        c = self.cfg.elevenlabs
        settings = c.voiceSettings
        client = AsyncElevenLabs(api_key=self._key(), base_url=c.baseUrl, timeout=self.cfg.timeoutMs / 1000)
        voice = VoiceSettings(stability=settings.stability, similarity_boost=settings.similarityBoost,
                              style=settings.style, use_speaker_boost=settings.useSpeakerBoost,
                              speed=settings.speed) if settings.model_dump(exclude_none=True) else None
        try:
            chunks = [chunk async for chunk in client.text_to_speech.convert(
                c.voiceId, text=text, model_id=c.modelId, output_format="mp3_44100_64", voice_settings=voice)]
            return b"".join(chunks)
        except ApiError as exc:
            raise _status_failure(exc.status_code, str(exc.body)) from None
        except httpx.TimeoutException:
            raise TtsFailure("timeout", "the request timed out") from None
        except httpx.TransportError as exc:
            raise TtsFailure("network", f"cannot reach {c.baseUrl or 'api.elevenlabs.io'}: {exc}") from None


@dataclass
class EdgeProvider:
    cfg: TtsConfig
    name: str = "edge"

    def configured(self) -> tuple[bool, str | None]:
        try:
            import edge_tts  # noqa: F401
        except ImportError:
            return False, f"the edge-tts package is not installed ({install_hint('tts')})"
        return True, None

    def describe(self) -> dict[str, Any]:
        return self.cfg.edge.model_dump()

    async def synthesize(self, text: str) -> bytes:
        import edge_tts

        c = self.cfg.edge
        talk = edge_tts.Communicate(text, c.voice, rate=c.rate, pitch=c.pitch, volume=c.volume)
        audio = bytearray()
        try:
            async for chunk in talk.stream():
                if chunk["type"] == "audio":
                    audio += chunk["data"]
        except OSError as exc:  # aiohttp's connection errors are OSErrors: offline, DNS, refused
            raise TtsFailure("network", f"cannot reach the Edge speech service: {exc}") from None
        except edge_tts.exceptions.EdgeTTSException as exc:
            raise TtsFailure("error", str(exc)) from None
        if not audio:
            raise TtsFailure("error", "the Edge speech service returned no audio")
        return bytes(audio)


@dataclass
class LocalProvider:
    cfg: TtsConfig
    name: str = "local"

    def configured(self) -> tuple[bool, str | None]:
        return (True, None) if shutil.which("espeak-ng") else (False, "espeak-ng is not installed "
                                                                     "(apt-get install espeak-ng)")

    def describe(self) -> dict[str, Any]:
        return {**self.cfg.local.model_dump(), "binary": shutil.which("espeak-ng")}

    async def synthesize(self, text: str) -> bytes:
        c = self.cfg.local
        binary = shutil.which("espeak-ng")
        if binary is None:
            raise TtsFailure("missing", "espeak-ng is not installed")
        # The text goes on stdin, never on the command line (no argument injection, no length limit).
        proc = await asyncio.create_subprocess_exec(
            binary, "--stdin", "--stdout", "-v", c.voice, "-s", str(c.wordsPerMinute), "-p", str(c.pitch),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate(text.encode())
        if proc.returncode != 0 or len(out) <= 44:
            raise TtsFailure("error", f"espeak-ng failed: {err.decode(errors='replace').strip()[:200] or 'no audio'}")
        return out


PROVIDER_CLASSES: dict[str, type] = {"openai": OpenAIProvider, "elevenlabs": ElevenLabsProvider,
                                     "edge": EdgeProvider, "local": LocalProvider}


def make_provider(name: str, cfg: TtsConfig) -> TtsProvider:
    provider: TtsProvider = PROVIDER_CLASSES[name](cfg)
    return provider
