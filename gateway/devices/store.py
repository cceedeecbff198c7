"""Node pairing in the device table: one row per device key, so a machine that is both an operator device
and a node is one entry the owner sees once.

A node's pairing is its own column (``node_status``) beside the operator approval (``status``): approving a
laptop's operator device does not let it run commands as a node, nor the other way round. A pending node
has a request id the owner approves or rejects; approval lets it take invocations and gets it a node token
(only its sha256 is stored) with which it can connect later without the gateway token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError

from gateway.store import Database
from gateway.store.base import Device, utcnow

__all__ = ["APPROVED", "PENDING", "REJECTED", "Admission", "NodeStore", "as_node"]

PENDING = "pending"
APPROVED = "approved"
REJECTED = "rejected"


def _ms(at: datetime | None) -> int | None:
    return int(at.timestamp() * 1000) if at is not None else None


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _list(text: str | None) -> list[str]:
    try:
        value = orjson.loads(text or "[]")
    except orjson.JSONDecodeError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def as_node(dev: Device) -> dict[str, Any]:
    """The public view of a node row (``node.list``, ``node.pair.list``); never the token."""
    return {
        "nodeId": dev.id,
        "displayName": dev.node_alias or dev.display_name or dev.id[:12],
        "reportedName": dev.display_name,
        "platform": dev.platform,
        "version": dev.node_version,
        "clientId": dev.client_id,
        "remoteIp": dev.remote,
        "caps": _list(dev.node_caps),
        "commands": _list(dev.node_commands),
        "status": dev.node_status,
        "paired": dev.node_status == APPROVED,
        "requestId": dev.node_request_id,
        "requestedAtMs": _ms(dev.node_requested_at),
        "approvedAtMs": _ms(dev.node_approved_at),
        "lastConnectedAtMs": _ms(dev.node_connected_at),
        "replica": dev.node_replica,
        "instance": dev.node_instance,
        "hasToken": dev.node_token_hash is not None,
    }


@dataclass(frozen=True, slots=True)
class Admission:
    """What a node's connect found: its status, its row, and whether this connect opened a new request."""

    status: str
    node: dict[str, Any]
    new_request: bool


