"""``logs.tail``: read the gateway's own JSON log back."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import Field

from gateway import logs
from gateway.rpc import READ, CallContext, Params, method


class LogsTailParams(Params):
    limit: int = Field(100, ge=1, le=5000)
    level: Literal["debug", "info", "warning", "error"] | None = None
    search: str | None = Field(None, max_length=500)


@method("logs.tail", params=LogsTailParams, scope=READ)
async def logs_tail(p: LogsTailParams, ctx: CallContext) -> dict[str, Any]:
    """The newest log records, oldest first, filtered by level and text."""
    await asyncio.to_thread(logs.flush)  # what was logged before this call must be in the answer
    lines = await asyncio.to_thread(logs.tail, ctx.gateway.logs_dir, limit=p.limit, level=p.level, search=p.search)
    return {"lines": lines, "count": len(lines)}
