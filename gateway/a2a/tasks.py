"""The A2A task store: one ``a2a_tasks`` row per task, holding the SDK's ``Task`` and the session it runs in.

The SDK's request handler reads and writes tasks through this store with the request's ``ServerCallContext``,
which carries the peer (``PeerContext``, put there by ``gateway.a2a.server``). Every read is decided by the access
model as a read of the task's session (``may(principal, "read", session)``), so a task of another peer is as
unknown to a caller as one that never existed (the SDK answers ``TaskNotFoundError``), as another token's MCP
session is at ``/mcp``. A task is also its agent's: asked for at another agent's address, it is not found.

The session of a task is the peer's conversation for its ``contextId`` (``session_key_for``): under the person's
own name space (``agent:<id>:person:<them>:a2a:<context>``), or for the gateway token ``agent:<id>:a2a:<context>``.
Two peers giving the same ``contextId`` get two sessions.

The SDK saves the task at every event before it streams the event out (submitted, working, each reply chunk, the
end): a database round trip in the path of each. A task in flight on this replica is kept in memory instead
(``_Live``: its newest ``Task`` and the peer its first save was decided for), read from there, and written behind,
coalesced (at most one write per ``FLUSH_S``), except where a state must be readable anywhere at once: its first
row (the session it belongs to), and the states a peer acts on (``input-required``, ``auth-required``) and the
terminal ones, written before the event goes out. The gateway's stop writes what is still pending.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog
from a2a.auth.user import User
from a2a.server.tasks.task_store import TaskStore
from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, Task, TaskState
from google.protobuf.json_format import MessageToJson, Parse
from sqlalchemy import BigInteger, String, Text, delete, select, update
from sqlalchemy.orm import Mapped, mapped_column

from gateway.a2a.files import drop_file_bytes
from gateway.access.policy import may
from gateway.store.base import Base

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext

    from gateway.access.doors import AccessControl
    from gateway.access.principals import Principal
    from gateway.dispatch.callers import Caller
    from gateway.store import Database

__all__ = ["A2aTask", "GatewayTaskStore", "PeerContext", "PeerUser", "peer_of", "session_key_for"]

log = structlog.get_logger("gateway.a2a")

_UNSAFE = re.compile(r"[^a-z0-9._@+=\-]+")
STATE_NAMES = {v: TaskState.Name(v).removeprefix("TASK_STATE_").lower().replace("_", "-")
               for v in TaskState.values()}
WRITTEN_AT_ONCE = frozenset({"input-required", "auth-required", "completed", "failed", "canceled", "rejected"})
"""States written before their event goes out: a peer acts on them, maybe through another replica."""
ENDED = frozenset({"completed", "failed", "canceled", "rejected"})
FLUSH_S = 0.5
"""How long a task's intermediate states (working, reply chunks) may wait to be written, coalesced."""


class A2aTask(Base):
    __tablename__ = "a2a_tasks"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    context_id: Mapped[str] = mapped_column(String(128))
    agent_id: Mapped[str] = mapped_column(String(64))
    session_key: Mapped[str] = mapped_column(String(512), index=True)
    person_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    state: Mapped[str] = mapped_column(String(32))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)


@dataclass(frozen=True, slots=True)
class PeerContext:
    """Who calls, as the A2A door decided it: the caller (for in-process method calls), its principal (for every
    decision), the agent addressed, and whether its turns run at the owner's tier."""

    caller: Caller
    principal: Principal
    agent_id: str
    peer: str
    """The peer's name in logs and rate limits: its person id, or ``owner`` for the gateway token."""


class PeerUser(User):
    """The SDK's view of the caller (its ``ServerCallContext.user``)."""

    def __init__(self, peer: str) -> None:
        self._peer = peer

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._peer


def peer_of(context: ServerCallContext | None) -> PeerContext:
    """The peer the door put in the call's context; a call without one is a defect of the door, never served."""
    peer = context.state.get("a2a.peer") if context is not None else None
    if not isinstance(peer, PeerContext):
        raise PermissionError("an A2A call without a decided caller")
    return peer


