"""Messages for an agent whose node is away: kept, and run when the node is back.

A turn that finds its node offline, or loses it mid-turn, ends with a line in the chat saying so; its messages
(already in the transcript) are kept here and submitted again, in order and as their senders sent them, when the
node connects to this replica (``NodeService.on_connect``) or is seen connected to another one (a check every
few seconds while anything waits). Kept in this process's memory: a gateway restart meanwhile loses the wait,
not the messages, which stay in the transcript.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import structlog

from gateway.devices.store import APPROVED

if TYPE_CHECKING:
    from gateway.devices.service import NodeService
    from gateway.runs import Run, RunQueue, RunRequest

__all__ = ["Parked"]

log = structlog.get_logger("gateway.agent_hosts")

POLL_S = 3.0
SETTLE_S = 0.3
"""After a node connects, before its kept turns start (its connect settles: presence, its description)."""


class Parked:
    def __init__(self, nodes: NodeService, runs: RunQueue) -> None:
        self._nodes = nodes
        self._runs = runs
        self._waiting: dict[str, list[RunRequest]] = {}
        """By node reference (as the agent names it), the messages in order."""
        self._poll: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def keep(self, node_ref: str, run: Run) -> int:
        """Keep ``run``'s messages for ``node_ref``; how many now wait for it."""
        queue = self._waiting.setdefault(node_ref, [])
        queue += [replace(req, stored=True, run_id=None, inbound=None, entry_id=None) for req in run.requests]
        log.info("messages kept for a node that is away", node=node_ref, session_key=run.session_key,
                 waiting=len(queue))
        if self._poll is None or self._poll.done():
            self._poll = asyncio.create_task(self._watch(), name="agent-hosts-parked")
        return len(queue)

    def waiting(self) -> dict[str, int]:
        return {ref: len(reqs) for ref, reqs in self._waiting.items()}

    def node_connected(self, node_id: str) -> None:
        task = asyncio.create_task(self._connected(node_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _connected(self, node_id: str) -> None:
        await asyncio.sleep(SETTLE_S)
        node = await self._nodes.store.find(node_id)
        if node is not None:
            await self._release(node)

    async def _release(self, node: dict[str, Any]) -> None:
        refs = [ref for ref in list(self._waiting) if ref.lower() in
                (node["nodeId"], node["displayName"].lower()) or (len(ref) >= 8 and node["nodeId"].startswith(ref))]
        for ref in refs:
            for req in self._waiting.pop(ref, []):
                log.info("a kept message runs: its node is back", node=ref, session_key=req.session_key)
                await self._runs.submit(req)

    async def _watch(self) -> None:
        while self._waiting:
            await asyncio.sleep(POLL_S)
            for ref in list(self._waiting):
                node = await self._nodes.store.find(ref)
                if node is not None and node["status"] == APPROVED and self._nodes.live_view(node)["connected"]:
                    await self._release(node)

    async def stop(self) -> None:
        for task in [*self._tasks, *([self._poll] if self._poll else [])]:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
