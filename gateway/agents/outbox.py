"""Replies on their way to a chat: written down before they are sent, marked once they are.

A turn's reply (or its failure notice) is an outbox row first; the row is marked sent when the chat
platform took it. If the gateway dies in between, the next start (``gateway.runs.recovery``) delivers the
rows its previous process left unsent, once the platforms are up. Before re-sending it looks in the
message log for the same text sent to the same chat after the row was written: a reply that went out just
before the crash is marked, not sent twice.

A platform that is down or rate-limiting (an error marked ``retryable``: HTTP 429, 5xx, no connection) does
not lose the reply either: it is sent again with backoff, waiting as long as the platform's ``retry_after``
asks, for up to ``RETRY_WINDOW_S``; only past that is it left to the next start.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from sqlalchemy import BigInteger, Integer, String, Text, delete, select, update
from sqlalchemy.orm import Mapped, mapped_column

from gateway.runs.run import Origin
from gateway.store.base import Base
from gateway.store.messages import ChannelMessage

if TYPE_CHECKING:
    from gateway.platforms.interface import ChatPlatforms
    from gateway.store import Database

__all__ = ["KEEP_SENT_MS", "REDELIVER_WITHIN_MS", "RETRY_WINDOW_S", "OutboxRow", "deliver", "redeliver"]

log = structlog.get_logger("gateway.agents")

KEEP_SENT_MS = 86_400_000
"""Sent rows are kept a day (recovery asks whether a turn's reply was written), then pruned."""
_deliveries = 0

REDELIVER_WITHIN_MS = 3600_000
"""A reply left unsent longer than this (the platform was down, or the gateway stayed down) is dropped with a
log line rather than arriving out of the blue much later."""


RETRY_WINDOW_S = 300.0
"""How long a reply the platform refused for now (rate limit, 5xx, unreachable) keeps being retried in-process."""
_FIRST_BACKOFF_S = 1.0
_MAX_BACKOFF_S = 30.0
_in_flight: set[int] = set()
"""Rows this process is sending right now: ``redeliver`` (at start, or after adopting a dead replica's replies)
leaves them alone, or a reply still being retried would go out twice."""


class OutboxRow(Base):
    __tablename__ = "outbox"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    replica_id: Mapped[str] = mapped_column(String(64))
    session_key: Mapped[str] = mapped_column(String(512))
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    origin: Mapped[str] = mapped_column(Text)  # JSON of the Origin
    text: Mapped[str] = mapped_column(Text)
    reply_to_id: Mapped[str | None] = mapped_column(String(256), nullable=True)
    created_at: Mapped[int] = mapped_column(BigInteger)  # epoch ms
    sent_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


def _now_ms() -> int:
    return int(time.time() * 1000)


async def deliver(db: Database, replica_id: str, platforms: ChatPlatforms | None, origin: Origin, text: str,
                  session_key: str, *, run_id: str | None = None, reply_to_id: str | None = None) -> int:
    """Write the reply down (as this replica's), send it, mark it sent; how many messages that took (0: no
    platforms)."""
    if platforms is None:
        log.warning("no chat platforms on this gateway: reply not delivered", session_key=session_key)
        return 0
    async with db.session() as s:
        row = OutboxRow(replica_id=replica_id, session_key=session_key, run_id=run_id,
                        origin=orjson.dumps(dataclasses.asdict(origin)).decode(), text=text,
                        reply_to_id=reply_to_id, created_at=_now_ms())
        s.add(row)
        await s.flush()
        row_id = row.id
    _in_flight.add(row_id)
    try:
        sent = await _send(platforms, origin, text, session_key, reply_to_id)
    finally:
        _in_flight.discard(row_id)
    global _deliveries
    _deliveries += 1
    async with db.session() as s:
        await s.execute(update(OutboxRow).where(OutboxRow.id == row_id).values(sent_at=_now_ms()))
        if _deliveries % 200 == 1:
            await _prune(s)
    return sent


async def _send(platforms: ChatPlatforms, origin: Origin, text: str, session_key: str,
                reply_to_id: str | None) -> int:
    """``platforms.deliver``, again after each retryable failure (backoff doubling from 1 s to 30 s, or the
    platform's own ``retry_after``) until it goes or ``RETRY_WINDOW_S`` has passed."""
    deadline = time.monotonic() + RETRY_WINDOW_S
    backoff = _FIRST_BACKOFF_S
    attempt = 1
    while True:
        try:
            return await platforms.deliver(origin, text, session_key, reply_to_id=reply_to_id)
        except Exception as exc:
            if not getattr(exc, "retryable", False):
                raise
            asked = getattr(exc, "retry_after_ms", None)
            wait = asked / 1000 if asked else backoff
            if time.monotonic() + wait > deadline:
                raise
            log.warning("reply not taken by the chat platform yet; retrying", session_key=session_key,
                        channel=origin.channel, attempt=attempt, retry_in_s=round(wait, 2), error=str(exc))
            await asyncio.sleep(wait)
            backoff = min(backoff * 2, _MAX_BACKOFF_S)
            attempt += 1


async def _prune(s: Any) -> None:
    await s.execute(delete(OutboxRow).where(OutboxRow.sent_at.is_not(None),
                                            OutboxRow.sent_at < _now_ms() - KEEP_SENT_MS))


async def redeliver(db: Database, replica_id: str, platforms: ChatPlatforms | None) -> int:
    """Send what this replica's previous process left in the outbox; how many replies went out."""
    if platforms is None:
        return 0
    async with db.session() as s:
        rows = list((await s.execute(select(OutboxRow).where(
            OutboxRow.replica_id == replica_id, OutboxRow.sent_at.is_(None)).order_by(OutboxRow.id)))
            .scalars())
    sent = 0
    for row in rows:
        if row.id in _in_flight:  # this process is sending it now (a live turn's reply, waiting out an outage)
            continue
        _in_flight.add(row.id)
        try:
            sent += await _redeliver_one(db, platforms, row)
        finally:
            _in_flight.discard(row.id)
    if rows:
        log.info("delivered the replies a crash left unsent", replies=sent, checked=len(rows))
    return sent


async def _redeliver_one(db: Database, platforms: ChatPlatforms, row: OutboxRow) -> int:
    """Send one row left unsent (unless too old, or it did go out) and mark it; 1 when it was sent now."""
    async with db.session() as s:
        if await s.scalar(select(OutboxRow.sent_at).where(OutboxRow.id == row.id)) is not None:
            return 0  # marked since the list was read (its live delivery finished meanwhile)
    origin = Origin(**orjson.loads(row.origin))
    sent = 0
    if _now_ms() - row.created_at > REDELIVER_WITHIN_MS:
        log.warning("an unsent reply is too old to deliver now", session_key=row.session_key, run_id=row.run_id)
    elif not await _already_sent(db, row, origin):
        try:
            await _send(platforms, origin, row.text, row.session_key, row.reply_to_id)
            sent = 1
        except Exception as exc:
            log.warning("an unsent reply could not be delivered after a restart", session_key=row.session_key,
                        error=str(exc))
            return 0
    async with db.session() as s:
        await s.execute(update(OutboxRow).where(OutboxRow.id == row.id).values(sent_at=_now_ms()))
    return sent


async def _already_sent(db: Database, row: OutboxRow, origin: Origin) -> bool:
    """The same text went to the same chat after the row was written (the crash came between send and mark)."""
    from datetime import UTC, datetime

    since = datetime.fromtimestamp(row.created_at / 1000, UTC)
    first_piece = row.text[:200]
    async with db.session() as s:
        found: Any = await s.scalar(select(ChannelMessage.id).where(
            ChannelMessage.channel == origin.channel, ChannelMessage.chat_id == origin.to,
            ChannelMessage.direction == "out", ChannelMessage.ts >= since,
            ChannelMessage.text.startswith(first_piece)).limit(1))
    return found is not None
