"""Remote MCP tokens: created once, stored as a SHA-256 hash, and each one decides what its holder gets.

A token is the HTTP equivalent of the ``REMOTECLAW_*`` variables an agent run's shim reads: the tier
(owner or baseline), the tool profile, and optionally the session its calls act for. A token a person made for
themselves (``person_id``) reaches what their sign-in reaches: their own conversations, the baseline tools.
The token itself is shown once, at creation; the table keeps only its hash, so a copy of the database gives
nobody a way in. Times are epoch milliseconds, compared the same way on SQLite and PostgreSQL.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Boolean, String, select, update
from sqlalchemy.orm import Mapped, mapped_column

from gateway.people.store import Person
from gateway.protocol import InvalidRequest
from gateway.store import Database
from gateway.store.base import Base
from gateway.store.db import rowcount

__all__ = ["PREFIX", "McpToken", "TokenGrant", "create", "list_tokens", "parse_ttl", "revoke", "revoke_person",
           "verify"]

PREFIX = "rcm_"
"""Remote MCP tokens start with this, so a leaked one is recognisable (and never taken for a run token)."""


class McpToken(Base):
    __tablename__ = "mcp_tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    owner: Mapped[bool] = mapped_column(Boolean)
    profile: Mapped[str] = mapped_column(String(32))
    session_key: Mapped[str | None] = mapped_column(String(512), nullable=True)
    created_at: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    revoked_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    last_used_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    person_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)

    def to_dict(self) -> dict[str, Any]:
        """What ``mcp.tokens.list`` shows: everything but the hash."""
        now = _now_ms()
        state = "revoked" if self.revoked_at else ("expired" if self.expires_at and self.expires_at <= now
                                                   else "active")
        return {"id": self.id, "name": self.name, "owner": self.owner, "profile": self.profile,
                "sessionKey": self.session_key, "createdAt": self.created_at, "expiresAt": self.expires_at,
                "revokedAt": self.revoked_at, "lastUsedAt": self.last_used_at, "state": state,
                "personId": self.person_id}


@dataclass(frozen=True, slots=True)
class TokenGrant:
    """What a verified token allows."""

    id: str
    name: str
    owner: bool
    profile: str
    session_key: str | None
    expires_at: int | None = None
    """Epoch ms, or None: never."""
    person_id: str | None = None
    """The person whose it is (None: an operator's token)."""
    person_role: str | None = None
    """That person's role when the token was looked up (a guest's token reaches one conversation)."""

    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= _now_ms()


def _now_ms() -> int:
    return int(time.time() * 1000)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_ttl(text: str) -> int:
    """``"30d"``, ``"12h"``, ``"90m"``, ``"3600s"`` or plain seconds -> seconds.

    Raises:
        InvalidRequest: naming ``expires`` when the text is not such a duration.
    """
    t = text.strip().lower()
    unit = t[-1:] if t[-1:] in _UNITS else "s"
    number = t[:-1] if t[-1:] in _UNITS else t
    if not number.isdigit() or int(number) <= 0:
        raise InvalidRequest(f"invalid expires: {text!r} (use e.g. 30d, 12h, 90m)", details={"field": "expires"})
    return int(number) * _UNITS[unit]


async def create(db: Database, *, name: str, owner: bool, profile: str, session_key: str | None,
                 ttl_s: int | None, person_id: str | None = None) -> tuple[str, McpToken]:
    """A new token: ``(the token, its row)``. The token is not stored and cannot be shown again."""
    token = PREFIX + secrets.token_urlsafe(32)
    now = _now_ms()
    row = McpToken(id=uuid.uuid4().hex[:16], name=name, token_hash=_hash(token), owner=owner, profile=profile,
                   session_key=session_key, created_at=now, expires_at=now + ttl_s * 1000 if ttl_s else None,
                   person_id=person_id)
    async with db.session() as s:
        s.add(row)
    return token, row


async def list_tokens(db: Database, *, person_id: str | None = None) -> list[dict[str, Any]]:
    """Every token, or only those ``person_id`` made, oldest first."""
    q = select(McpToken).order_by(McpToken.created_at)
    if person_id is not None:
        q = q.where(McpToken.person_id == person_id)
    async with db.session() as s:
        rows = (await s.execute(q)).scalars().all()
    return [r.to_dict() for r in rows]


async def revoke(db: Database, token_id_or_name: str, *, person_id: str | None = None) -> int:
    """Revoke by id or by name (only among ``person_id``'s tokens when given); how many that revoked."""
    q = (update(McpToken)
         .where((McpToken.id == token_id_or_name) | (McpToken.name == token_id_or_name), McpToken.revoked_at.is_(None)))
    if person_id is not None:
        q = q.where(McpToken.person_id == person_id)
    async with db.session() as s:
        return rowcount(await s.execute(q.values(revoked_at=_now_ms())))


async def revoke_person(db: Database, person_id: str) -> int:
    """Revoke every token ``person_id`` holds (the person was removed); how many that revoked."""
    async with db.session() as s:
        return rowcount(await s.execute(update(McpToken)
                                        .where(McpToken.person_id == person_id, McpToken.revoked_at.is_(None))
                                        .values(revoked_at=_now_ms())))


async def verify(db: Database, token: str) -> TokenGrant | None:
    """What ``token`` allows, or None when it is unknown, revoked or expired."""
    if not token.startswith(PREFIX):
        return None
    digest = _hash(token)
    now = _now_ms()
    async with db.session() as s:
        row = (await s.execute(select(McpToken).where(McpToken.token_hash == digest))).scalars().first()
        if row is None or not hmac.compare_digest(row.token_hash, digest):
            return None
        if row.revoked_at is not None or (row.expires_at is not None and row.expires_at <= now):
            return None
        role = None
        if row.person_id is not None:
            person = await s.get(Person, row.person_id)
            # Removed (their tokens are revoked then too), or a new person given a removed one's id since (with a
            # minute's slack for replicas' clocks: nobody signs in and makes a token in less).
            if person is None or person.created_at > row.created_at + 60_000:
                return None
            role = person.role
        if row.last_used_at is None or now - row.last_used_at > 60_000:  # at most one write a minute
            row.last_used_at = now
        return TokenGrant(id=row.id, name=row.name, owner=row.owner, profile=row.profile,
                          session_key=row.session_key, expires_at=row.expires_at, person_id=row.person_id,
                          person_role=role)
