"""Sessions, their transcripts and agent runs: tables and the repository that reads and writes them.

A session is one conversation with one agent, named by its key (``agent:<agentId>:...``). It
remembers where it came from (channel, account, peer, thread), the CLI session id each runtime
gave back (so the next turn resumes instead of starting over), token usage, and a transcript of
user, assistant and tool events. Runs are kept so ``agent.wait`` can answer after the fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import (
    Boolean,
    ColumnElement,
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    and_,
    delete,
    false,
    func,
    or_,
    select,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store import upsert
from gateway.store.base import Base, utcnow
from gateway.store.db import rowcount

__all__ = ["ENTRY_META", "AgentRun", "SessionRecord", "SessionRepo", "SessionWithin", "TranscriptEntry"]

ENTRY_META = frozenset({"replyTo", "thread", "reaction", "pinned", "deleted", "attachments", "error", "aborted",
                        "agentId", "runtime", "cli", "model", "project", "branch", "diff", "usage", "buttons",
                        "node", "fallbackFor"})
"""The keys a transcript entry's ``meta`` may hold (each is also a key of the entry in ``chat.history``)."""


class SessionRecord(Base):
    __tablename__ = "sessions"

    key: Mapped[str] = mapped_column(String(512), primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(128), index=True)
    # main|global|unknown|direct|group|thread|webchat|cron|subagent
    kind: Mapped[str] = mapped_column(String(16), default="direct")
    label: Mapped[str | None] = mapped_column(String(256), nullable=True, unique=True)
    channel: Mapped[str | None] = mapped_column(String(64), nullable=True)
    account_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    peer_id: Mapped[str | None] = mapped_column(String(256), nullable=True)
    chat_type: Mapped[str | None] = mapped_column(String(16), nullable=True)
    thread_id: Mapped[str | None] = mapped_column(String(256), nullable=True)
    parent_key: Mapped[str | None] = mapped_column(String(512), nullable=True, index=True)
    model: Mapped[str | None] = mapped_column(String(128), nullable=True)
    cli_sessions: Mapped[str] = mapped_column(Text, default="{}")  # JSON {runtime: cli session id}
    project: Mapped[str | None] = mapped_column(String(64), nullable=True)  # a name in its agent's projects
    person_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)  # whose (gateway.people)
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cache_read_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cache_write_tokens: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)

    def cli_session(self, runtime: str) -> str | None:
        return orjson.loads(self.cli_sessions or "{}").get(runtime)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "sessionKey": self.key,
            "agentId": self.agent_id,
            "kind": self.kind,
            "label": self.label,
            "displayName": self.label or self.key,
            "channel": self.channel,
            "accountId": self.account_id,
            "peerId": self.peer_id,
            "chatType": self.chat_type,
            "threadId": self.thread_id,
            "parentSessionKey": self.parent_key,
            "model": self.model,
            "project": self.project,
            "personId": self.person_id,
            "cliSessionIds": orjson.loads(self.cli_sessions or "{}"),
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "totalTokens": self.input_tokens + self.output_tokens,
            "createdAt": _ms(self.created_at),
            "updatedAt": _ms(self.updated_at),
        }


class TranscriptEntry(Base):
    __tablename__ = "session_messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_key: Mapped[str] = mapped_column(
        String(512), ForeignKey("sessions.key", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    role: Mapped[str] = mapped_column(String(16))  # user | assistant | tool
    text: Mapped[str] = mapped_column(Text, default="")
    tool: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON {name, input, output, isError}
    ts: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # JSON of what a chat shows around the message (``ENTRY_META``): replyTo, reaction, pinned, deleted,
    # attachments, error/aborted (a failed turn), agentId/runtime/cli/model (who answered), project/branch (where)
    # and diff (what the turn changed there: summary, counts, the diff text), usage (the turn's tokens and cost).
    # buttons: the choices under an approval request or a question on the web chat page ({label, send}).
    meta: Mapped[str | None] = mapped_column(Text, nullable=True)

    @property
    def facts(self) -> dict[str, Any]:
        return orjson.loads(self.meta) if self.meta else {}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "role": self.role, "text": self.text, "ts": _ms(self.ts)}
        if self.run_id:
            out["runId"] = self.run_id
        if self.tool:
            out["tool"] = orjson.loads(self.tool)
        out.update(self.facts)
        return out


