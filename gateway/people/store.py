"""People tables: a person, the chat identities that are theirs, the codes that link one more, and their web
sign-ins.

Identities are unique per ``(channel, sender_id)``: one sender is one person. Link codes and sign-in links are
short-lived and single-use; a sign-in credential is stored only as its SHA-256, like the run tokens and the
``/mcp`` tokens, so a copy of the database signs nobody in.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Boolean, Float, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.base import Base

__all__ = ["LinkCode", "Person", "PersonIdentity", "Signin"]


class Person(Base):
    """Someone who uses the gateway, with a role (``gateway.people.roles``) and their own limits."""

    __tablename__ = "people"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # a slug: "alice", "owner"
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16), index=True)  # owner | admin | member | guest
    one_conversation: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    """Their DMs on every channel (and their web chat) are one conversation."""
    max_cost_per_day: Mapped[float | None] = mapped_column(Float, nullable=True)  # US dollars per UTC day
    agent_id: Mapped[str | None] = mapped_column(String(128), nullable=True)  # who answers them (None: the default)
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)

    def to_dict(self, identities: list[PersonIdentity] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "role": self.role,
                               "oneConversation": bool(self.one_conversation), "maxCostPerDay": self.max_cost_per_day,
                               "agentId": self.agent_id,
                               "createdAt": self.created_at, "updatedAt": self.updated_at}
        if identities is not None:
            out["identities"] = [i.to_dict() for i in identities]
        return out


class PersonIdentity(Base):
    """One chat identity of a person: a sender id on one channel."""

    __tablename__ = "person_identities"
    __table_args__ = (UniqueConstraint("channel", "sender_id", name="uq_person_identities_sender"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    person_id: Mapped[str] = mapped_column(String(64), ForeignKey("people.id", ondelete="CASCADE"), index=True)
    channel: Mapped[str] = mapped_column(String(64))
    sender_id: Mapped[str] = mapped_column(String(256))
    linked_by: Mapped[str] = mapped_column(String(200))  # "upgrade", "admin:<who>", "code"
    created_at: Mapped[int] = mapped_column(BigInteger)

    def to_dict(self) -> dict[str, Any]:
        return {"channel": self.channel, "senderId": self.sender_id, "linkedBy": self.linked_by,
                "createdAt": self.created_at}


class LinkCode(Base):
    """A single-use code: sent from another chat it links that chat's sender to the person (``purpose: link``),
    or opened in a browser it signs the person in to the web chat (``purpose: signin``)."""

    __tablename__ = "person_codes"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    person_id: Mapped[str] = mapped_column(String(64), ForeignKey("people.id", ondelete="CASCADE"), index=True)
    purpose: Mapped[str] = mapped_column(String(16))  # link | signin
    created_at: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[int] = mapped_column(BigInteger)


class Signin(Base):
    """A web sign-in of a person: a credential the browser keeps (stored hashed), listable and revocable."""

    __tablename__ = "person_signins"
    __table_args__ = (Index("ix_person_signins_person", "person_id", "revoked_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    person_id: Mapped[str] = mapped_column(String(64), ForeignKey("people.id", ondelete="CASCADE"))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(200), default="")  # where it was made: "web chat via telegram"
    created_at: Mapped[int] = mapped_column(BigInteger)
    last_used_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    revoked_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "personId": self.person_id, "label": self.label, "createdAt": self.created_at,
                "lastUsedAt": self.last_used_at, "revokedAt": self.revoked_at}
