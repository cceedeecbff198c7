"""Device pairing: ``device.pair.list``, ``device.pair.approve``, ``device.pair.reject``.

Devices are client keys proven during ``connect`` (see ``gateway.devices``). A device from a
non-loopback address waits as pending until the owner approves it here; rejecting a device
also disconnects any socket it has open. Each decision goes to the audit log (``device.approve``,
``device.reject``, or ``node.approve``/``node.reject`` when the request was a node's).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field, model_validator

from gateway.access import Access
from gateway.devices import operators as devices
from gateway.devices.store import APPROVED as NODE_APPROVED
from gateway.devices.store import REJECTED as NODE_REJECTED
from gateway.dispatch.dispatcher import PAIRING, CallContext, NoParams, Params, method
from gateway.protocol import InvalidRequest


class DeviceIdParams(Params):
    """A device named by ``requestId`` (OpenClaw's spelling) or ``deviceId``: we keep one pairing request per
    device key, so a device's request id is its device id (``device.pair.list`` shows both)."""

    requestId: str | None = Field(None, min_length=1, max_length=128)
    deviceId: str | None = Field(None, min_length=1, max_length=128)
    idempotencyKey: str | None = Field(None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _one_id(self) -> DeviceIdParams:
        if not (self.requestId or self.deviceId):
            raise ValueError("requestId: required (the pairing request's id; deviceId is accepted too)")
        return self

    @property
    def device_id(self) -> str:
        return (self.requestId or self.deviceId or "").lower()


def _unknown(device_id: str) -> InvalidRequest:
    return InvalidRequest(f"unknown device: {device_id}", details={"code": "UNKNOWN_DEVICE", "deviceId": device_id})


@method("device.pair.list", access=Access("pairing", "admin"), scope=PAIRING, aliases=("device:pair:list",))
async def device_pair_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Known devices, split into pending, paired (approved) and rejected; nodes waiting for approval are
    pending devices with role ``node`` too, as OpenClaw lists them (its Control UI approves nodes here)."""
    out: dict[str, list[dict[str, Any]]] = {"pending": [], "paired": [], "rejected": []}
    key = {devices.PENDING: "pending", devices.APPROVED: "paired", devices.REJECTED: "rejected"}
    for dev in await devices.list_devices(ctx.db):
        out[key.get(dev["status"], "pending")].append({"requestId": dev["deviceId"], **dev})
    if ctx.nodes is not None:
        for node in (await ctx.nodes.pairing_list())["pending"]:
            out["pending"].append(_node_request(node))
    return out


def _node_request(node: dict[str, Any]) -> dict[str, Any]:
    """A node's pending pairing request in the fields of a device request (``node.pair.list`` has the rest)."""
    entry = {"requestId": node["requestId"], "deviceId": node["nodeId"], "role": "node", "roles": ["node"],
             "ts": node["ts"], "status": "pending"}
    for field, value in (("displayName", node.get("displayName")), ("platform", node.get("platform")),
                         ("remoteIp", node.get("remoteIp"))):
        if value:
            entry[field] = value
    return entry


async def _resolve_node(ctx: CallContext, request_id: str, status: str) -> dict[str, Any] | None:
    """Approve or reject a node's request named by its ``requestId`` (None when no node asked with that id)."""
    nodes = ctx.nodes
    if nodes is None:
        return None
    try:
        node = await nodes.resolve(request_id, status)
    except InvalidRequest as exc:
        if (exc.details or {}).get("code") == "UNKNOWN_REQUEST":
            return None
        raise
    await ctx.audit(f"node.{'approve' if status == NODE_APPROVED else 'reject'}", f"node:{node['nodeId']}", _node(node))
    return {"requestId": request_id, "deviceId": node["nodeId"], "status": node["status"],
            "resolvedAtMs": int(time.time() * 1000), "node": node}


def _node(node: dict[str, Any]) -> dict[str, Any]:
    """What the audit log keeps of a node it names."""
    return {"displayName": node.get("displayName"), "platform": node.get("platform")}


def _device(dev: dict[str, Any]) -> dict[str, Any]:
    """What the audit log keeps of an operator device it names."""
    return {"displayName": dev.get("displayName"), "clientId": dev.get("clientId"), "platform": dev.get("platform"),
            "remote": dev.get("remote"), "scopes": dev.get("scopes")}


@method("device.pair.approve", access=Access("pairing", "admin"), params=DeviceIdParams, scope=PAIRING, idempotent=True,
        aliases=("device:pair:approve",))
async def device_pair_approve(p: DeviceIdParams, ctx: CallContext) -> dict[str, Any]:
    """Approve a pending (or previously rejected) device so it can connect."""
    dev = await devices.resolve(ctx.db, ctx.broadcast, p.device_id, devices.APPROVED)
    if dev is None:
        node = await _resolve_node(ctx, p.requestId, NODE_APPROVED) if p.requestId else None
        if node is None:
            raise _unknown(p.device_id)
        return node
    await ctx.audit("device.approve", f"device:{dev['deviceId']}", _device(dev))
    return {"requestId": dev["deviceId"], "deviceId": dev["deviceId"], "status": dev["status"],
            "resolvedAtMs": int(time.time() * 1000), "device": dev}


@method("device.pair.reject", access=Access("pairing", "admin"), params=DeviceIdParams, scope=PAIRING, idempotent=True,
        aliases=("device:pair:reject",))
async def device_pair_reject(p: DeviceIdParams, ctx: CallContext) -> dict[str, Any]:
    """Reject a device: it is refused from now on, and its open sockets are closed."""
    dev = await devices.resolve(ctx.db, ctx.broadcast, p.device_id, devices.REJECTED)
    if dev is None:
        node = await _resolve_node(ctx, p.requestId, NODE_REJECTED) if p.requestId else None
        if node is None:
            raise _unknown(p.device_id)
        return node
    closed = ctx.close_connections(lambda caller: caller.device_id == dev["deviceId"], "device rejected")
    await ctx.audit("device.reject", f"device:{dev['deviceId']}", {**_device(dev), "disconnected": closed})
    return {"requestId": dev["deviceId"], "deviceId": dev["deviceId"], "status": dev["status"],
            "resolvedAtMs": int(time.time() * 1000), "disconnected": closed, "device": dev}