class AgentRun(Base):
    __tablename__ = "agent_runs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_key: Mapped[str] = mapped_column(String(512), index=True)
    status: Mapped[str] = mapped_column(String(16))  # queued|running|ok|error|aborted|timeout
    source: Mapped[str] = mapped_column(String(32), default="agent")
    is_owner: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    reply: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    replica_id: Mapped[str | None] = mapped_column(String(64), nullable=True)  # who queued or ran it
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # how often it was started

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"runId": self.id, "sessionKey": self.session_key, "status": self.status}
        if self.error:
            out["error"] = self.error
        if self.ended_at:
            out["endedAt"] = _ms(self.ended_at)
        return out


def _meta_json(meta: dict[str, Any] | None) -> str | None:
    if not meta:
        return None
    unknown = set(meta) - ENTRY_META
    if unknown:  # a programming error: the page and chat.history only know ENTRY_META
        raise ValueError(f"unknown transcript meta keys: {sorted(unknown)}")
    return orjson.dumps(meta).decode()


def _ms(dt: datetime | None) -> int | None:
    return int(dt.timestamp() * 1000) if dt else None


@dataclass(frozen=True, slots=True)
class SessionWithin:
    """The sessions a confined caller reaches, as SQL (``SessionScope.allows`` in the query): its own session and
    those it spawned, then either every session of its person or those of its chat."""

    session_key: str | None = None
    person_id: str | None = None
    channel: str | None = None
    chat_id: str | None = None

    def clause(self) -> ColumnElement[bool]:
        reach: list[ColumnElement[bool]] = []
        if self.session_key is not None:
            reach += [SessionRecord.key == self.session_key, SessionRecord.parent_key == self.session_key]
        if self.person_id is not None:
            reach.append(SessionRecord.person_id == self.person_id)
        elif self.channel is not None:
            reach.append(and_(SessionRecord.channel == self.channel, SessionRecord.peer_id == self.chat_id))
        return or_(*reach) if reach else false()


