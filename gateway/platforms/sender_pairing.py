"""Channel sender pairing, stored: codes for unknown senders and the senders the owner approved.

Pairing requests and approved senders live in the database, never in the config file: approving
someone must not rewrite what the operator wrote. The policy that decides who needs a code is the
``gateway.platforms.access`` module's; this is the part the gateway's ``channels.pairing.*``
methods and every platform share.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update

from gateway.platforms.messages import Inbound
from gateway.protocol import ApprovalNotFound, InvalidRequest
from gateway.store import Database
from gateway.store.messages import ApprovedSender, PairingRequest

__all__ = ["APPROVED_TEXT", "CODE_ALPHABET", "PAIRING_TTL", "approve", "is_approved", "list_requests", "reject",
           "request_code"]

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""No 0/O or 1/I: codes are read aloud and typed from a phone."""
CODE_LENGTH = 8
PAIRING_TTL = timedelta(hours=1)
APPROVED_TEXT = "You're approved: send your message again and the assistant will answer."
"""What an approved sender is told on their channel (``channels.pairing.approve``, unless ``notify: false``)."""
MAX_PENDING_PER_CHANNEL = 20
"""A flood of strangers cannot grow the table without bound: past this, new ones are ignored."""


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(ts: datetime) -> datetime:
    # SQLite hands back naive datetimes; everything we store is UTC.
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


async def is_approved(db: Database, channel: str, sender_id: str) -> bool:
    async with db.session() as s:
        return await s.get(ApprovedSender, (channel, sender_id)) is not None


async def request_code(db: Database, msg: Inbound) -> tuple[str, bool] | None:
    """The sender's pending code, creating one if needed: ``(code, created)``; None when flooded."""
    now = _now()
    async with db.session() as s:
        # Expired requests are cleared here so the table only holds live ones.
        await s.execute(update(PairingRequest)
                        .where(PairingRequest.status == "pending", PairingRequest.expires_at < now)
                        .values(status="expired", resolved_at=now))
        row = (await s.execute(select(PairingRequest).where(
            PairingRequest.channel == msg.channel, PairingRequest.sender_id == msg.sender_id,
            PairingRequest.status == "pending"))).scalars().first()
        if row is not None and _aware(row.expires_at) > now:
            return row.code, False
        pending = await s.scalar(select(func.count()).select_from(PairingRequest).where(
            PairingRequest.channel == msg.channel, PairingRequest.status == "pending"))
        if (pending or 0) >= MAX_PENDING_PER_CHANNEL:
            return None
        used = set((await s.execute(select(PairingRequest.code).where(
            PairingRequest.channel == msg.channel))).scalars())
        code = _new_code()
        while code in used:
            code = _new_code()
        s.add(PairingRequest(channel=msg.channel, account_id=msg.account_id, sender_id=msg.sender_id,
                             sender_name=msg.sender_name, chat_id=msg.chat_id, code=code, status="pending",
                             created_at=now, expires_at=now + PAIRING_TTL))
    return code, True


def _row(r: PairingRequest) -> dict[str, Any]:
    return {
        "channel": r.channel, "accountId": r.account_id, "code": r.code, "senderId": r.sender_id,
        "senderName": r.sender_name, "chatId": r.chat_id, "status": r.status,
        "createdAtMs": int(_aware(r.created_at).timestamp() * 1000),
        "expiresAtMs": int(_aware(r.expires_at).timestamp() * 1000),
    }


async def list_requests(db: Database, channel: str | None = None) -> list[dict[str, Any]]:
    """Pending, unexpired pairing requests, oldest first."""
    now = _now()
    q = select(PairingRequest).where(PairingRequest.status == "pending", PairingRequest.expires_at > now)
    if channel:
        q = q.where(PairingRequest.channel == channel)
    async with db.session() as s:
        rows = (await s.execute(q.order_by(PairingRequest.id))).scalars().all()
    return [_row(r) for r in rows]


def _normalize(code: str) -> str:
    code = code.strip().upper().replace("-", "").replace(" ", "")
    if not code or any(c not in CODE_ALPHABET for c in code):
        raise InvalidRequest("invalid pairing code: at /code: use the letters and digits the sender received",
                             details={"field": "code"})
    return code


async def _resolve(db: Database, channel: str, code: str, status: str) -> dict[str, Any]:
    code, now = _normalize(code), _now()
    async with db.session() as s:
        row = (await s.execute(select(PairingRequest).where(
            PairingRequest.channel == channel, PairingRequest.code == code))).scalars().first()
        if row is None or row.status != "pending" or _aware(row.expires_at) <= now:
            state = "no such" if row is None else ("expired" if row.status in ("pending", "expired") else row.status)
            raise ApprovalNotFound(f"{state} pairing code {code} for {channel}",
                                   details={"channel": channel, "code": code})
        row.status, row.resolved_at = status, now
        if status == "approved":
            await s.execute(delete(ApprovedSender).where(ApprovedSender.channel == channel,
                                                         ApprovedSender.sender_id == row.sender_id))
            s.add(ApprovedSender(channel=channel, sender_id=row.sender_id, sender_name=row.sender_name,
                                 approved_at=now, via="pairing"))
        return _row(row)


async def approve(db: Database, channel: str, code: str) -> dict[str, Any]:
    """Let the sender behind ``code`` talk to the agent from now on. Raises ``ApprovalNotFound``."""
    return await _resolve(db, channel, code, "approved")


async def reject(db: Database, channel: str, code: str) -> dict[str, Any]:
    """Refuse a pending request; the sender may ask again later and gets a new code."""
    return await _resolve(db, channel, code, "rejected")
