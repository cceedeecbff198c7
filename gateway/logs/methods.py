"""``sink.tail``: read the gateway's own JSON log back, in OpenClaw's shape.

The answer is ``{file, cursor, size, lines, truncated?, reset?}``: ``lines`` are the log's JSON records as
text, oldest first, ``cursor`` the byte offset in ``file`` after the last one. A client that follows the
log (``openclaw logs --follow``) sends that ``cursor`` back and gets only what was written since (``reset``
when the file was rotated meanwhile). ``maxBytes`` caps the text returned (the oldest lines go first);
``level`` and ``search`` filter, which OpenClaw's schema does not have: our additions. Each record also
carries the names OpenClaw's log viewers read (``time``, ``message``, ``subsystem``) beside ours.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import orjson
from pydantic import Field

from gateway.access import Access
from gateway.dispatch.dispatcher import READ, CallContext, Params, method
from gateway.logs import sink


class LogsTailParams(Params):
    limit: int = Field(100, ge=1, le=5000)
    maxBytes: int = Field(250_000, ge=1, le=1_000_000)
    cursor: int | None = Field(None, ge=0)
    level: Literal["debug", "info", "warning", "error"] | None = None
    search: str | None = Field(None, max_length=500)


@method("logs.tail", access=Access("gateway", "admin"), params=LogsTailParams, scope=READ)
async def logs_tail(p: LogsTailParams, ctx: CallContext) -> dict[str, Any]:
    """The newest log records (or those since ``cursor``), oldest first, filtered by level and text."""
    await asyncio.to_thread(sink.flush)  # what was logged before this call must be in the answer
    path = ctx.logs_dir / sink.LOG_FILE_NAME
    size = await asyncio.to_thread(lambda: path.stat().st_size if path.exists() else 0)
    reset = p.cursor is not None and p.cursor > size
    if p.cursor is not None and not reset:
        records = await asyncio.to_thread(sink.since, path, p.cursor, limit=p.limit, level=p.level,
                                          search=p.search)
    else:
        records = await asyncio.to_thread(sink.tail, ctx.logs_dir, limit=p.limit, level=p.level,
                                          search=p.search)
    lines = [orjson.dumps(_openclaw_names(r)).decode() for r in records]
    kept, used = [], 0
    for line in reversed(lines):  # the newest lines are the ones worth keeping
        used += len(line.encode()) + 1
        if used > p.maxBytes:
            break
        kept.append(line)
    kept.reverse()
    out: dict[str, Any] = {"file": sink.LOG_FILE_NAME, "cursor": size, "size": size, "lines": kept}
    if len(kept) < len(lines):
        out["truncated"] = True
    if reset:
        out["reset"] = True
    return out


def _openclaw_names(record: dict[str, Any]) -> dict[str, Any]:
    """Our structlog record plus ``time``/``message``/``subsystem``, so ``openclaw logs`` prints it readably."""
    extra = {"time": record.get("timestamp"), "message": record.get("event"), "subsystem": record.get("logger")}
    return {**{k: v for k, v in extra.items() if isinstance(v, str)}, **record}
