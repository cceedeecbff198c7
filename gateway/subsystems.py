"""The gateway's subsystems, started in this order when a gateway starts.

Each entry names a module with ``async def start(gateway) -> None``. A subsystem keeps its
service in ``gateway.services[<name>]`` and registers its cleanup with ``gateway.on_stop``.
Listing them here, in one place, makes the start order explicit and easy to read.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.core import Gateway

__all__ = ["SUBSYSTEMS", "start_all"]

SUBSYSTEMS: list[str] = [
    "gateway.bus",
    "gateway.config_watch",
    "gateway.sessions",
    "gateway.runs",
    "channels.bridge",
    "channels.manager",
]


async def start_all(gateway: Gateway) -> None:
    for name in SUBSYSTEMS:
        module = importlib.import_module(name)
        await module.start(gateway)
