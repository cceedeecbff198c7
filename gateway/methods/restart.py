"""``gateway.restart``: drain and restart in place."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.access import Access
from gateway.dispatch.dispatcher import ADMIN, CallContext, Params, method


class RestartParams(Params):
    reason: str | None = Field(None, max_length=500)
    delayMs: int = Field(0, ge=0, le=60_000)


@method("gateway.restart", access=Access("gateway", "exec"), params=RestartParams, scope=ADMIN,
        aliases=("gateway.restart.request", "gateway:restart"))
async def restart(p: RestartParams, ctx: CallContext) -> dict[str, Any]:
    """Restart the gateway in place: clients get a ``shutdown`` event, then close 1012, then it is back."""
    reason = p.reason or "restart requested"
    # Answer first; the restart begins after the response frame has been queued.
    ctx.server.request_restart(reason, delay_ms=max(p.delayMs, 50))
    return {"ok": True, "restarting": True, "reason": reason, "restartExpectedMs": 1500 + p.delayMs}
