"""An ASGI app served by uvicorn on 127.0.0.1 in its own thread and event loop: how the loopback fakes of chat
platforms run, so a test can block (e.g. while the gateway starts) without stalling the fake's answers."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn

__all__ = ["ThreadedServer"]


class ThreadedServer:
    """``start()`` returns once the app accepts connections on ``port``; ``stop()`` ends it."""

    def __init__(self, app: Any, port: int, name: str,
                 on_loop: Callable[[asyncio.AbstractEventLoop], None] | None = None) -> None:
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                                     lifespan="off"))
        self._on_loop = on_loop  # called in the server's loop before it serves (for events the fake sets)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            if self._on_loop is not None:
                self._on_loop(asyncio.get_running_loop())
            await self._server.serve()

        asyncio.run(main())

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
