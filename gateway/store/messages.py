"""Channel tables: every message in and out, pending pairing requests, and approved senders.

Messages are stored on every channel so ``message.read`` answers the same way everywhere, even on
platforms whose bots cannot fetch history (Telegram). Pairing lives here, not in the config file,
so approving a sender never rewrites the operator's config.
"""

from __future__ import annotations

import time
from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Index, Integer, String, Text, UniqueConstraint, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.base import Base, utcnow

__all__ = ["ApprovedSender", "ChannelMessage", "InboundRef", "JournalEntry", "PairingRequest", "mark_handled"]


class ChannelMessage(Base):
    """One message seen or sent on a channel."""

    __tablename__ = "channel_messages"
    __table_args__ = (Index("ix_channel_messages_chat", "channel", "account_id", "chat_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    channel: Mapped[str] = mapped_column(String(64))
    account_id: Mapped[str] = mapped_column(String(128))
    chat_id: Mapped[str] = mapped_column(String(256))
    thread_id: Mapped[str | None] = mapped_column(String(256), nullable=True)
    message_id: Mapped[str] = mapped_column(String(256))
    direction: Mapped[str] = mapped_column(String(8))  # in | out
    sender_id: Mapped[str | None] = mapped_column(String(256), nullable=True)
    sender_name: Mapped[str | None] = mapped_column(String(256), nullable=True)
    text: Mapped[str] = mapped_column(Text, default="")
    reply_to_id: Mapped[str | None] = mapped_column(String(256), nullable=True)
    media: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON list of {kind, url|path, mime, name}
    session_key: Mapped[str | None] = mapped_column(String(512), nullable=True)
    deleted: Mapped[bool] = mapped_column(default=False)
    ts: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    handled_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    """Inbound only: when it was turned into a turn (or answered, or refused); a message stored but not
    handled when the gateway died is handled when its platform delivers it again."""


class PairingRequest(Base):
    """An unknown DM sender waiting for the owner to approve their code."""

    __tablename__ = "pairing_requests"
    __table_args__ = (UniqueConstraint("channel", "code", name="uq_pairing_code"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    channel: Mapped[str] = mapped_column(String(64))
    account_id: Mapped[str] = mapped_column(String(128))
    sender_id: Mapped[str] = mapped_column(String(256), index=True)
    sender_name: Mapped[str | None] = mapped_column(String(256), nullable=True)
    chat_id: Mapped[str] = mapped_column(String(256))
    code: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)  # pending|approved|rejected
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class ApprovedSender(Base):
    """A sender the owner let in through pairing (config ``allowFrom`` lists the others)."""

    __tablename__ = "approved_senders"

    channel: Mapped[str] = mapped_column(String(64), primary_key=True)
    sender_id: Mapped[str] = mapped_column(String(256), primary_key=True)
    sender_name: Mapped[str | None] = mapped_column(String(256), nullable=True)
    approved_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    via: Mapped[str] = mapped_column(String(32), default="pairing")


class JournalEntry(Base):
    """A platform update as it arrived, written before the platform is told it was received."""

    __tablename__ = "inbound_journal"
    __table_args__ = (UniqueConstraint("channel", "account_id", "update_key", name="uq_inbound_journal_update"),
                      Index("ix_inbound_journal_pending", "channel", "account_id", "handled_at"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    channel: Mapped[str] = mapped_column(String(64))
    account_id: Mapped[str] = mapped_column(String(128))
    update_key: Mapped[str] = mapped_column(String(128))
    payload: Mapped[str] = mapped_column(Text)
    received_at: Mapped[int] = mapped_column(BigInteger)
    handled_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    replays: Mapped[int] = mapped_column(Integer, default=0)


InboundRef = tuple[str, str, str, str]
"""(channel, account, chat, message id) of a stored inbound message."""


async def mark_handled(s: AsyncSession, ref: InboundRef) -> None:
    """Mark an inbound message handled inside the caller's transaction (the run queue does it in the one
    that stores the turn, so a crash can never leave a message both queued and unhandled)."""
    channel, account_id, chat_id, message_id = ref
    await s.execute(update(ChannelMessage).where(
        ChannelMessage.channel == channel, ChannelMessage.account_id == account_id,
        ChannelMessage.chat_id == chat_id, ChannelMessage.message_id == message_id,
        ChannelMessage.direction == "in", ChannelMessage.handled_at.is_(None),
    ).values(handled_at=int(time.time() * 1000)))
