"""Who may talk to the agent: DM policy, group rules, the owner decision, and pairing codes.

The decision itself (``decide``) is a pure function of the channel's policy config, the message and
whether the sender was approved through pairing, so it is easy to read and to test. Pairing
requests and approved senders live in the database (``gateway.store.messages``), never in the
config file: approving someone must not rewrite what the operator wrote.

Policies (per channel, ``channels.<name>``):
- ``dmPolicy``: ``pairing`` (default; an unknown sender gets a short code the owner approves),
  ``allowlist`` (only ``allowFrom`` and earlier approvals), ``open`` (anyone), ``disabled``.
- groups: ``groupPolicy`` ``allowlist`` (default; only chats under ``groups``, ``*`` for all),
  ``open`` or ``disabled``; senders limited by the group's ``allowFrom`` or ``groupAllowFrom``;
  ``requireMention`` (default true) makes the bot answer only when mentioned or replied to.
- owner: ``ownerAllowFrom`` on the channel, or ``channels.ownerAllowFrom`` entries ``<channel>:<id>``.
  Only the owner's runs get the owner tool tier. The owner may always DM the bot.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlalchemy import delete, func, select, update

from channels.base import Inbound
from gateway.config_channels import ChannelAccessConfig
from gateway.protocol import ApprovalNotFound, InvalidRequest
from gateway.store import Database
from gateway.store.messages import ApprovedSender, PairingRequest

__all__ = [
    "CODE_ALPHABET",
    "PAIRING_TTL",
    "Decision",
    "access_config",
    "approve",
    "decide",
    "is_approved",
    "is_owner",
    "list_requests",
    "reject",
    "request_code",
]

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""No 0/O or 1/I: codes are read aloud and typed from a phone."""
CODE_LENGTH = 8
PAIRING_TTL = timedelta(hours=1)
MAX_PENDING_PER_CHANNEL = 20
"""A flood of strangers cannot grow the table without bound: past this, new ones are ignored."""


@dataclass(frozen=True, slots=True)
class Decision:
    action: Literal["allow", "pair", "drop"]
    reason: str
    is_owner: bool = False


def access_config(section: Any) -> ChannelAccessConfig:
    """The access part of a channel's config section (a model, a plain dict, or nothing)."""
    if isinstance(section, ChannelAccessConfig):
        return section
    if hasattr(section, "model_dump"):
        section = section.model_dump()
    if not isinstance(section, dict):
        return ChannelAccessConfig()
    known = {k: v for k, v in section.items() if k in ChannelAccessConfig.model_fields}
    return ChannelAccessConfig.model_validate(known)


def _matches(entries: list[str], channel: str, sender_id: str) -> bool:
    for raw in entries:
        entry = raw.strip()
        prefix, sep, rest = entry.partition(":")
        if sep and prefix.strip().lower() == channel:
            entry = rest.strip()  # "telegram:123" on telegram; other prefixes never match a bare id
        if entry == "*" or entry == sender_id:
            return True
    return False


def is_owner(cfg: ChannelAccessConfig, global_owners: list[str], msg: Inbound) -> bool:
    """Whether the sender is this channel's owner (channel list, or ``<channel>:<id>`` globally)."""
    if _matches([e for e in cfg.ownerAllowFrom if e.strip() != "*"], msg.channel, msg.sender_id):
        return True
    scoped = [e for e in global_owners if ":" in e and not e.endswith(":*")]
    return _matches(scoped, msg.channel, msg.sender_id)


def decide(cfg: ChannelAccessConfig, msg: Inbound, *, owner: bool, approved: bool) -> Decision:
    """Allow the message to reach the agent, answer with a pairing code, or drop it."""
    if not cfg.enabled:
        return Decision("drop", "channel disabled")
    if msg.chat_type == "dm":
        if owner:
            return Decision("allow", "owner", is_owner=True)
        if cfg.dmPolicy == "disabled":
            return Decision("drop", "dms disabled")
        if cfg.dmPolicy == "open" or approved or _matches(cfg.allowFrom, msg.channel, msg.sender_id):
            return Decision("allow", f"dm {cfg.dmPolicy}")
        if cfg.dmPolicy == "pairing":
            return Decision("pair", "unknown sender")
        return Decision("drop", "sender not in allowFrom")
    if msg.chat_type != "group":
        return Decision("drop", f"{msg.chat_type} posts are not conversations")
    if cfg.groupPolicy == "disabled":
        return Decision("drop", "groups disabled")
    group = cfg.groups.get(msg.chat_id) or cfg.groups.get("*")
    if group is None and cfg.groupPolicy == "allowlist":
        return Decision("drop", "group not in allowlist")
    if group is not None and not group.enabled:
        return Decision("drop", "group disabled")
    senders = (group.allowFrom if group and group.allowFrom else None) or cfg.groupAllowFrom
    if senders and not owner and not _matches(senders, msg.channel, msg.sender_id):
        return Decision("drop", "sender not allowed in this group")
    need_mention = cfg.requireMention if group is None or group.requireMention is None else group.requireMention
    if need_mention and not msg.mentioned:
        return Decision("drop", "not mentioned")
    return Decision("allow", "group", is_owner=owner)


# -- pairing store ---------------------------------------------------------------------------------


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
