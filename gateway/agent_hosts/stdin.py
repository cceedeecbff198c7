"""The stdin of a CLI a node runs: what the gateway writes to it reaches the node as ``agent.input``, in order.

A turn on a node whose runtime talks to its CLI over stdin (steering, Codex's app-server, Gemini's ``--acp``,
``runtime: acp``) gets a ``NodeStdin`` as the pipe of its ``StdinFeed``: the adapters write to the feed as to a
local process's stdin. Writes are queued and sent one call at a time, each a node invoke
``agent.input {turnId, seq, data?, holds?, close?}`` routed like any other (to the replica holding the node's
socket when it is another one), so they reach the CLI in the order written, and a call is made only once the
node has started the CLI (its ``_spawned`` line). What waits is bounded (``MAX_QUEUED``): a node that stops
taking input breaks the pipe, as a local CLI that stopped reading would. ``holds`` tells the node how many of
the CLI's requests wait on the person (its no-output watchdog is held meanwhile); ``close`` closes the CLI's
stdin. Each call is made only for a turn open here (placed and running) on the node the access model gives it
(``TurnStreams.input_allowed``: the same decision as for the turn's output).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import TYPE_CHECKING, Any

import structlog

from gateway.protocol import RpcError

if TYPE_CHECKING:
    from gateway.agent_hosts.streams import TurnStreams
    from gateway.devices.service import NodeService

__all__ = ["CHUNK_CHARS", "MAX_QUEUED", "NodeStdin"]

log = structlog.get_logger("gateway.agent_hosts")

MAX_QUEUED = 16 * 1024 * 1024
"""Bytes written and not yet taken by the node, at most: beyond it the pipe is broken (the feed closes)."""
CHUNK_CHARS = 512 * 1024
"""Characters of stdin per ``agent.input`` at most (the node refuses more than twice this)."""
INPUT_TIMEOUT_MS = 30_000


class NodeStdin:
    """A ``process.Pipe`` whose far end is the stdin of the CLI running turn ``turn_id`` on node ``node_id``."""

    def __init__(self, nodes: NodeService, streams: TurnStreams, *, node_id: str, turn_id: str, key: str,
                 started: asyncio.Event) -> None:
        self._nodes = nodes
        self._streams = streams
        self._node_id = node_id
        self._turn_id = turn_id
        self._key = key
        self._started = started
        self._queue: deque[str] = deque()
        self._queued = 0
        self._holds: int | None = None
        self._closing = False
        self._wake = asyncio.Event()
        self.seq = 0
        self.broken: str | None = None
        """Why nothing more reaches the CLI (the node refused, went away, or its CLI's stdin closed)."""
        self._task = asyncio.get_running_loop().create_task(self._send(), name=f"node-stdin-{turn_id}")

    def write(self, data: bytes) -> None:
        if self._closing or self.broken is not None:
            raise BrokenPipeError(self.broken or "stdin is closed")
        if self._queued + len(data) > MAX_QUEUED:
            self.broken = f"more than {MAX_QUEUED} bytes of stdin wait for the node"
            raise BrokenPipeError(self.broken)
        self._queue.append(data.decode("utf-8", "replace"))
        self._queued += len(data)
        self._wake.set()

    def hold(self, n: int) -> None:
        self._holds = n
        self._wake.set()

    def close(self) -> None:
        self._closing = True
        self._wake.set()

    async def aclose(self) -> None:
        """The turn ended: nothing more is sent."""
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task

    def _frame(self) -> dict[str, Any]:
        """The next call: as much queued stdin as one call carries, the holds if they changed, the close once
        everything before it is sent."""
        parts: list[str] = []
        size = 0
        while self._queue and size < CHUNK_CHARS:
            part = self._queue.popleft()
            if size + len(part) > CHUNK_CHARS:
                part, rest = part[:CHUNK_CHARS - size], part[CHUNK_CHARS - size:]
                self._queue.appendleft(rest)
            parts.append(part)
            size += len(part)
        self._queued = sum(len(p.encode()) for p in self._queue) if self._queue else 0
        self.seq += 1
        frame: dict[str, Any] = {"turnId": self._turn_id, "seq": self.seq}
        if parts:
            frame["data"] = "".join(parts)
        if self._holds is not None:
            frame["holds"], self._holds = self._holds, None
        if self._closing and not self._queue:
            frame["close"] = True
        return frame

    async def _send(self) -> None:
        await self._started.wait()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue or self._holds is not None or self._closing:
                if not self._streams.input_allowed(self._turn_id, self._node_id):
                    self.broken = "the turn is not running on that node"
                    return
                frame = self._frame()
                try:
                    answer = await self._nodes.invoke(self._node_id, "agent.input", frame,
                                                      timeout_ms=INPUT_TIMEOUT_MS, remember=False,
                                                      idempotency_key=f"{self._key}:{frame['seq']}")
                except RpcError as err:
                    self.broken = err.message
                    log.warning("stdin for a node turn not delivered", turn_id=self._turn_id, error=err.message)
                    return
                payload = answer.get("payload") or {}
                if frame.get("close") or payload.get("closed"):
                    if payload.get("closed") and not frame.get("close"):
                        self.broken = "the CLI's stdin on the node is closed"
                    return