class SessionRepo:
    """Every query on the session tables, each in the caller's unit of work (``AsyncSession``)."""

    @staticmethod
    async def get(s: AsyncSession, key: str) -> SessionRecord | None:
        return await s.get(SessionRecord, key)

    @staticmethod
    async def by_label(s: AsyncSession, label: str) -> SessionRecord | None:
        return (await s.execute(select(SessionRecord).where(SessionRecord.label == label))).scalar_one_or_none()

    @staticmethod
    async def ensure(s: AsyncSession, key: str, **fields: Any) -> SessionRecord:
        """The session ``key``, created with ``fields`` when new (existing rows keep their origin)."""
        row = await s.get(SessionRecord, key)
        if row is None:
            # Two first messages to a new session can race: insert-or-ignore, then read whichever won.
            values = {"key": key, **{k: v for k, v in fields.items() if v is not None}}

            await s.execute(upsert.insert(s, SessionRecord).values(**values)
                            .on_conflict_do_nothing(index_elements=["key"]))
            row = await s.get(SessionRecord, key)
            assert row is not None
        return row

    @staticmethod
    async def search(s: AsyncSession, *, search: str | None, limit: int | None,
                     kinds: Sequence[str] | None = None, hide_names: Sequence[str] = (),
                     agent_id: str | None = None, within: SessionWithin | None = None) -> list[SessionRecord]:
        """Sessions newest first; ``hide_names`` leaves out ``agent:<id>:<name>`` for each name (exactly
        that last part: agent ids hold no colon, so ``agent:%:global`` without a further colon). ``agent_id`` and
        ``within`` (a confined caller's reach) filter before ``limit``: a member asking for 100 gets her newest
        100, not those of hers among the gateway's newest 100."""
        q = select(SessionRecord).order_by(SessionRecord.updated_at.desc())
        if agent_id is not None:
            q = q.where(SessionRecord.agent_id == agent_id)
        if within is not None:
            q = q.where(within.clause())
        for name in hide_names:
            q = q.where(~(SessionRecord.key.like(f"agent:%:{name}") & ~SessionRecord.key.like(f"agent:%:%:{name}")))
        if search:
            like = f"%{search.lower()}%"
            q = q.where(or_(func.lower(SessionRecord.key).like(like), func.lower(SessionRecord.label).like(like)))
        if kinds is not None:
            q = q.where(SessionRecord.kind.in_(list(kinds)))
        if limit:
            q = q.limit(limit)
        return list((await s.execute(q)).scalars())

    @staticmethod
    async def children(s: AsyncSession, parent_key: str) -> list[SessionRecord]:
        q = select(SessionRecord).where(SessionRecord.parent_key == parent_key).order_by(SessionRecord.created_at)
        return list((await s.execute(q)).scalars())

    @staticmethod
    async def add_entry(s: AsyncSession, key: str, role: str, text: str, *, run_id: str | None = None,
                        tool: dict[str, Any] | None = None, meta: dict[str, Any] | None = None) -> TranscriptEntry:
        entry = TranscriptEntry(session_key=key, role=role, text=text, run_id=run_id,
                                tool=orjson.dumps(tool).decode() if tool is not None else None,
                                meta=_meta_json(meta))
        s.add(entry)
        row = await s.get(SessionRecord, key)
        if row is not None:
            row.updated_at = utcnow()
        return entry

    @staticmethod
    async def entry(s: AsyncSession, key: str, entry_id: int) -> TranscriptEntry | None:
        """One entry of the session ``key`` (None when the id belongs to another session or to none)."""
        row = await s.get(TranscriptEntry, entry_id)
        return row if row is not None and row.session_key == key else None

    @staticmethod
    def update_meta(entry: TranscriptEntry, **changes: Any) -> dict[str, Any]:
        """Merge ``changes`` into the entry's facts (a None value removes the key); returns the new facts."""
        facts = entry.facts
        for k, v in changes.items():
            if v is None:
                facts.pop(k, None)
            else:
                facts[k] = v
        entry.meta = _meta_json(facts)
        return facts

    @staticmethod
    async def history(s: AsyncSession, key: str, limit: int | None) -> list[TranscriptEntry]:
        q = select(TranscriptEntry).where(TranscriptEntry.session_key == key).order_by(TranscriptEntry.id.desc())
        if limit:
            q = q.limit(limit)
        return list(reversed(list((await s.execute(q)).scalars())))

    @staticmethod
    async def first_user_texts(s: AsyncSession, keys: Sequence[str]) -> dict[str, str]:
        """Each session's first user message (what a list of conversations names them by)."""
        return await SessionRepo._texts_at(s, keys, func.min(TranscriptEntry.id), TranscriptEntry.role == "user")

    @staticmethod
    async def last_texts(s: AsyncSession, keys: Sequence[str]) -> dict[str, str]:
        """Each session's newest user or assistant message."""
        return await SessionRepo._texts_at(s, keys, func.max(TranscriptEntry.id),
                                           TranscriptEntry.role.in_(("user", "assistant")))

    @staticmethod
    async def _texts_at(s: AsyncSession, keys: Sequence[str], pick: Any, where: Any) -> dict[str, str]:
        if not keys:
            return {}
        ids = (select(pick).where(TranscriptEntry.session_key.in_(list(keys)), where, TranscriptEntry.text != "")
               .group_by(TranscriptEntry.session_key))
        res = await s.execute(select(TranscriptEntry.session_key, TranscriptEntry.text)
                              .where(TranscriptEntry.id.in_(ids)))
        return {k: t for k, t in res.all()}

    @staticmethod
    async def clear_history(s: AsyncSession, key: str) -> int:
        res = await s.execute(delete(TranscriptEntry).where(TranscriptEntry.session_key == key))
        return rowcount(res)

    @staticmethod
    async def record_usage(s: AsyncSession, key: str, *, runtime: str, cli_session_id: str | None,
                           usage: dict[str, int], model: str | None = None) -> None:
        row = await s.get(SessionRecord, key)
        if row is None:
            return
        if cli_session_id is not None:
            ids = orjson.loads(row.cli_sessions or "{}")
            ids[runtime] = cli_session_id
            row.cli_sessions = orjson.dumps(ids).decode()
        row.input_tokens += int(usage.get("input", 0))
        row.output_tokens += int(usage.get("output", 0))
        row.cache_read_tokens += int(usage.get("cacheRead", 0))
        row.cache_write_tokens += int(usage.get("cacheWrite", 0))
        if model:
            row.model = model
        row.updated_at = utcnow()

    @staticmethod
    async def forget_cli_session(s: AsyncSession, key: str, runtime: str) -> None:
        row = await s.get(SessionRecord, key)
        if row is not None:
            ids = orjson.loads(row.cli_sessions or "{}")
            if ids.pop(runtime, None) is not None:
                row.cli_sessions = orjson.dumps(ids).decode()

    @staticmethod
    async def delete(s: AsyncSession, key: str) -> bool:
        await s.execute(delete(TranscriptEntry).where(TranscriptEntry.session_key == key))
        res = await s.execute(delete(SessionRecord).where(SessionRecord.key == key))
        return bool(rowcount(res))

    @staticmethod
    async def save_run(s: AsyncSession, run_id: str, session_key: str, status: str, *, source: str = "agent",
                       is_owner: bool = False, error: str | None = None, reply: str | None = None,
                       only_if_new: bool = False, replica_id: str | None = None) -> None:
        """Insert the run's row, or update it; one statement, so two writers racing on a new run cannot both
        insert it (a queued turn can start while the message that created it is still being committed).

        ``only_if_new``: leave an existing row alone (a message joining a turn must not set a row that its
        turn already moved on to ``running`` back to ``queued``).
        """

        ended = utcnow() if status not in ("queued", "running") else None
        stmt = upsert.insert(s, AgentRun).values(id=run_id, session_key=session_key, status=status, source=source,
                                               is_owner=is_owner, error=error, reply=reply, created_at=utcnow(),
                                               ended_at=ended, replica_id=replica_id,
                                               attempts=1 if status == "running" else 0)
        if only_if_new:
            await s.execute(stmt.on_conflict_do_nothing(index_elements=["id"]))
            return
        changes: dict[str, Any] = {"status": status, "error": error, "ended_at": ended}
        if reply is not None:
            changes["reply"] = reply
        if replica_id is not None:
            changes["replica_id"] = replica_id
        if status == "running":
            changes["attempts"] = AgentRun.__table__.c.attempts + 1
        await s.execute(stmt.on_conflict_do_update(index_elements=["id"], set_=changes))

    @staticmethod
    async def unfinished_runs_of(s: AsyncSession, replica_id: str) -> list[AgentRun]:
        """Runs a replica left ``queued`` or ``running``, oldest first (what recovery picks up)."""
        res = await s.execute(select(AgentRun).where(AgentRun.replica_id == replica_id,
                                                     AgentRun.status.in_(("queued", "running")))
                              .order_by(AgentRun.created_at, AgentRun.id))
        return list(res.scalars())

    @staticmethod
    async def run_messages(s: AsyncSession, run_id: str) -> list[str]:
        """The user messages a run carries, in the order they arrived."""
        res = await s.execute(select(TranscriptEntry.text).where(TranscriptEntry.run_id == run_id,
                                                                 TranscriptEntry.role == "user")
                              .order_by(TranscriptEntry.id))
        return list(res.scalars())

    @staticmethod
    async def last_run_end(s: AsyncSession, key: str) -> datetime | None:
        """When the session's latest finished turn ended (None before its first)."""
        res = await s.execute(select(func.max(AgentRun.ended_at)).where(AgentRun.session_key == key))
        return res.scalar()

    @staticmethod
    async def unfinished_run_ids(s: AsyncSession, key: str) -> list[str]:
        """Ids of the session's runs still queued or running (on any replica), oldest first."""
        res = await s.execute(select(AgentRun.id).where(AgentRun.session_key == key,
                                                        AgentRun.status.in_(("queued", "running")))
                              .order_by(AgentRun.created_at))
        return list(res.scalars())

    @staticmethod
    async def get_run(s: AsyncSession, run_id: str) -> AgentRun | None:
        return await s.get(AgentRun, run_id)
