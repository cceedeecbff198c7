"""A recording WebSocket relay between a client we do not control (the ``openclaw`` CLI) and our gateway.

Every frame passes through unchanged, both ways; the gateway's frames are also handed to
``tests.support.ws.FRAME_LOG`` (when set) with the method of the request each response answers, so the
``openclaw_frames`` marker checks what the real CLI received against OpenClaw's schema. The relay runs its
own event loop in a thread, because the CLI tests are plain functions around ``subprocess.run``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import orjson
from websockets.asyncio.client import connect
from websockets.asyncio.server import Server, ServerConnection, serve

from tests.support import ws

__all__ = ["RecordingRelay"]


class RecordingRelay:
    """``url`` forwards to ``target``; start with ``with RecordingRelay(target) as relay:``."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._server: Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="frame-relay", daemon=True)

    def __enter__(self) -> RecordingRelay:
        async def start() -> Server:
            return await serve(self._relay, "127.0.0.1", 0, max_size=None, compression=None, ping_interval=None)

        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(start(), self._loop).result(10)
        port = next(iter(self._server.sockets)).getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}/"
        return self

    def __exit__(self, *exc: object) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
                await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _relay(self, client: ServerConnection) -> None:
        methods: dict[str, str] = {}
        async with connect(self.target, max_size=None, compression=None, ping_interval=None) as upstream:

            async def up() -> None:
                async for message in client:
                    with contextlib.suppress(ValueError):
                        frame = orjson.loads(message)
                        if isinstance(frame, dict) and frame.get("type") == "req":
                            methods[str(frame.get("id"))] = str(frame.get("method"))
                    await upstream.send(message)

            async def down() -> None:
                async for message in upstream:
                    _record(message, methods)
                    await client.send(message)

            tasks = [asyncio.create_task(up()), asyncio.create_task(down())]
            with contextlib.suppress(Exception):
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()


def _record(message: Any, methods: dict[str, str]) -> None:
    log = ws.FRAME_LOG
    if log is None:
        return
    with contextlib.suppress(ValueError):
        frame = orjson.loads(message)
        if isinstance(frame, dict):
            log.received(frame, methods.get(str(frame.get("id"))) if frame.get("type") == "res" else None)
