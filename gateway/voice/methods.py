"""``tts.*`` and ``stt.*``: the voice service over RPC (owner tools ``tts_*``; ``stt.*`` for operators).

``tts.convert {text, channel?}`` answers the audio file's path (on the gateway's disk, for
``message_send_attachment``), the provider that spoke, the format the channel wants (OGG/Opus voice notes for
Telegram and Discord, and when no channel is named; MP3 for the web chat, which Safari must play; an unknown
channel is refused by name), the duration, and the providers passed over with their reasons.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from gateway.access import Access
from gateway.composition.ports import AGENT_HOSTS
from gateway.dispatch.dispatcher import ADMIN, READ, WRITE, CallContext, NoParams, Params, method
from gateway.extras import require
from gateway.protocol import InvalidRequest
from gateway.sandbox.open_beneath import FileBytes
from gateway.sandbox.reach import read_run_file
from gateway.voice.service import VOICE_SERVICE, VoiceService, format_for_channel

MAX_AUDIO_BYTES = 25 * 1024 * 1024


def _voice(ctx: CallContext) -> VoiceService:
    require("tts", "voice (text to speech and speech to text)")
    return ctx.service(VOICE_SERVICE)


class ConvertParams(Params):
    text: str = Field(min_length=1, max_length=20_000)
    channel: str | None = Field(None, max_length=64)


class SetProviderParams(Params):
    provider: str = Field(min_length=1, max_length=64)


class TranscribeParams(Params):
    path: str | None = Field(None, min_length=1, max_length=4096)
    url: str | None = Field(None, min_length=1, max_length=4096, pattern=r"^https?://")

    @model_validator(mode="after")
    def _one(self) -> TranscribeParams:
        if (self.path is None) == (self.url is None):
            raise ValueError("give exactly one of path and url")
        return self


@method("tts.status", access=Access("voice", "read"), scope=READ, aliases=("tts:status",))
async def tts_status(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Enabled or not, the active provider, its fallbacks, the auto mode."""
    return await _voice(ctx).status()


@method("tts.providers", access=Access("voice", "read"), scope=READ, aliases=("tts:providers",))
async def tts_providers(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Every provider, whether it is configured (and what is missing), and its settings (never keys)."""
    return await _voice(ctx).providers()


@method("tts.convert", access=Access("voice", "write"), params=ConvertParams, scope=WRITE, aliases=("tts:convert",))
async def tts_convert(p: ConvertParams, ctx: CallContext) -> dict[str, Any]:
    """Speak text into a file in the channel's format, with fallback across providers."""
    fmt = format_for_channel(p.channel)  # before any synthesis: a bad channel costs nothing
    speech = await _voice(ctx).speak(p.text, fmt, session_key=ctx.caller.run_session)  # a run's own folder
    return {**speech.to_dict(), **({"channel": p.channel} if p.channel else {})}


@method("tts.setProvider", access=Access("voice", "admin"),
        params=SetProviderParams, scope=WRITE, aliases=("tts:setProvider",))
async def tts_set_provider(p: SetProviderParams, ctx: CallContext) -> dict[str, Any]:
    """Choose the active provider (kept across restarts)."""
    return await _voice(ctx).set_provider(p.provider.strip().lower())


@method("tts.enable", access=Access("voice", "admin"), scope=WRITE, aliases=("tts:enable",))
async def tts_enable(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Turn spoken replies on (kept across restarts)."""
    return await _voice(ctx).set_enabled(True)


@method("tts.disable", access=Access("voice", "admin"), scope=WRITE, aliases=("tts:disable",))
async def tts_disable(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Turn spoken replies off."""
    return await _voice(ctx).set_enabled(False)


@method("stt.status", access=Access("voice", "read"), scope=READ, aliases=("stt:status",))
async def stt_status(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Whether voice messages are transcribed, and by which provider."""
    return (await _voice(ctx).status())["stt"]


async def _fetch(url: str) -> bytes:
    import httpx

    from gateway.netguard import check_public_url

    await check_public_url(url)
    async with httpx.AsyncClient(timeout=30, follow_redirects=False) as client:
        response = await client.get(url)
        if response.status_code != 200:
            raise InvalidRequest(f"url: fetching the audio answered {response.status_code}", details={"field": "url"})
        if len(response.content) > MAX_AUDIO_BYTES:
            raise InvalidRequest("url: the audio is larger than 25 MB", details={"field": "url"})
        return response.content


@method("stt.transcribe", access=Access("voice", "write"),
        params=TranscribeParams, scope=ADMIN, aliases=("stt:transcribe",))
async def stt_transcribe(p: TranscribeParams, ctx: CallContext) -> dict[str, Any]:
    """Transcribe an audio file on the gateway's disk (``path``: admin, since it reads any file the gateway
    can) or at a public ``url``."""
    if p.path is not None:
        hosts = ctx.services.find(AGENT_HOSTS)
        named = await read_run_file(ctx.caller, p.path, field="path", state_dir=ctx.state_dir,
                                    max_bytes=MAX_AUDIO_BYTES, from_node=hosts.read_file if hosts is not None else None)
        if isinstance(named, FileBytes):  # an agent run's file: read once, inside what the run sees
            return (await _voice(ctx).transcribe(named.data, named.name)).to_dict()
        file = await asyncio.to_thread(Path(named).expanduser)
        if not await asyncio.to_thread(file.is_file):
            raise InvalidRequest(f"path: no such file: {p.path}", details={"field": "path"})
        if (await asyncio.to_thread(file.stat)).st_size > MAX_AUDIO_BYTES:
            raise InvalidRequest("path: the audio is larger than 25 MB", details={"field": "path"})
        data, name = await asyncio.to_thread(file.read_bytes), file.name
    else:
        assert p.url is not None
        data, name = await _fetch(p.url), p.url.rsplit("/", 1)[-1] or "audio"
    return (await _voice(ctx).transcribe(data, name)).to_dict()
