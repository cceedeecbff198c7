"""The gateway's subsystems, started in this order when a gateway starts.

Each entry names a gateway module with ``async def start(gateway) -> None``; it sets its service as a
typed attribute of the ``Gateway`` and registers its clean-up with ``gateway.on_stop``. Then the
subsystems of other packages start (the ``remoteclaw.subsystems`` extension point: the channels), each
with a ``PlatformHost``, so the gateway never names their modules. Listing the order here, in one
place, keeps it explicit: the bus first (every later event goes through it), the executor after the
run queue it serves, the platforms last (their messages need everything else).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import structlog

from gateway.extensions import SUBSYSTEMS as EXTENSION_SUBSYSTEMS

if TYPE_CHECKING:
    from gateway.core import Gateway

__all__ = ["SUBSYSTEMS", "start_all"]

log = structlog.get_logger("gateway.subsystems")

SUBSYSTEMS: list[str] = [
    "gateway.bus",
    "gateway.config.watch",
    "gateway.sessions",
    "gateway.runs.queue",
    "gateway.runs.replicas",
    "gateway.agents.executor",
    "gateway.approvals.service",
    "gateway.cron.service",
    "gateway.plugins.service",
    "gateway.devices.service",
    "gateway.canvas.service",
    "gateway.browser.serve",
    "gateway.voice.service",
    "gateway.mcp_http.transport",
]


async def start_all(gateway: Gateway) -> None:
    for name in SUBSYSTEMS:
        module = importlib.import_module(name)
        await module.start(gateway)
    from gateway.platforms import PlatformHost

    for name in EXTENSION_SUBSYSTEMS.names():
        try:
            start = EXTENSION_SUBSYSTEMS.load(name)
        except ImportError as exc:  # its package is not installed here: the gateway runs without it
            log.warning("subsystem not available", subsystem=name, error=str(exc))
            continue
        await start(PlatformHost(gateway))
    await _recover(gateway)
    gateway.hooks.fire("gateway_start", {"version": gateway.version, "replicaId": gateway.replica_id})


async def _recover(gateway: Gateway) -> None:
    """Turns this replica's previous process left unfinished go back into the queue before anything new
    arrives (their order kept); the chats hear about interrupted ones once their accounts are up."""
    import asyncio

    from gateway.runs.recovery import recover, send_notices

    gateway.recovered, notices = await recover(gateway)
    task = asyncio.create_task(send_notices(gateway, notices), name="recovery-notices")  # and unsent replies
    gateway.background.add(task)
    task.add_done_callback(gateway.background.discard)
