"""After a crash: every turn this replica had accepted is answered or explained, once.

At start, before anything new runs, the runs this replica's previous process left ``queued`` or
``running`` (``agent_runs.replica_id``: a replica's lasting name, so a healthy replica's runs are never
touched) are picked up, oldest first:

- a turn that was **running** is marked ``interrupted`` and its chat is told in one short message (kept
  in the transcript too). It is started again once when that is safe (``agents.retryInterrupted``): it
  never sent anything (its side-effects file, which survives a crash, shows no message) and it was not
  already retried;
- a turn that was **queued** runs, with its messages in their original order, exactly once.

Both go through the run queue under their original run id, so ``agent.wait`` on it answers the retried
turn's result.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from sqlalchemy import select

from gateway.runs.run import Origin, RunRequest
from gateway.sessions.store import AgentRun, SessionRecord, SessionRepo

if TYPE_CHECKING:
    from collections.abc import Callable

    from gateway.agents.executor import AgentExecutor
    from gateway.config import ConfigStore
    from gateway.platforms.interface import ChatPlatforms
    from gateway.runs.queue import RunQueue
    from gateway.store import Database

__all__ = ["INTERRUPTED_NOTICE", "RETRY_NOTICE", "Notice", "Recovery"]

log = structlog.get_logger("gateway.runs")

INTERRUPTED_NOTICE = "⚠️ I was restarted before I could finish your last message. Please send it again."
RETRY_NOTICE = "⚠️ I was restarted in the middle of your last message; I'm starting on it again."
MAX_ATTEMPTS = 2
"""A turn is started at most this often: the first time, and one retry after an interruption."""


def _origin(session: SessionRecord | None) -> Origin | None:
    if session is None or not session.channel or not session.peer_id:
        return None
    return Origin(channel=session.channel, account_id=session.account_id, to=session.peer_id,
                  chat_type=session.chat_type or "dm", thread_id=session.thread_id)


def _sent_something(effects_file: Path) -> bool:
    from gateway.agents.workspace import read_effects

    return any(fx.get("type") == "message_sent" for fx in read_effects(effects_file))


Notice = tuple[Origin, str, str]
"""(where, what, session key) of a chat message telling about an interrupted turn."""


class Recovery:
    """Answers or explains the turns a process of this replica (or an adopted dead replica) left unfinished."""

    def __init__(self, db: Database, config: ConfigStore, replica_id: str, runs: RunQueue, agents: AgentExecutor,
                 platforms: Callable[[], ChatPlatforms | None]) -> None:
        self._db = db
        self._config = config
        self._replica_id = replica_id
        self._runs = runs
        self._agents = agents
        """Where turns' side-effects files are, and how a chat is told (``notify``)."""
        self._platforms = platforms

    async def _sent_from_session(self, row: AgentRun) -> bool:
        """Whether the session sent a chat message since the run was queued (the message log is shared by
        every replica; the side-effects file is only on the disk of the replica that ran the turn)."""
        from gateway.store.messages import ChannelMessage

        async with self._db.session() as s:
            found = await s.scalar(select(ChannelMessage.id).where(
                ChannelMessage.session_key == row.session_key, ChannelMessage.direction == "out",
                ChannelMessage.ts >= row.created_at).limit(1))
        return found is not None




    async def recover(self) -> tuple[dict[str, int], list[Notice]]:
        """Pick up what this replica's previous process left unfinished, before anything new is accepted.

        Returns:
            What was done, by kind, and the notices to send once the chat platforms are up (``send_notices``).
        """
        async with self._db.session() as s:
            rows = await SessionRepo.unfinished_runs_of(s, self._replica_id)
        return await self.recover_runs(rows)


    async def recover_runs(self, rows: list[AgentRun]) -> tuple[dict[str, int], list[Notice]]:
        """Answer or explain unfinished runs this replica now owns (its own from before a crash, or a dead
        replica's it adopted): see the module docstring."""
        done = {"interrupted": 0, "retried": 0, "requeued": 0}
        notices: list[Notice] = []
        from gateway.agents.outbox import OutboxRow

        async with self._db.session() as s:
            work = [(row, await SessionRepo.run_messages(s, row.id), await SessionRepo.get(s, row.session_key))
                    for row in rows]
            answered = set((await s.execute(select(OutboxRow.run_id).where(
                OutboxRow.run_id.in_([row.id for row in rows])))).scalars()) if rows else set()
        for row, messages, session in work:
            origin = _origin(session)
            deliver = row.source == "channel" and origin is not None
            if row.id in answered:
                # It finished and its reply was written down; only the delivery was cut (the outbox redelivers it).
                await self._mark(row, "ok", None)
                continue
            if row.source == "cron":  # the scheduler records the job run as interrupted; it fires again on schedule
                await self._mark(row, "interrupted", "interrupted: the gateway stopped during the cron run")
                done["interrupted"] += 1
                continue
            if row.status == "running":
                effects = self._agents.runs_dir / f"{row.id}.side-effects.ndjson"
                retry = (self._config.config.agents.retryInterrupted and row.attempts < MAX_ATTEMPTS and bool(messages)
                         and not _sent_something(effects) and not await self._sent_from_session(row))
                effects.unlink(missing_ok=True)
                text = RETRY_NOTICE if retry else INTERRUPTED_NOTICE
                async with self._db.session() as s:
                    await SessionRepo.add_entry(s, row.session_key, "assistant", text, run_id=row.id)
                if deliver and origin is not None:
                    notices.append((origin, text, row.session_key))
                if not retry:
                    await self._mark(row, "interrupted", "interrupted: the gateway stopped before the turn finished")
                    done["interrupted"] += 1
                    continue
                done["retried"] += 1
            else:
                done["requeued"] += 1
            await self._requeue(row, messages, origin, deliver)
        if any(done.values()):
            log.info("recovered the turns of this replica's previous process", **done)
        return done, notices


    async def send_notices(self, notices: list[Notice], *, ready_within_s: float = 20.0) -> None:
        """Once the chat accounts run (channels connect in the background at start): deliver the replies the
        previous process left in the outbox, then tell each chat about its interrupted turn."""
        import asyncio

        from gateway.agents.outbox import redeliver

        loop = asyncio.get_running_loop()
        deadline = loop.time() + ready_within_s
        while loop.time() < deadline:
            platforms = self._platforms()
            if platforms is not None and not any(a.get("state") == "starting" for a in platforms.describe()):
                break
            await asyncio.sleep(0.2)
        try:
            await redeliver(self._db, self._replica_id, self._platforms())
        except Exception:
            log.exception("redelivering the outbox failed")
        for origin, text, key in notices:
            try:
                await self._agents.notify(origin, text, key)
            except Exception as exc:  # the chat is unreachable right now: the transcript still says it
                log.warning("could not tell the chat about an interrupted turn", session_key=key, error=str(exc))


    async def _mark(self, row: AgentRun, status: str, error: str | None) -> None:
        async with self._db.session() as s:
            await SessionRepo.save_run(s, row.id, row.session_key, status, source=row.source, is_owner=row.is_owner,
                                       error=error, replica_id=self._replica_id)


    async def _requeue(self, row: AgentRun, messages: list[str], origin: Origin | None, deliver: bool) -> None:
        agent_id = row.session_key.split(":", 2)[1]
        if not messages:
            await self._mark(row, "interrupted", "interrupted: its message was not stored")
            return
        for i, message in enumerate(messages):
            req = RunRequest(session_key=row.session_key, agent_id=agent_id, message=message, source=row.source,
                                  is_owner=row.is_owner, origin=origin, deliver=deliver,
                                  run_id=row.id if i == 0 else None, stored=True)
            run, _status = await self._runs.submit(req)
            if run.id != row.id and i == 0:  # collected into a turn recovered just before: that one answers it
                await self._mark(row, "interrupted", f"collected into run {run.id} after a restart")
