"""An aiohttp app served on a free loopback port, for the fakes that need WebSockets beside HTTP."""

from __future__ import annotations

from aiohttp import web

__all__ = ["serve"]


async def serve(app: web.Application) -> tuple[web.AppRunner, int]:
    """Start ``app`` on 127.0.0.1 (a port from the kernel); the runner (``cleanup()`` stops it) and the port."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
