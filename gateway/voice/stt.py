"""Speech to text for voice messages: ``openai`` (the transcription endpoint, any compatible server) or
``local`` (PocketSphinx with its bundled English model: no server, no network, modest accuracy).

``openai`` with ``baseUrl`` pointed at a self-hosted whisper server is the way to good offline
transcription; ``local`` is the fallback that always works. Measured accuracy is in docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from gateway.extras import install_hint
from gateway.voice import codec
from gateway.voice.config import SttConfig

__all__ = ["SttFailure", "Transcript", "pick", "transcribe"]

LOCAL_RATE = 16_000


class SttFailure(Exception):
    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Transcript:
    text: str
    provider: str
    duration_s: float
    took_ms: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "provider": self.provider, "durationS": round(self.duration_s, 2),
                "tookMs": round(self.took_ms, 1)}


def _openai_key(cfg: SttConfig) -> str | None:
    return cfg.openai.apiKey or os.environ.get("OPENAI_API_KEY")


def pick(cfg: SttConfig) -> str:
    """The provider ``auto`` means here: openai when it has a key, else local."""
    if cfg.provider != "auto":
        return cfg.provider
    return "openai" if _openai_key(cfg) else "local"


async def _openai(cfg: SttConfig, data: bytes, name: str) -> str:
    import openai

    c = cfg.openai
    client = openai.AsyncOpenAI(api_key=_openai_key(cfg) or "none", base_url=c.baseUrl, max_retries=0,
                                timeout=cfg.timeoutMs / 1000)
    try:
        if c.language:
            result = await client.audio.transcriptions.create(model=c.model, file=(name, data), language=c.language)
        else:
            result = await client.audio.transcriptions.create(model=c.model, file=(name, data))
        return str(result.text)
    except openai.APITimeoutError:
        raise SttFailure("timeout", "the transcription request timed out") from None
    except openai.APIConnectionError as exc:
        raise SttFailure("network", f"cannot reach {c.baseUrl or 'api.openai.com'}: {exc}") from None
    except openai.APIStatusError as exc:
        raise SttFailure("auth" if exc.status_code in (401, 403) else "error",
                         f"the transcription service answered {exc.status_code}: {str(exc.message)[:200]}") from None
    finally:
        await client.close()


class _Sphinx:
    """One PocketSphinx decoder, loaded once (about 0.3 s) and used by one transcription at a time."""

    decoder: Any = None
    lock = threading.Lock()

    @classmethod
    def run(cls, pcm: bytes) -> str:
        with cls.lock:
            if cls.decoder is None:
                from pocketsphinx import Decoder

                cls.decoder = Decoder(samprate=LOCAL_RATE, loglevel="FATAL")
            d = cls.decoder
            d.start_utt()
            d.process_raw(pcm, full_utt=True)
            d.end_utt()
            hyp = d.hyp()
            return str(hyp.hypstr) if hyp is not None else ""


def _local(cfg: SttConfig, data: bytes) -> str:
    try:
        import pocketsphinx  # noqa: F401
    except ImportError:
        raise SttFailure("missing", f"pocketsphinx is not installed ({install_hint('tts')})") from None
    pcm = codec.to_pcm16(data, LOCAL_RATE, max_seconds=cfg.maxSeconds)
    return _Sphinx.run(pcm)


async def transcribe(cfg: SttConfig, data: bytes, name: str = "audio.ogg") -> Transcript:
    """Transcribe audio bytes with the configured provider; ``SttFailure`` says why not."""
    started = time.perf_counter()
    try:
        seconds = await asyncio.to_thread(codec.duration_s, data)
    except ValueError as exc:
        raise SttFailure("error", f"cannot read the audio: {exc}") from None
    if seconds > cfg.maxSeconds:
        raise SttFailure("error", f"the audio is {seconds:.0f} s long; at most {cfg.maxSeconds} s are transcribed")
    provider = pick(cfg)
    try:
        if provider == "openai":
            text = await _openai(cfg, data, name)
        else:
            text = await asyncio.wait_for(asyncio.to_thread(_local, cfg, data), cfg.timeoutMs / 1000)
    except TimeoutError:
        raise SttFailure("timeout", "transcription took too long") from None
    except ValueError as exc:
        raise SttFailure("error", str(exc)) from None
    return Transcript(text.strip(), provider, seconds, (time.perf_counter() - started) * 1000)
