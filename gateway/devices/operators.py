"""Device identities seen at connect time, and whether the owner has approved them.

A device is an Ed25519 key a client proved it holds during ``connect``. The first time a key is
seen it is stored; from loopback it is approved at once (when ``gateway.auth.autoApproveLoopbackDevices``
is on), from anywhere else it waits as ``pending`` until the owner approves or rejects it.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from gateway.dispatch.dispatcher import PAIRING
from gateway.protocol.connect_params import ConnectParams
from gateway.store.base import Device, utcnow

if TYPE_CHECKING:
    from gateway.composition.callable_types import Broadcast
    from gateway.store import Database

__all__ = ["APPROVED", "PENDING", "REJECTED", "as_dict", "list_devices", "record", "resolve"]

PENDING = "pending"
APPROVED = "approved"
REJECTED = "rejected"


def _ms(at: datetime | None) -> int | None:
    return int(at.timestamp() * 1000) if at is not None else None


def as_dict(dev: Device) -> dict[str, Any]:
    """The public view of a device row (what ``device.pair.list`` answers)."""
    return {
        "deviceId": dev.id,
        "publicKey": dev.public_key,
        "status": dev.status,
        "role": dev.role,
        "clientId": dev.client_id,
        "platform": dev.platform,
        "displayName": dev.display_name,
        "remote": dev.remote,
        "scopes": [s for s in dev.scopes.split(",") if s],
        "createdAtMs": _ms(dev.created_at),
        "lastSeenAtMs": _ms(dev.last_seen_at),
    }


async def record(db: Database, broadcast: Broadcast, params: ConnectParams, device_id: str, *, remote: str,
                 auto_approve: bool) -> str:
    """Remember the device (first sight creates it) and return its status.

    A rejected device stays rejected: only the owner can change that (``device.pair.approve``).
    """
    assert params.device is not None
    try:
        async with db.session() as s:
            dev = (await s.execute(select(Device).where(Device.id == device_id))).scalar_one_or_none()
            if dev is None:
                dev = Device(
                    id=device_id,
                    public_key=params.device.publicKey,
                    status=APPROVED if auto_approve else PENDING,
                    role=params.role,
                    client_id=params.client.id,
                    platform=params.client.platform or "",
                    display_name=params.client.displayName,
                    remote=remote,
                    scopes=",".join(params.scopes),
                )
                s.add(dev)
                status = dev.status
                info = as_dict(dev)
            else:
                dev.last_seen_at = utcnow()
                dev.remote = remote
                if dev.status == PENDING and auto_approve:
                    dev.status = APPROVED
                if dev.role != "node" or params.role == "node":
                    return dev.status
                # A key known so far only as a node now asks for operator access: that is a new request.
                dev.role, dev.client_id, dev.scopes = params.role, params.client.id, ",".join(params.scopes)
                status = dev.status
                info = as_dict(dev)
    except IntegrityError:
        # Two first connects of the same device raced; the other one created the row.
        async with db.session() as s:
            dev = (await s.execute(select(Device).where(Device.id == device_id))).scalar_one()
            return dev.status
    if status == PENDING:
        broadcast("device.pair.requested", requested_event(info), scope=PAIRING)
    return status


def requested_event(info: dict[str, Any]) -> dict[str, Any]:
    """``device.pair.requested`` in OpenClaw's shape: one request per device key, so its id is the device id."""
    out: dict[str, Any] = {"requestId": info["deviceId"], "deviceId": info["deviceId"], "publicKey": info["publicKey"],
                           "role": info["role"], "scopes": info["scopes"], "ts": int(time.time() * 1000)}
    for key, name in (("displayName", "displayName"), ("platform", "platform"), ("clientId", "clientId"),
                      ("remote", "remoteIp")):
        if info.get(key):
            out[name] = info[key]
    return out


async def list_devices(db: Database, status: str | None = None) -> list[dict[str, Any]]:
    async with db.session() as s:
        # Keys known only as nodes never asked for operator access: they are listed by node.pair.list.
        query = select(Device).where(Device.role != "node").order_by(Device.created_at, Device.id)
        if status is not None:
            query = query.where(Device.status == status)
        return [as_dict(d) for d in (await s.execute(query)).scalars()]


async def resolve(db: Database, broadcast: Broadcast, device_id: str, status: str) -> dict[str, Any] | None:
    """Set a device's status (approve or reject); None when no such device exists."""
    async with db.session() as s:
        dev = (await s.execute(select(Device).where(Device.id == device_id))).scalar_one_or_none()
        if dev is None:
            return None
        dev.status = status
        info = as_dict(dev)
    broadcast("device.pair.resolved", {"requestId": device_id, "deviceId": device_id, "decision": status,
                                          "ts": int(time.time() * 1000)}, scope=PAIRING)
    return info
