"""``update.status``: remoteclaw has no update channel to check (it is updated by its package manager), so it
reports none available, as OpenClaw's Control UI expects the answer shaped.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.access import Access
from gateway.dispatch.dispatcher import ADMIN, CallContext, Params, method


class UpdateStatusParams(Params):
    refreshCheckout: bool | None = Field(None, description="Accepted and ignored: there is no checkout to refresh.")


@method("update.status", access=Access("gateway", "admin"), params=UpdateStatusParams, scope=ADMIN)
async def update_status(_p: UpdateStatusParams, ctx: CallContext) -> dict[str, Any]:
    """No update channel: never an update available; installed as a package at ``server.version``."""
    return {"sentinel": None, "updateAvailable": None,
            "schedule": {"channel": "none", "autoEnabled": False, "install": {"kind": "package"}}}
