"""Text-to-speech tools (6, owner only)."""

from __future__ import annotations

from mcp_shim.schema import obj, string
from mcp_shim.tools._base import Call, Tool, compact, group

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

TOOLS: list[Tool] = []
tool = group("tts", TOOLS)


@tool("tts_status", "TTS status", "Show whether spoken replies are on, the provider and its fallbacks.", obj(),
      read_only=True)
async def tts_status(call: Call, _a: dict[str, Any]) -> Any:
    return await call.gateway("tts.status", {})


@tool("tts_convert", "Text to speech", "Turn text into speech audio, in the format the channel wants.",
      obj({"text": string("Text to speak"), "channel": string("Channel whose audio format to use")}, ("text",)),
      idempotent=True, open_world=True)
async def tts_convert(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("tts.convert", compact(text=a["text"], channel=a.get("channel")))


@tool("tts_providers", "TTS providers", "List the text-to-speech providers and whether each is set up.", obj(),
      read_only=True)
async def tts_providers(call: Call, _a: dict[str, Any]) -> Any:
    return await call.gateway("tts.providers", {})


@tool("tts_set_provider", "Choose TTS provider", "Choose the text-to-speech provider (e.g. openai, elevenlabs, edge).",
      obj({"provider": string("Provider name")}, ("provider",)), idempotent=True)
async def tts_set_provider(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("tts.setProvider", {"provider": a["provider"]})


@tool("tts_enable", "Turn TTS on", "Turn spoken replies on.", obj(), idempotent=True)
async def tts_enable(call: Call, _a: dict[str, Any]) -> Any:
    return await call.gateway("tts.enable", {})


@tool("tts_disable", "Turn TTS off", "Turn spoken replies off.", obj(), idempotent=True)
async def tts_disable(call: Call, _a: dict[str, Any]) -> Any:
    return await call.gateway("tts.disable", {})
