"""The voice service: speak with the first provider that works, transcribe voice messages, decide when a
reply is spoken.

Speaking tries the active provider first (the owner's choice, else ``messages.tts.provider``), then every
other configured one in the order openai, elevenlabs, edge, local; each failure is recorded with its
reason, and all failing answers ``UNAVAILABLE`` listing them. Whatever the provider returns is re-encoded
(``codec``) for the channel it is for (``FORMAT_FOR_CHANNEL``: OGG/Opus voice notes for Telegram and
Discord, MP3 for the web chat, which Safari must play too), and written under ``<state dir>/outbound/voice/``
(pruned after a week) so ``message_send_attachment`` can deliver it.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from gateway.composition.ports import VOICE
from gateway.composition.services import Key
from gateway.extras import require
from gateway.paths import outbound_dir
from gateway.protocol import InvalidRequest, Unavailable
from gateway.voice import codec, prefs, stt
from gateway.voice.config import PROVIDERS, TtsConfig
from gateway.voice.providers import TtsFailure, make_provider

if TYPE_CHECKING:
    from gateway.composition.hosts import CapabilityHost
    from gateway.config import ConfigStore
    from gateway.store import Database

__all__ = ["FORMAT_FOR_CHANNEL", "Speech", "VoiceService", "format_for_channel", "spoken_text", "start"]

log = structlog.get_logger("gateway.voice")

KEEP_AUDIO_S = 7 * 24 * 3600
TAG = re.compile(r"\[\[\s*tts\s*\]\]", re.IGNORECASE)

FORMAT_FOR_CHANNEL: dict[str, str] = {
    "telegram": "ogg-opus",  # sendVoice takes OGG/Opus only; anything else is sent as a plain file
    "discord": "ogg-opus",  # Discord's voice messages are OGG/Opus; its client plays them inline
    "matrix": "ogg-opus",  # MSC3245 voice messages are OGG/Opus (channels/matrix marks them so)
    "whatsapp": "ogg-opus",  # WhatsApp plays OGG/Opus audio as a voice message (plugins/whatsapp marks it so)
    "slack": "mp3",  # Slack plays MP3 files inline in every client (it has no voice-note format for bots)
    "webchat": "mp3",  # an <audio> element in every browser, Safari included
}


def format_for_channel(channel: str | None) -> codec.AudioFormat:
    """The audio format a channel wants; no channel means a voice note. An unknown one is refused by name."""
    if channel is None:
        return codec.FORMATS["ogg-opus"]
    name = FORMAT_FOR_CHANNEL.get(channel.strip().lower())
    if name is None:
        raise InvalidRequest(f"invalid tts.convert params: at /channel: unknown channel '{channel}' (valid: "
                             f"{', '.join(FORMAT_FOR_CHANNEL)})", details={"field": "channel"})
    return codec.FORMATS[name]


@dataclass(frozen=True, slots=True)
class Speech:
    path: str
    provider: str
    duration_s: float
    attempts: list[dict[str, str]]
    took_ms: float
    summarized: bool
    format: codec.AudioFormat = codec.FORMATS["ogg-opus"]

    @property
    def mime(self) -> str:
        return self.format.mime

    def to_dict(self) -> dict[str, Any]:
        fmt = self.format
        return {"audioPath": self.path, "provider": self.provider, "format": fmt.container, "codec": fmt.codec,
                "mimeType": fmt.mime, "durationS": round(self.duration_s, 2), "voiceCompatible": fmt.voice_note,
                "summarized": self.summarized, "fallbacks": self.attempts, "tookMs": round(self.took_ms, 1)}


def spoken_text(text: str, max_length: int) -> tuple[str, bool]:
    """What is read out: the reply without Markdown clutter, or, when longer than ``max_length``, its
    opening cut at a sentence end plus a pointer to the text (True: it was shortened)."""
    clean = TAG.sub("", text)
    clean = re.sub(r"```.*?```", " (code in the text) ", clean, flags=re.DOTALL)
    clean = re.sub(r"`([^`]*)`", r"\1", clean)
    clean = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", clean)
    clean = re.sub(r"[*_#>|]+", " ", clean)
    clean = re.sub(r"\s+", " ", clean).strip()
    if len(clean) <= max_length:
        return clean, False
    cut = clean[:max_length]
    end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    head = cut[: end + 1] if end > max_length // 3 else cut.rsplit(" ", 1)[0] + "…"
    return f"{head} The full answer is in the text.", True


class VoiceService:
    """Speaks replies and hears voice notes, with the owner's stored choices over the config's."""

    def __init__(self, config: ConfigStore, db: Database, state_dir: Path) -> None:
        self._config = config
        self._db = db
        self.state_dir = state_dir

    @property
    def cfg(self) -> TtsConfig:
        return self._config.config.messages.tts

    # -- preferences ---------------------------------------------------------------------------

    async def settings(self) -> tuple[bool, str]:
        """(enabled, active provider): the owner's stored choice, else the config."""
        stored = await prefs.load(self._db)
        enabled = stored.enabled if stored.enabled is not None else self.cfg.enabled
        provider = stored.provider if stored.provider is not None else self.cfg.provider
        return enabled, provider if provider in PROVIDERS else "local"

    async def set_enabled(self, enabled: bool) -> dict[str, Any]:
        await prefs.save(self._db, enabled=enabled)
        return await self.status()

    async def set_provider(self, provider: str) -> dict[str, Any]:
        if provider not in PROVIDERS:
            raise InvalidRequest(f"provider: unknown provider {provider!r} (valid: {', '.join(PROVIDERS)})",
                                 details={"field": "provider", "valid": list(PROVIDERS)})
        await prefs.save(self._db, provider=provider)
        return await self.status()

    def order(self, active: str) -> list[str]:
        return [active, *(p for p in PROVIDERS if p != active)]

    async def status(self) -> dict[str, Any]:
        enabled, active = await self.settings()
        fallbacks = [p for p in self.order(active)[1:] if make_provider(p, self.cfg).configured()[0]]
        stt_cfg = self._config.config.messages.stt
        return {"enabled": enabled, "provider": active, "fallbacks": fallbacks, "auto": self.cfg.auto,
                "maxLength": self.cfg.maxLength, "format": "ogg/opus",
                "stt": {"enabled": stt_cfg.enabled, "provider": stt.pick(stt_cfg)}}

    async def providers(self) -> dict[str, Any]:
        _enabled, active = await self.settings()
        out = []
        for name in PROVIDERS:
            provider = make_provider(name, self.cfg)
            ok, why = provider.configured()
            out.append({"id": name, "configured": ok, "active": name == active, **({"missing": why} if why else {}),
                        "settings": provider.describe()})
        return {"providers": out, "active": active}

    # -- speaking ------------------------------------------------------------------------------

    async def speak(self, text: str, fmt: codec.AudioFormat | None = None, *,
                    session_key: str | None = None) -> Speech:
        """Text -> an audio file in ``fmt`` (OGG/Opus unless told), from the first provider that works
        (``Unavailable`` lists every reason), in ``session_key``'s outbound folder (the one its runs may send)."""
        fmt = fmt or codec.FORMATS["ogg-opus"]
        require("tts", "text to speech")
        if not text.strip():
            raise InvalidRequest("text: nothing to speak", details={"field": "text"})
        spoken, summarized = spoken_text(text, self.cfg.maxLength)
        _enabled, active = await self.settings()
        attempts: list[dict[str, str]] = []
        started = time.perf_counter()
        for name in self.order(active):
            provider = make_provider(name, self.cfg)
            ok, why = provider.configured()
            if not ok:
                if name == active:
                    attempts.append({"provider": name, "kind": "missing", "reason": str(why)})
                continue
            try:
                raw = await asyncio.wait_for(provider.synthesize(spoken), self.cfg.timeoutMs / 1000)
                encoded = await asyncio.to_thread(codec.encode, raw, fmt)
            except TtsFailure as exc:
                attempts.append({"provider": name, "kind": exc.kind, "reason": exc.reason})
            except TimeoutError:
                attempts.append({"provider": name, "kind": "timeout", "reason": f"no audio in {self.cfg.timeoutMs} ms"})
            except ValueError as exc:  # audio we could not decode
                attempts.append({"provider": name, "kind": "error", "reason": f"unreadable audio: {exc}"})
            else:
                if attempts:
                    log.info("tts fell back", provider=name, passed_over=[a["provider"] for a in attempts])
                path = await asyncio.to_thread(self._write, encoded.data, fmt.extension, session_key)
                return Speech(str(path), name, encoded.duration_s, attempts,
                              (time.perf_counter() - started) * 1000, summarized, fmt)
        reasons = "; ".join(f"{a['provider']}: {a['reason']}" for a in attempts) or "no provider is configured"
        raise Unavailable(f"text-to-speech failed with every provider ({reasons})",
                          details={"capability": "tts", "attempts": attempts})

    def _write(self, data: bytes, extension: str, session_key: str | None) -> Path:
        folder = outbound_dir(self.state_dir, "voice", session_key)
        cutoff = time.time() - KEEP_AUDIO_S
        for fmt in codec.FORMATS.values():
            for old in folder.glob(f"*.{fmt.extension}"):
                if old.stat().st_mtime < cutoff:
                    old.unlink(missing_ok=True)
        path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(8)}.{extension}"
        path.write_bytes(data)
        return path

    async def speak_for(self, text: str, channel: str | None = None, *, session_key: str | None = None) -> Speech:
        """``text`` as audio in the format ``channel`` plays (``FORMAT_FOR_CHANNEL``); a voice note (OGG/Opus) for
        no channel or one that names no format of its own (a plugin's)."""
        known = channel is not None and channel.strip().lower() in FORMAT_FOR_CHANNEL
        return await self.speak(text, format_for_channel(channel if known else None), session_key=session_key)

    async def auto_reply(self, reply: str, *, inbound_voice: bool) -> tuple[str, bool]:
        """Auto-TTS: the reply's text to send (``[[tts]]`` removed) and whether it is also to be spoken."""
        tagged = bool(TAG.search(reply))
        text = TAG.sub("", reply).strip() if tagged else reply
        enabled, _active = await self.settings()
        mode = self.cfg.auto
        wanted = enabled and bool(text.strip()) and (
            mode == "always" or (mode == "inbound" and inbound_voice) or (mode == "tagged" and tagged))
        return text, wanted

    # -- listening -----------------------------------------------------------------------------

    async def transcribe(self, data: bytes, name: str = "audio.ogg") -> stt.Transcript:
        require("tts", "speech to text")
        cfg = self._config.config.messages.stt
        try:
            return await stt.transcribe(cfg, data, name)
        except stt.SttFailure as exc:
            raise Unavailable(f"speech to text failed ({stt.pick(cfg)}: {exc.reason})",
                              details={"capability": "stt", "kind": exc.kind}) from None


    async def listen(self, path: str) -> tuple[stt.Transcript | None, str | None]:
        """The transcript of an audio file, or None and why not; ``(None, None)`` when speech to text is off."""
        if not self._config.config.messages.stt.enabled:
            return None, None
        try:
            data = await asyncio.to_thread(Path(path).read_bytes)
            heard = await self.transcribe(data, Path(path).name)
        except (OSError, Unavailable) as exc:
            why = exc.message if isinstance(exc, Unavailable) else str(exc)
            log.warning("voice message not transcribed", path=path, error=why)
            return None, why
        log.info("voice message transcribed", provider=heard.provider, seconds=round(heard.duration_s, 1))
        return heard, None

    async def hear(self, path: str) -> tuple[str, str | None]:
        """A voice message for the agent's prompt: ``(note, error)``. The note holds the transcript, or says
        why there is none (the message goes through either way; the caller tells the user ``error``)."""
        heard, why = await self.listen(path)
        if why is not None:
            return f"\n[voice transcript unavailable: {why}]", why
        if heard is None:
            return "", None
        return f"\n[voice transcript ({heard.provider}): {heard.text or '(no words recognised)'}]", None


VOICE_SERVICE: Key[VoiceService] = Key("voice")
"""The whole service, for the ``tts.*`` methods (the core knows it as ``gateway.composition.ports.VOICE``)."""


async def start(host: CapabilityHost) -> None:
    """Capability entry: the voice service, for its methods and for the agents' replies."""
    service = VoiceService(host.config_store, host.db, host.state_dir)
    host.services.provide(VOICE_SERVICE, service)
    host.services.provide(VOICE, service)