def session_key_for(agent_id: str, person_id: str | None, context_id: str) -> str:
    """The session of a peer's conversation ``context_id`` with ``agent_id``."""
    ctx = _UNSAFE.sub("_", context_id.strip().lower())[:96] or "_"
    if person_id is not None:
        return f"agent:{agent_id}:person:{person_id}:a2a:{ctx}"
    return f"agent:{agent_id}:a2a:{ctx}"


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class _Live:
    """A task in flight on this replica: its newest state, who it was decided for, and its pending write."""

    task: Task
    peer: tuple[str, str]
    """(agent id, peer) its first save was decided for: the same peer's later saves need no second decision."""
    dirty: bool = False
    writer: asyncio.Task[None] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class GatewayTaskStore(TaskStore):
    """``a2a_tasks`` as the SDK's ``TaskStore``, every access decided for the call's peer; the tasks in flight
    here kept in memory and written behind (see the module docstring)."""

    def __init__(self, db: Database, access: AccessControl) -> None:
        self._db = db
        self._access = access
        self._live: dict[str, _Live] = {}

    async def _allowed(self, row: A2aTask, peer: PeerContext) -> bool:
        if row.agent_id != peer.agent_id:
            return False
        obj = await self._access.session(row.session_key)
        # A task's session is made before its first row is written; one missing (removed since) is nobody's to read
        # but whoever sees everything (``may`` lets anyone "read" a session that does not exist yet).
        return may(peer.principal, "read", obj) and (obj.exists or peer.principal.sees_all)

    def _mine(self, task_id: str, peer: PeerContext) -> _Live | None:
        """The task in flight, if it is this peer's (decided at its first save here)."""
        live = self._live.get(task_id)
        return live if live is not None and live.peer == (peer.agent_id, peer.peer) else None

    async def save(self, task: Task, context: ServerCallContext) -> None:
        peer = peer_of(context)
        state = STATE_NAMES.get(task.status.state, "unspecified")
        kept = Task()
        kept.CopyFrom(task)
        for message in kept.history:  # a file's bytes are not kept (gateway.a2a.files.drop_file_bytes)
            drop_file_bytes(message)
        live = self._mine(task.id, peer)
        if live is None:
            await self._first_save(kept, state, peer)
        elif state in WRITTEN_AT_ONCE:
            live.task, live.dirty = kept, False
            async with live.lock:  # after a write behind in progress, never before it
                await self._write(kept, state)
        else:
            live.task, live.dirty = kept, True
            if live.writer is None or live.writer.done():
                live.writer = asyncio.create_task(self._write_behind(task.id, live), name=f"a2a-task-{task.id}")
        if state in ENDED:
            self._live.pop(task.id, None)

    async def _first_save(self, task: Task, state: str, peer: PeerContext) -> None:
        """The task's first save on this replica: its row made (or, continuing a stored task, decided)."""
        body, now = MessageToJson(task, indent=None), _now_ms()
        async with self._db.session() as s:
            row = await s.get(A2aTask, task.id)
            if row is None:
                person = peer.principal.person_id
                s.add(A2aTask(id=task.id, context_id=task.context_id[:128], agent_id=peer.agent_id,
                              session_key=session_key_for(peer.agent_id, person, task.context_id),
                              person_id=person, state=state, body=body, created_at=now, updated_at=now))
            else:
                if not await self._allowed(row, peer):
                    raise PermissionError(f"task {task.id} is not this caller's")
                row.state, row.body, row.updated_at = state, body, now
        if state not in ENDED:
            self._live[task.id] = _Live(task=task, peer=(peer.agent_id, peer.peer))

    async def _write(self, task: Task, state: str) -> None:
        async with self._db.session() as s:
            await s.execute(update(A2aTask).where(A2aTask.id == task.id).values(
                state=state, body=MessageToJson(task, indent=None), updated_at=_now_ms()))

    async def _write_behind(self, task_id: str, live: _Live) -> None:
        await asyncio.sleep(FLUSH_S)
        async with live.lock:
            if not live.dirty:
                return
            live.dirty = False
            try:
                await self._write(live.task, STATE_NAMES.get(live.task.status.state, "unspecified"))
            except Exception:  # the next save, or the end, writes it again
                live.dirty = True
                log.warning("a2a task not written", task=task_id, exc_info=True)

    async def flush(self) -> None:
        """Write every pending state now (the gateway stops)."""
        for live in list(self._live.values()):
            if live.writer is not None and not live.writer.done():
                live.writer.cancel()
            async with live.lock:
                if live.dirty:
                    live.dirty = False
                    await self._write(live.task, STATE_NAMES.get(live.task.status.state, "unspecified"))

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        peer = peer_of(context)
        live = self._mine(task_id, peer)
        if live is not None:
            copy = Task()
            copy.CopyFrom(live.task)
            return copy
        async with self._db.reading() as s:
            row = await s.get(A2aTask, task_id[:64])
        if row is None or not await self._allowed(row, peer):
            return None
        return Parse(row.body, Task())

    async def row(self, task_id: str, context: ServerCallContext) -> A2aTask | None:
        """The stored row of a task the caller may read (its session, for the executor)."""
        peer = peer_of(context)
        async with self._db.reading() as s:
            row = await s.get(A2aTask, task_id[:64])
        return row if row is not None and await self._allowed(row, peer) else None

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        peer = peer_of(context)
        size = params.page_size or 50
        async with self._db.reading() as s:
            query = select(A2aTask).where(A2aTask.agent_id == peer.agent_id)
            if not peer.principal.sees_all:
                query = query.where(A2aTask.person_id == peer.principal.person_id)
            if params.context_id:
                query = query.where(A2aTask.context_id == params.context_id)
            rows = list((await s.execute(query.order_by(A2aTask.updated_at.desc()).limit(500))).scalars())
        mine = [row for row in rows if await self._allowed(row, peer)]
        tasks = [self._live[row.id].task if row.id in self._live else Parse(row.body, Task()) for row in mine[:size]]
        return ListTasksResponse(tasks=tasks, page_size=size, total_size=len(mine))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        peer = peer_of(context)
        async with self._db.session() as s:
            row = await s.get(A2aTask, task_id[:64])
            if row is not None and await self._allowed(row, peer):
                await s.execute(delete(A2aTask).where(A2aTask.id == row.id))
                self._live.pop(row.id, None)