class NodeStore:
    """Node rows of the device table, as the node service uses them."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def admit(self, *, device_id: str, public_key: str, client_id: str, display_name: str | None,
                    platform: str, version: str, caps: list[str], commands: list[str], remote: str,
                    replica: str, instance: str, auto_approve: bool) -> Admission:
        """Record a node's connect: first sight opens a pending request (or pairs it, with ``auto_approve``);
        later connects refresh what it declares. A rejected node stays rejected until the owner acts."""
        now = utcnow()
        for _attempt in range(2):
            try:
                async with self.db.session() as s:
                    dev = await s.get(Device, device_id)
                    new_request = False
                    if dev is None:
                        dev = Device(id=device_id, public_key=public_key, status=PENDING, role="node",
                                     client_id=client_id, platform=platform, display_name=display_name,
                                     remote=remote, scopes="")
                        s.add(dev)
                    if dev.node_status is None:
                        dev.node_status = APPROVED if auto_approve else PENDING
                        dev.node_request_id = uuid.uuid4().hex
                        dev.node_requested_at = now
                        if auto_approve:
                            dev.node_approved_at = now
                        new_request = not auto_approve
                    elif dev.node_status == PENDING and auto_approve:
                        dev.node_status, dev.node_approved_at = APPROVED, now
                    dev.client_id = client_id
                    dev.platform = platform
                    dev.display_name = display_name
                    dev.node_version = version
                    dev.node_caps = orjson.dumps(caps).decode()
                    dev.node_commands = orjson.dumps(commands).decode()
                    dev.remote = remote
                    dev.last_seen_at = now
                    if dev.node_status != REJECTED:
                        dev.node_connected_at = now
                        dev.node_replica, dev.node_instance = replica, instance
                    await s.flush()
                    return Admission(dev.node_status, as_node(dev), new_request)
            except IntegrityError:  # two first connects of one key raced: the other created the row
                continue
        raise RuntimeError(f"could not record node {device_id}")

    async def disconnected(self, node_id: str, instance: str) -> None:
        """The node's socket on ``instance`` closed (unless it has already reconnected elsewhere)."""
        async with self.db.session() as s:
            await s.execute(update(Device).where(Device.id == node_id, Device.node_instance == instance)
                            .values(node_replica=None, node_instance=None))

    async def forget_replica(self, replica: str) -> int:
        """Clear the sockets a previous process of ``replica`` held (it is gone); returns how many."""
        async with self.db.session() as s:
            result = await s.execute(update(Device).where(Device.node_replica == replica)
                                     .values(node_replica=None, node_instance=None))
            return int(getattr(result, "rowcount", 0) or 0)

    async def get(self, node_id: str) -> dict[str, Any] | None:
        async with self.db.session() as s:
            dev = await s.get(Device, node_id)
            return as_node(dev) if dev is not None and dev.node_status is not None else None

    async def find(self, ref: str) -> dict[str, Any] | None:
        """A node by id, id prefix (8+ characters) or display name (case-insensitive); None if none or several."""
        ref = ref.strip()
        node = await self.get(ref.lower())
        if node is not None:
            return node
        matches = [n for n in await self.list()
                   if n["displayName"].lower() == ref.lower() or (n["reportedName"] or "").lower() == ref.lower()
                   or (len(ref) >= 8 and n["nodeId"].startswith(ref.lower()))]
        return matches[0] if len(matches) == 1 else None

    async def list(self, status: str | None = None) -> list[dict[str, Any]]:
        async with self.db.session() as s:
            query = select(Device).where(Device.node_status.is_not(None)).order_by(Device.created_at, Device.id)
            if status is not None:
                query = query.where(Device.node_status == status)
            return [as_node(d) for d in (await s.execute(query)).scalars()]

    async def by_request(self, request_id: str) -> dict[str, Any] | None:
        """The node behind a pairing request id (or, for convenience, a node id)."""
        async with self.db.session() as s:
            query = select(Device).where(or_(Device.node_request_id == request_id, Device.id == request_id.lower()),
                                         Device.node_status.is_not(None))
            dev = (await s.execute(query)).scalars().first()
            return as_node(dev) if dev is not None else None

    async def resolve(self, node_id: str, status: str) -> dict[str, Any] | None:
        """Approve or reject; approving clears any old token (a new one is issued). None when unknown."""
        async with self.db.session() as s:
            dev = await s.get(Device, node_id)
            if dev is None or dev.node_status is None:
                return None
            dev.node_status = status
            dev.node_token_hash = None
            dev.node_approved_at = utcnow() if status == APPROVED else None
            return as_node(dev)

    async def remove(self, node_id: str) -> dict[str, Any] | None:
        """Forget the node side of a device (its pairing and token); it may ask again. None when unknown."""
        async with self.db.session() as s:
            dev = await s.get(Device, node_id)
            if dev is None or dev.node_status is None:
                return None
            info = as_node(dev)
            for column in ("node_status", "node_request_id", "node_alias", "node_token_hash", "node_requested_at",
                           "node_approved_at", "node_replica", "node_instance"):
                setattr(dev, column, None)
            if dev.role == "node" and dev.status != "approved":
                await s.delete(dev)  # a node-only key: nothing else refers to it
            return info

    async def rename(self, node_id: str, name: str) -> dict[str, Any] | None:
        async with self.db.session() as s:
            dev = await s.get(Device, node_id)
            if dev is None or dev.node_status is None:
                return None
            dev.node_alias = name
            return as_node(dev)

    async def issue_token(self, node_id: str) -> str | None:
        """A fresh node token for an approved node (replacing any earlier one); None when not approved."""
        token = "rcn_" + secrets.token_urlsafe(32)
        async with self.db.session() as s:
            result = await s.execute(update(Device).where(Device.id == node_id, Device.node_status == APPROVED)
                                     .values(node_token_hash=_hash(token)))
            return token if (getattr(result, "rowcount", 0) or 0) > 0 else None

    async def token_valid(self, node_id: str, token: str) -> bool:
        """Whether ``token`` is the current node token of this approved node."""
        async with self.db.session() as s:
            dev = await s.get(Device, node_id)
        if dev is None or dev.node_status != APPROVED or dev.node_token_hash is None:
            return False
        return hmac.compare_digest(dev.node_token_hash, _hash(token))

    async def prune_pending(self, keep: int) -> int:
        """Drop the oldest pending requests beyond ``keep`` (a flood of unknown keys must not grow the table)."""
        async with self.db.session() as s:
            rows = (await s.execute(select(Device).where(Device.node_status == PENDING)
                                    .order_by(Device.node_requested_at.desc()).offset(keep))).scalars().all()
            for dev in rows:
                if dev.role == "node" and dev.status != "approved":
                    await s.delete(dev)
                else:
                    dev.node_status = dev.node_request_id = None
            return len(rows)
