"""Text-to-speech methods: ``tts.status``, ``tts.providers``, ``tts.convert``, ``tts.setProvider``,
``tts.enable``, ``tts.disable``.

The TTS providers are later work; the methods are declared now so callers get a validated
request and a clear ``UNAVAILABLE`` answer.
"""

from __future__ import annotations

from typing import Any, NoReturn

from pydantic import Field

from gateway.protocol import Unavailable
from gateway.rpc import READ, WRITE, CallContext, NoParams, Params, method

MISSING = "text-to-speech is not available on this gateway yet (no TTS providers)"


def _unavailable() -> NoReturn:
    raise Unavailable(MISSING, details={"capability": "tts"})


class ConvertParams(Params):
    text: str = Field(min_length=1, max_length=20_000)
    channel: str | None = Field(None, max_length=64)


class SetProviderParams(Params):
    provider: str = Field(min_length=1, max_length=64)


@method("tts.status", scope=READ, aliases=("tts:status",))
async def tts_status(_p: NoParams, _ctx: CallContext) -> dict[str, Any]:
    """Enabled or not, the active provider and its fallbacks."""
    _unavailable()


@method("tts.providers", scope=READ, aliases=("tts:providers",))
async def tts_providers(_p: NoParams, _ctx: CallContext) -> dict[str, Any]:
    """Known providers and whether each is configured."""
    _unavailable()


@method("tts.convert", params=ConvertParams, scope=WRITE, aliases=("tts:convert",))
async def tts_convert(_p: ConvertParams, _ctx: CallContext) -> dict[str, Any]:
    """Synthesize text into audio in the format the channel wants."""
    _unavailable()


@method("tts.setProvider", params=SetProviderParams, scope=WRITE, aliases=("tts:setProvider",))
async def tts_set_provider(_p: SetProviderParams, _ctx: CallContext) -> dict[str, Any]:
    """Choose the active provider."""
    _unavailable()


@method("tts.enable", scope=WRITE, aliases=("tts:enable",))
async def tts_enable(_p: NoParams, _ctx: CallContext) -> dict[str, Any]:
    """Turn spoken replies on."""
    _unavailable()


@method("tts.disable", scope=WRITE, aliases=("tts:disable",))
async def tts_disable(_p: NoParams, _ctx: CallContext) -> dict[str, Any]:
    """Turn spoken replies off."""
    _unavailable()
