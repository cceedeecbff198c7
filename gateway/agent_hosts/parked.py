"""Messages for an agent whose node is away: kept, and run when the node is back.

A turn that finds its node offline, or loses it mid-turn, ends with a line in the chat saying so; its messages
(already in the transcript) are kept in the database (``store``: a gateway restart meanwhile keeps them) and
submitted again, in order and as their senders sent them, when the node connects to this replica
(``NodeService.on_connect``) or is seen connected to another one (a check every few seconds while anything waits,
on every replica: whichever claims a message runs it, once).

A turn cut off mid-turn is treated as a gateway restart treats an interrupted turn (``gateway.runs.recovery``): it
runs again only if that is safe — ``agents.retryInterrupted`` is on, the turn sent nothing to a chat meanwhile (the
gateway's message log: the node's side-effects file is not here), and it was not cut off before. Otherwise the
chat is told it was interrupted and asked to send it again.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog
from sqlalchemy import select

from gateway.agent_hosts.store import KeptStore
from gateway.devices.store import APPROVED
from gateway.runs.recovery import MAX_ATTEMPTS

if TYPE_CHECKING:
    from gateway.config import ConfigStore
    from gateway.devices.service import NodeService
    from gateway.runs import Run, RunQueue
    from gateway.store import Database

__all__ = ["Parked"]

log = structlog.get_logger("gateway.agent_hosts")

POLL_S = 3.0
SETTLE_S = 0.3
"""After a node connects, before its kept turns start (its connect settles: presence, its description)."""
KEPT = "your message is kept and runs when the node is back"
CUT = "it had started, so it is not run again by itself: please send it again"


class Parked:
    def __init__(self, nodes: NodeService, runs: RunQueue, db: Database, config: ConfigStore) -> None:
        self._nodes = nodes
        self._runs = runs
        self._db = db
        self._config = config
        self._store = KeptStore(db)
        self._lost: dict[str, int] = {}
        """Runs started from kept messages here, by run id: how often their message's turn was cut off before."""
        self._poll: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        """Messages kept before a restart (by this process or another replica): watched for their node."""
        if await self._store.counts():
            self._watching()

    async def keep(self, node_ref: str, run: Run, why: str, *, mid_turn: bool) -> str:
        """Keep ``run``'s messages for ``node_ref`` (or, for a turn cut off that must not run again, not); the line
        for the chat."""
        lost = self._lost.pop(run.id, 0) + (1 if mid_turn else 0)
        if mid_turn and (not self._config.config.agents.retryInterrupted or lost >= MAX_ATTEMPTS
                         or await self._sent_since(run)):
            log.info("a turn cut off by its node is not run again", node=node_ref, session_key=run.session_key,
                     cut_before=lost - 1)
            return f"{why}; {CUT}"
        await self._store.add(node_ref, run.requests, lost=lost)
        log.info("messages kept for a node that is away", node=node_ref, session_key=run.session_key,
                 messages=len(run.requests))
        self._watching()
        return f"{why}; {KEPT}"

    async def waiting(self) -> dict[str, int]:
        return await self._store.counts()

    def node_connected(self, node_id: str) -> None:
        task = asyncio.create_task(self._connected(node_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _watching(self) -> None:
        if self._poll is None or self._poll.done():
            self._poll = asyncio.create_task(self._watch(), name="agent-hosts-parked")

    async def _sent_since(self, run: Run) -> bool:
        """Whether the session sent a chat message since the turn started (its tools' sends pass the gateway)."""
        from gateway.store.messages import ChannelMessage

        since = datetime.fromtimestamp(run.started_at or run.created_at, UTC)
        async with self._db.session() as s:
            found = await s.scalar(select(ChannelMessage.id).where(
                ChannelMessage.session_key == run.session_key, ChannelMessage.direction == "out",
                ChannelMessage.ts >= since).limit(1))
        return found is not None

    async def _connected(self, node_id: str) -> None:
        await asyncio.sleep(SETTLE_S)
        node = await self._nodes.store.find(node_id)
        if node is not None:
            await self._release(node, list(await self._store.counts()))

    async def _release(self, node: dict[str, Any], refs: list[str]) -> None:
        mine = [ref for ref in refs if ref.lower() in (node["nodeId"], node["displayName"].lower())
                or (len(ref) >= 8 and node["nodeId"].startswith(ref))]
        if not mine:
            return
        for req, lost in await self._store.claim(mine):
            log.info("a kept message runs: its node is back", node=node["displayName"], session_key=req.session_key)
            run, _status = await self._runs.submit(req)
            if lost:
                self._lost[run.id] = max(lost, self._lost.get(run.id, 0))

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(POLL_S)
            try:
                refs = list(await self._store.counts())
                if not refs:
                    return
                for ref in refs:
                    node = await self._nodes.store.find(ref)
                    if node is not None and node["status"] == APPROVED and self._nodes.live_view(node)["connected"]:
                        await self._release(node, refs)
            except Exception:  # the database away for a moment: the messages are still there, look again
                log.warning("checking the kept messages' nodes failed", exc_info=True)

    async def stop(self) -> None:
        for task in [*self._tasks, *([self._poll] if self._poll else [])]:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
