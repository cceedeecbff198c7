"""Device pairing: ``device.pair.list``, ``device.pair.approve``, ``device.pair.reject``.

Devices are client keys proven during ``connect`` (see ``gateway.devices``). A device from a
non-loopback address waits as pending until the owner approves it here; rejecting a device
also disconnects any socket it has open.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field

from gateway.connection import CLOSE_POLICY
from gateway.devices import operators as devices
from gateway.protocol import InvalidRequest
from gateway.rpc import PAIRING, CallContext, NoParams, Params, method


class DeviceIdParams(Params):
    deviceId: str = Field(min_length=1, max_length=128)
    idempotencyKey: str | None = Field(None, min_length=1, max_length=200)


def _unknown(device_id: str) -> InvalidRequest:
    return InvalidRequest(f"unknown device: {device_id}", details={"code": "UNKNOWN_DEVICE", "deviceId": device_id})


@method("device.pair.list", scope=PAIRING, aliases=("device:pair:list",))
async def device_pair_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Known devices, split into pending, paired (approved) and rejected."""
    out: dict[str, list[dict[str, Any]]] = {"pending": [], "paired": [], "rejected": []}
    key = {devices.PENDING: "pending", devices.APPROVED: "paired", devices.REJECTED: "rejected"}
    for dev in await devices.list_devices(ctx.gateway):
        out[key.get(dev["status"], "pending")].append(dev)
    return out


@method("device.pair.approve", params=DeviceIdParams, scope=PAIRING, idempotent=True,
        aliases=("device:pair:approve",))
async def device_pair_approve(p: DeviceIdParams, ctx: CallContext) -> dict[str, Any]:
    """Approve a pending (or previously rejected) device so it can connect."""
    dev = await devices.resolve(ctx.gateway, p.deviceId.lower(), devices.APPROVED)
    if dev is None:
        raise _unknown(p.deviceId)
    return {"deviceId": dev["deviceId"], "status": dev["status"], "resolvedAtMs": int(time.time() * 1000),
            "device": dev}


@method("device.pair.reject", params=DeviceIdParams, scope=PAIRING, idempotent=True,
        aliases=("device:pair:reject",))
async def device_pair_reject(p: DeviceIdParams, ctx: CallContext) -> dict[str, Any]:
    """Reject a device: it is refused from now on, and its open sockets are closed."""
    gw = ctx.gateway
    dev = await devices.resolve(gw, p.deviceId.lower(), devices.REJECTED)
    if dev is None:
        raise _unknown(p.deviceId)
    closed = 0
    for conn in list(gw.connections.values()):
        if conn.caller is not None and conn.caller.device_id == dev["deviceId"]:
            conn.close(CLOSE_POLICY, "device rejected")
            closed += 1
    return {"deviceId": dev["deviceId"], "status": dev["status"], "resolvedAtMs": int(time.time() * 1000),
            "disconnected": closed, "device": dev}
