"""``talk.catalog``: our speech providers, with no live talk modes.

Voice notes are spoken and heard (the voice capability, through its port: absent when it did not start), but
there is no realtime talk session, so OpenClaw's Control UI is told no mode is ready.
"""

from __future__ import annotations

from typing import Any

from gateway.access import Access
from gateway.composition.ports import VOICE
from gateway.dispatch.dispatcher import READ, CallContext, NoParams, method


@method("talk.catalog", access=Access("gateway", "read"), scope=READ)
async def talk_catalog(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Speech providers we have (for voice notes); no talk modes, since there is no live talk session."""
    speech: list[dict[str, Any]] = []
    active = None
    voice = ctx.services.find(VOICE)
    if voice is not None:
        listed = await voice.providers()
        active = listed.get("active")
        speech = [{"id": p["id"], "label": p["id"], "configured": bool(p["configured"])} for p in listed["providers"]]
    return {"modes": [], "transports": [], "brains": [],
            "speech": {"ready": False, "providers": speech, **({"activeProvider": active} if active else {})},
            "transcription": {"ready": False, "providers": []}, "realtime": {"ready": False, "providers": []}}
