"""A Unix socket that carries a sandboxed run's MCP shim to the gateway when the run has no network.

A run with ``network: none`` or ``loopback`` lives in a network namespace of its own: the gateway's TCP port is
not there. The socket file is, bound into the sandbox; every connection to it is piped to the gateway's own
listening address, so the gateway sees an ordinary loopback client that still has to present its run token.
Started on first use, in the gateway's private runs folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import structlog

__all__ = ["GatewayRelay"]

log = structlog.get_logger("gateway.sandbox")

_CHUNK = 65_536


class GatewayRelay:
    def __init__(self, path: Path, target: Callable[[], tuple[str, int]]) -> None:
        self.path = path
        self._target = target
        """Where the gateway listens (known once the server is bound)."""
        self._server: asyncio.AbstractServer | None = None
        self._lock = asyncio.Lock()
        self._pipes: set[asyncio.Task[None]] = set()

    async def socket(self) -> Path:
        """The socket's path, started the first time it is asked for."""
        async with self._lock:
            if self._server is None:
                self.path.unlink(missing_ok=True)
                self._server = await asyncio.start_unix_server(self._accept, path=str(self.path))
                os.chmod(self.path, 0o600)
        return self.path

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._pipes):
            task.cancel()
        self.path.unlink(missing_ok=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = self._target()
        host = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError as exc:
            log.warning("relay: the gateway's port did not answer", error=str(exc))
            writer.close()
            return
        pipes = [asyncio.create_task(self._pipe(reader, up_writer)), asyncio.create_task(self._pipe(up_reader, writer))]
        self._pipes.update(pipes)
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in pipes:
                task.cancel()
                self._pipes.discard(task)
            for w in (writer, up_writer):
                with contextlib.suppress(Exception):
                    w.close()

    @staticmethod
    async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await src.read(_CHUNK):
                dst.write(data)
                await dst.drain()
