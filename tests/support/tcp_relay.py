"""A TCP relay on loopback: a second address for the gateway, as a machine elsewhere on the network sees it.

A node host pointed at the relay's port reaches the gateway only through it (its view of the gateway's address
differs from the gateway's own), and every connection's first line (an HTTP request line: ``GET /ws``,
``POST /model/anthropic/v1/messages``) is kept in ``first_lines``, so a test sees which requests took the
node's route. Bytes pass unchanged both ways; the relay runs its own event loop in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

__all__ = ["TcpRelay"]


class TcpRelay:
    """``port`` forwards to ``127.0.0.1:target_port``; ``with TcpRelay(target) as relay:``."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.first_lines: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-relay", daemon=True)

    def __enter__(self) -> TcpRelay:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._relay, "127.0.0.1", 0), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        first = await reader.readline()
        self.first_lines.append(first.decode("latin-1").strip())
        up_writer.write(first)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    @staticmethod
    async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                dst.close()
