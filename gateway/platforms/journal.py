"""The inbound journal: platform updates written down before the platform hears they arrived.

A platform that redelivers until acknowledged (Telegram's ``getUpdates`` offset, its webhook's 200)
loses nothing across a crash if each update is stored before that acknowledgement. The channel
journals an update, acknowledges it, handles it, and marks it handled; at the next start it replays
what was journalled but never handled. Replays are safe: the message log hands a message out only
if it was never handled (``MessageLog.record_in``).

An update that keeps killing the gateway would be replayed forever; after ``MAX_REPLAYS`` it is
set aside (marked handled, with a warning in the log).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from sqlalchemy import delete, select, update

from gateway.store.messages import JournalEntry

if TYPE_CHECKING:
    from gateway.store import Database

__all__ = ["MAX_REPLAYS", "InboundJournal"]

log = structlog.get_logger("gateway.platforms.journal")

MAX_REPLAYS = 3
KEEP_HANDLED_MS = 24 * 3600 * 1000
"""Handled entries are kept a day, so a late redelivery of the same update is still recognised."""


def _now_ms() -> int:
    return int(time.time() * 1000)


class InboundJournal:
    """Journal of one gateway's inbound updates, keyed by (channel, account, the platform's update id)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def put(self, channel: str, account_id: str, key: str, payload: dict[str, Any]) -> bool:
        """Write an update down; False when it is already there (a redelivery: do not handle it again)."""
        async with self.db.session() as s:
            seen = await s.scalar(select(JournalEntry.id).where(
                JournalEntry.channel == channel, JournalEntry.account_id == account_id,
                JournalEntry.update_key == key))
            if seen is not None:
                return False
            s.add(JournalEntry(channel=channel, account_id=account_id, update_key=key,
                               payload=orjson.dumps(payload).decode(), received_at=_now_ms()))
        return True

    async def done(self, channel: str, account_id: str, key: str) -> None:
        async with self.db.session() as s:
            await s.execute(update(JournalEntry).where(
                JournalEntry.channel == channel, JournalEntry.account_id == account_id,
                JournalEntry.update_key == key, JournalEntry.handled_at.is_(None)).values(handled_at=_now_ms()))

    async def unhandled(self, channel: str, account_id: str) -> list[tuple[str, dict[str, Any]]]:
        """Updates journalled but never handled (the gateway stopped in between), oldest first, each
        counted as replayed once more; old handled entries are pruned on the way."""
        now = _now_ms()
        out: list[tuple[str, dict[str, Any]]] = []
        async with self.db.session() as s:
            mine = (JournalEntry.channel == channel, JournalEntry.account_id == account_id)
            await s.execute(delete(JournalEntry).where(
                *mine, JournalEntry.handled_at.is_not(None), JournalEntry.handled_at < now - KEEP_HANDLED_MS))
            rows = (await s.execute(select(JournalEntry).where(*mine, JournalEntry.handled_at.is_(None))
                                    .order_by(JournalEntry.id))).scalars().all()
            for row in rows:
                if row.replays >= MAX_REPLAYS:
                    log.warning("an update failed to be handled after several restarts; setting it aside",
                                channel=channel, account=account_id, update=row.update_key, replays=row.replays)
                    row.handled_at = now
                    continue
                row.replays += 1
                out.append((row.update_key, orjson.loads(row.payload)))
        return out
