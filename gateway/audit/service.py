"""The audit log's service: record what someone did, list it, and forget it after ``audit.retentionDays``.

Why a row per action written by the method that acted, after it succeeded, and awaited: when ``config.patch``
answers, its event is already there to list (a test, or an admin checking at once, sees it), yet a database
that refuses the write costs the log one row, not the caller their change: ``record`` logs the failure and
returns. Recording is reached through ``gateway.composition.ports.AUDIT`` (``CallContext.audit`` in a handler),
so the core's methods name no capability; on a gateway without this capability recording does nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from gateway.audit import store
from gateway.audit.actors import actor_of, kind_of
from gateway.composition.ports import AUDIT
from gateway.composition.services import Key
from gateway.dispatch.callers import Caller
from gateway.logs.sink import scrub_secrets
from gateway.redaction import redact

if TYPE_CHECKING:
    from gateway.composition.hosts import CapabilityHost
    from gateway.config import Config, ConfigStore
    from gateway.store import Database

__all__ = ["AUDIT_LOG", "DAY_MS", "MAX_DETAILS_BYTES", "AuditService", "start"]

log = structlog.get_logger("gateway.audit")

DAY_MS = 86_400_000
PRUNE_EVERY_S = 86_400.0
MAX_DETAILS_BYTES = 8192
"""A row's details are a summary, not a copy: past this, large values are replaced by their size."""
_BIG_VALUE_BYTES = 512


def now_ms() -> int:
    return int(time.time() * 1000)


def _dumps(value: Any) -> bytes:
    """JSON of anything a caller may pass: other keys than strings, and values JSON lacks, as text."""
    return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)


def details_json(details: Mapping[str, Any] | None) -> str | None:
    """``details`` as stored: unset (None) entries left out, secrets redacted by their shape (``gateway.redaction``)
    and every known secret value scrubbed wherever it stands (``gateway.logs``), large values cut."""
    kept = {k: v for k, v in (details or {}).items() if v is not None}
    if not kept:
        return None
    clean = scrub_secrets(redact(kept))
    text = _dumps(clean)
    if len(text) > MAX_DETAILS_BYTES:
        sized = {k: v if len(part := _dumps(v)) <= _BIG_VALUE_BYTES else f"({len(part)} bytes)"
                 for k, v in clean.items()}
        text = _dumps({**sized, "truncated": True})
        if len(text) > MAX_DETAILS_BYTES:
            text = orjson.dumps({"truncated": True, "keys": sorted(map(str, clean))[:50]})
    return text.decode()


class AuditService:
    """Writes and reads ``audit_events`` (``gateway.audit.store``); prunes by the live ``audit.retentionDays``."""

    def __init__(self, db: Database, config: ConfigStore) -> None:
        self._db = db
        self._config = config

    async def record(self, who: Caller | str, action: str, target: str | None = None,
                     details: Mapping[str, Any] | None = None) -> None:
        """Write one event (``gateway.composition.ports.Auditor``); never raises but for cancellation."""
        try:
            actor, kind = actor_of(who) if isinstance(who, Caller) else (who, kind_of(who))
            async with self._db.session() as s:
                await store.insert(s, at=now_ms(), actor=actor[:200], actor_kind=kind, action=action[:64],
                                   target=target[:512] if target is not None else None,
                                   details=details_json(details))
        except Exception:
            log.exception("audit event not written", action=action, target=target)
            return
        log.info("audit", action=action, actor=actor, target=target)

    async def page(self, where: store.Filter, limit: int) -> tuple[list[dict[str, Any]], str | None]:
        """Events newest first, and the ``before`` cursor of the next page (None: no more)."""
        async with self._db.reading() as s:
            rows, cursor = await store.page(s, where, limit)
        return [r.to_dict() for r in rows], str(cursor) if cursor is not None else None

    async def prune(self) -> int:
        """Delete what is older than ``audit.retentionDays``; how many rows went."""
        days = self._config.config.audit.retentionDays
        async with self._db.session() as s:
            gone = await store.prune(s, now_ms() - days * DAY_MS)
        if gone:
            log.info("audit events pruned", count=gone, older_than_days=days)
        return gone

    async def prune_quietly(self) -> None:
        try:
            await self.prune()
        except Exception:
            log.exception("pruning the audit log failed")

    async def keep_pruning(self) -> None:
        """Once a day for the life of this gateway start (cancelled when it stops)."""
        while True:
            await asyncio.sleep(PRUNE_EVERY_S)
            await self.prune_quietly()

    async def config_changed(self, _old: Config, _new: Config, changed: frozenset[str]) -> None:
        """A shorter ``audit.retentionDays`` applies now, not at the next daily pass."""
        if "audit" in changed:
            await self.prune_quietly()


AUDIT_LOG: Key[AuditService] = Key("audit log")
"""The service itself, for this package's handlers (``audit.log.list``); other packages record through ``AUDIT``."""


async def start(host: CapabilityHost) -> None:
    """Capability entry: provide the log (first of the capabilities, so the others find it when they start), prune
    what is past its retention, then once a day."""
    service = AuditService(host.db, host.config_store)
    host.services.provide(AUDIT_LOG, service)
    host.services.provide(AUDIT, service)
    await service.prune_quietly()
    host.spawn(service.keep_pruning(), "audit-prune")
    host.on_config_change(service.config_changed)
