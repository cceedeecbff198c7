"""Channel tables: every message in and out, pending pairing requests, and approved senders.

Messages are stored on every channel so ``message.read`` answers the same way everywhere, even on
platforms whose bots cannot fetch history (Telegram). Pairing lives here, not in the config file,
so approving a sender never rewrites the operator's config.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.models import Base, utcnow

__all__ = ["ApprovedSender", "ChannelMessage", "PairingRequest"]


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
