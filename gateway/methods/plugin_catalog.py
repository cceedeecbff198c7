"""``plugins.catalog.browse``: OpenClaw's plugin marketplace (ClawHub), which remoteclaw does not use.

Our plugins are Python packages found through entry points; the ones installed are listed by
``plugins.list``. There is no remote catalog to browse, so a browse returns no items (never an error, so
the Plugins page shows its installed list and an empty catalog).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.access import Access
from gateway.dispatch.dispatcher import READ, CallContext, Params, method


class BrowseParams(Params):
    intent: str | None = Field(None, max_length=64, description="Accepted and ignored (no catalog).")
    query: str | None = Field(None, max_length=256)
    category: str | None = Field(None, max_length=128)
    cursor: str | None = Field(None, max_length=512)
    pageSize: int | None = Field(None, ge=1, le=500)


@method("plugins.catalog.browse", access=Access("plugin", "read"), params=BrowseParams, scope=READ)
async def plugins_catalog_browse(_p: BrowseParams, _ctx: CallContext) -> dict[str, Any]:
    """No marketplace: an empty page of catalog items."""
    return {"items": []}
