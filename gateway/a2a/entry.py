"""The capability's start, importing the SDK only when the server is switched on (``a2a.enabled``): a gateway
without the ``a2a`` extra starts as before."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from gateway.composition.hosts import CapabilityHost

__all__ = ["start"]

log = structlog.get_logger("gateway.a2a")


async def start(host: CapabilityHost) -> None:
    """Serve the agents over A2A when ``a2a.enabled`` (the client side, ``a2a.send``, needs no start)."""
    if not host.config.a2a.enabled:
        return
    from gateway.extras import require

    require("a2a", "the A2A server (a2a.enabled)")
    from gateway.a2a.server import A2A_SERVER, A2aServer

    server = A2aServer(host)
    host.services.provide(A2A_SERVER, server)
    for route in server.routes():
        host.add_route(route)
    host.on_stop(server.stop)
    log.info("a2a serving", agents=host.config.a2a.agents or "all")
