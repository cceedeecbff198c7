"""The declarative base every table derives from (each concept keeps its own rows in its package's ``store.py``),
and the device table the core's pairing shares. Alembic migrations in ``migrations/`` must match the tables."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["Base", "Device", "utcnow"]


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class Device(Base):
    """A client device identity (Ed25519 key) and whether the owner has approved it."""

    __tablename__ = "devices"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)  # sha256 hex of the public key
    public_key: Mapped[str] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16), index=True)  # pending | approved | rejected
    role: Mapped[str] = mapped_column(String(16))
    client_id: Mapped[str] = mapped_column(String(128))
    platform: Mapped[str] = mapped_column(String(128), default="")
    display_name: Mapped[str | None] = mapped_column(String(256), nullable=True)
    remote: Mapped[str] = mapped_column(String(128), default="")
    scopes: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    # The same key as a node (``gateway.devices``): its pairing, what it declared, and where it is connected.
    node_status: Mapped[str | None] = mapped_column(String(16), nullable=True, index=True)  # pending|approved|rejected
    node_request_id: Mapped[str | None] = mapped_column(String(64), nullable=True, unique=True, index=True)
    node_alias: Mapped[str | None] = mapped_column(String(256), nullable=True)  # the owner's name for it
    node_version: Mapped[str] = mapped_column(String(128), default="", server_default="")
    node_caps: Mapped[str] = mapped_column(Text, default="[]", server_default="[]")  # JSON list
    node_commands: Mapped[str] = mapped_column(Text, default="[]", server_default="[]")  # JSON list
    node_token_hash: Mapped[str | None] = mapped_column(String(128), nullable=True)  # sha256 hex of the node token
    node_requested_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    node_approved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    node_connected_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    node_replica: Mapped[str | None] = mapped_column(String(64), nullable=True)  # replica holding its socket
    node_instance: Mapped[str | None] = mapped_column(String(64), nullable=True)  # that replica's process (bus id)
