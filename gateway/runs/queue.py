"""The run queue: one agent run at a time per session, a global cap, abort, and waiting for results.

Why a queue per session: a CLI agent owns its session (its resume id, its workspace) while it
runs, so two turns of one conversation must never overlap. Messages that arrive while a session
is busy are not dropped and do not each start a run: they are collected into the session's next
turn, which starts as soon as the current one ends. Across sessions at most
``agents.maxConcurrentRuns`` run at once (read live, so a config change applies to the next run).
Across replicas sharing a database, a turn first takes the session's lease (``gateway.runs.lease``) and
waits, still collecting messages, while another replica holds it. With Redis (``gateway.bus``) the
queue also answers ``agent.wait`` for runs held by another replica (it awaits their final ``agent``
event) and carries out ``chat.abort`` requests forwarded from other replicas.

The queue does not know how to run an agent: ``executor`` (``gateway.agents.executor``) does. The queue owns the
lifecycle around it: status, the ``agent`` lifecycle and final ``chat`` events, the run timeout
(``agents.timeoutSeconds``), abort, the row in ``agent_runs``, and ``agent.wait``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import structlog

from gateway.protocol import InvalidRequest
from gateway.runs.lease import LeaseService, LeaseUnavailable
from gateway.runs.run import FINISHED, Run, RunOutcome, RunRequest
from gateway.runs.steering import effective_mode
from gateway.sessions.events import openclaw_message
from gateway.sessions.store import AgentRun, SessionRepo
from gateway.store.leases import LeaseRepo
from gateway.store.messages import mark_handled

if TYPE_CHECKING:
    from gateway.bus import EventBus
    from gateway.composition.callable_types import Broadcast
    from gateway.config import ConfigStore
    from gateway.store import Database

__all__ = ["RunQueue"]

log = structlog.get_logger("gateway.runs")

ORPHAN_RECHECK_S = 1.2
"""How long a stored run that no live lease covers is watched before it is declared dead: a queued turn
may sit between its predecessor's lease release and its own acquire, which polls at most every second."""


Executor = Callable[[Run], Awaitable[RunOutcome]]
AfterRun = Callable[[Run], Awaitable[None]]


@dataclass(slots=True)
class _Lane:
    current: Run | None = None
    pending: Run | None = None


class RunQueue:
    """Accepts run requests, serializes them per session, and runs them through ``executor``."""

    def __init__(self, db: Database, config: ConfigStore, broadcast: Broadcast, leases: LeaseService,
                 executor: Executor | None = None) -> None:
        self._db = db
        self._config = config
        self._broadcast = broadcast
        self._replica_id = leases.replica_id
        self.executor = executor
        self.after_run: AfterRun | None = None  # delivery of the reply or the failure (the executor)
        self.runs: dict[str, Run] = {}
        self.leases = leases
        self._lanes: dict[str, _Lane] = {}
        self._active = 0
        self._slots = asyncio.Condition()
        self._keep = 2000  # finished runs remembered in memory for agent.wait (the DB keeps them all)
        self._bus: EventBus | None = None  # set only when Redis links this replica to others
        self._waiters: dict[str, list[asyncio.Future[dict[str, Any]]]] = {}  # runs held by other replicas
        self.draining = False  # the gateway is stopping: no new turn starts

    # -- submitting --------------------------------------------------------------------------

    async def submit(self, req: RunRequest) -> tuple[Run, str]:
        """Queue ``req``; returns the run that will carry it and ``accepted`` (starts now) or ``queued``."""
        lane = self._lanes.setdefault(req.session_key, _Lane())
        status = "accepted"
        if lane.current is not None and lane.current.status == "queued" and lane.current.started_at is None:
            run = lane.current  # waiting for a global slot: still time to join its turn
            run.requests.append(req)
            status = "queued"
        elif lane.current is not None and self._steered(lane.current, req):
            run = lane.current  # the running CLI took it: answered in this turn, with this turn's reply
            run.requests.append(req)
            status = "queued"
        elif lane.current is not None:
            if lane.pending is None:
                lane.pending = self._new_run(req)
            else:
                lane.pending.requests.append(req)
            run, status = lane.pending, "queued"
            if self._interrupts(lane.current, req):
                # Folded in front: the restarted turn answers what the stopped one was asked, then the new words.
                run.requests[0:0] = lane.current.requests
                lane.current.stop("interrupted by a newer message (steering mode interrupt)")
        else:
            run = lane.current = self._new_run(req)
        async with self._db.session() as s:
            if not req.stored:
                entry = await SessionRepo.add_entry(s, req.session_key, "user", req.message, run_id=run.id,
                                                    meta=req.entry_meta)
                await s.flush()
                req.entry_id = entry.id
                if req.origin is not None and req.origin.channel == "webchat" and req.origin.reply_to_id is None:
                    # A web chat message has no platform id: its transcript entry's id is its id.
                    req.origin = replace(req.origin, reply_to_id=str(entry.id))
            await SessionRepo.save_run(s, run.id, run.session_key, "queued", source=req.source,
                                       is_owner=req.is_owner, only_if_new=True, replica_id=self._replica_id)
            if req.inbound is not None:
                await mark_handled(s, req.inbound)
        if lane.current is run and run.task is None and not self.draining:  # draining: the next start runs it
            run.task = asyncio.create_task(self._drive(run), name=f"run-{run.id}")
        return run, status

    def _steered(self, current: Run, req: RunRequest) -> bool:
        """Hand ``req`` to the running turn's CLI (``steer`` mode, a chat message); whether it took it."""
        if req.stored or req.source not in ("channel", "chat") or current.steer is None or current.stopping:
            return False
        if effective_mode(self._config.config, req.agent_id) != "steer":
            return False
        return current.steer(req.message)

    def _interrupts(self, current: Run, req: RunRequest) -> bool:
        """Whether ``req`` stops the running ``current`` turn (``interrupt`` mode, a chat message, mid-turn)."""
        if req.stored or req.source not in ("channel", "chat") or current.started_at is None:
            return False
        if current.stopping or current.done.is_set():
            return False
        return effective_mode(self._config.config, req.agent_id) == "interrupt"

    def _new_run(self, req: RunRequest) -> Run:
        taken = req.run_id in self.runs and not req.stored  # two messages raced for one key: the second gets a new id
        run_id = req.run_id if req.run_id and not taken else str(uuid.uuid4())
        run = Run(id=run_id, session_key=req.session_key, agent_id=req.agent_id, requests=[req])
        self.runs[run.id] = run
        return run

    # -- running -----------------------------------------------------------------------------

    async def _acquire(self) -> None:
        async with self._slots:
            await self._slots.wait_for(lambda: self._active < self._config.config.agents.maxConcurrentRuns)
            self._active += 1

    async def _release(self) -> None:
        async with self._slots:
            self._active -= 1
            self._slots.notify_all()

    async def _drive(self, run: Run) -> None:
        acquired = False
        try:
            # Lease before slot: waiting on another replica must not hold one of our global slots.
            run.lease = await self.leases.acquire(run.session_key, run.id, lambda: self._lease_lost(run))
            await self._acquire()
            acquired = True
            run.status, run.started_at = "running", time.time()
            await self._save(run)
            self.emit_agent(run, "lifecycle", {"phase": "start", "startedAt": int(run.started_at * 1000)})
            timeout = self._config.config.agents.timeoutSeconds
            try:
                if self.executor is None:
                    raise RuntimeError("no agent executor is running on this gateway")
                async with asyncio.timeout(timeout):
                    outcome = await self.executor(run)
                run.status, run.reply, run.error = outcome.status, outcome.reply, outcome.error
            except TimeoutError:
                run.status, run.error = "timeout", f"the run took longer than {timeout}s and was stopped"
            except asyncio.CancelledError:
                run.status, run.error = "aborted", run.error or "run aborted"
            except Exception as exc:
                log.exception("run failed", run_id=run.id, session_key=run.session_key)
                run.status, run.error = "error", f"internal error: {exc}"
        except asyncio.CancelledError:
            run.status, run.error = "aborted", run.error or "run aborted"
        except LeaseUnavailable as exc:
            run.status, run.error = "error", str(exc)
        except Exception as exc:  # the lease or the run row could not be written: say so, never leak the task
            log.exception("run could not start", run_id=run.id, session_key=run.session_key)
            run.status, run.error = "error", f"the run could not start: {exc}"
        finally:
            if acquired:
                await self._release()
            await self._finish(run)

    async def _finish(self, run: Run) -> None:
        run.ended_at = time.time()
        if run.cut_by_shutdown:
            # Its row stays "running": the next start recovers it exactly as after a crash (explained, maybe
            # retried), instead of it ending as a silent abort.
            if run.lease is not None:
                await run.lease.release()
                run.lease = None
            run.done.set()
            return
        if run.status not in FINISHED:
            run.status = "error"
        if self.after_run is not None:
            try:
                await self.after_run(run)
            except Exception:
                log.exception("reply delivery failed", run_id=run.id, session_key=run.session_key)
        with contextlib.suppress(Exception):
            await self._save(run)
        if run.lease is not None:  # after the save, so the next holder sees this turn complete
            await run.lease.release()
            run.lease = None
        result = run.result()
        if run.status == "ok":
            self.emit_chat(run, "final", run.reply)
        else:
            self.emit_chat(run, "aborted" if run.status == "aborted" else "error", run.reply,
                           error=result.get("error"))
        phase = "end" if run.status == "ok" else "error"
        data: dict[str, Any] = {"phase": phase, "endedAt": result["endedAt"], "status": run.status}
        if result.get("error"):
            data["error"] = result["error"]
        data["result"] = result  # agent.wait on another replica takes it from here (``_on_bus_event``)
        self.emit_agent(run, "lifecycle", data)
        run.done.set()
        self._advance(run)

    def _lease_lost(self, run: Run) -> None:
        run.stop("another replica took over this session's lease; the turn was stopped")

    def _advance(self, run: Run) -> None:
        lane = self._lanes.get(run.session_key)
        if lane is None or lane.current is not run:
            return
        lane.current, lane.pending = lane.pending, None
        if lane.current is None:
            self._lanes.pop(run.session_key, None)
        elif lane.current.task is None and not self.draining:  # when draining, it stays queued for the next start
            nxt = lane.current
            nxt.task = asyncio.create_task(self._drive(nxt), name=f"run-{nxt.id}")
        self._trim()

    def _trim(self) -> None:
        if len(self.runs) <= self._keep:
            return
        for rid in [r for r, v in self.runs.items() if v.done.is_set()][: len(self.runs) - self._keep]:
            self.runs.pop(rid, None)

    async def _save(self, run: Run) -> None:
        """The run's row as it is now; a database restart delays this (the run's end must not be lost)."""
        async def write(s: Any) -> None:
            await SessionRepo.save_run(s, run.id, run.session_key, run.status, source=run.first.source,
                                       is_owner=run.is_owner, error=run.error,
                                       reply=run.reply if run.status == "ok" else None,
                                       replica_id=self._replica_id)

        await self._db.persist(write, what=f"run {run.id} ({run.status})")

    # -- events ------------------------------------------------------------------------------

    def emit_agent(self, run: Run, stream: str, data: dict[str, Any]) -> None:
        # OpenClaw's AgentEvent is closed: runId, seq, stream, ts and a free ``data``, so the session key (which
        # our clients route by) travels in ``data``.
        self._broadcast("agent", {"runId": run.id, "seq": run.agent_seq, "stream": stream,
                                    "ts": int(time.time() * 1000), "data": {**data, "sessionKey": run.session_key}})
        run.agent_seq += 1

    def emit_chat(self, run: Run, state: str, text: str, *, error: str | None = None) -> None:
        """A ``chat`` event in OpenClaw's closed ``ChatEvent`` shape. The reply so far is ``message.text``; who
        answered (agent, runtime, CLI, model) and the transcript entry's ``messageId`` ride in ``message``
        too, the one field the schema leaves open, so our web chat and OpenClaw's clients read one event."""
        message = openclaw_message("assistant", text)
        payload: dict[str, Any] = {"runId": run.id, "sessionKey": run.session_key, "agentId": run.agent_id,
                                   "seq": run.chat_seq, "state": state, "message": message}
        run.chat_seq += 1
        if state == "delta":
            grown = text.startswith(run.chat_text)
            payload["deltaText"] = text[len(run.chat_text):] if grown else text
            if not grown:
                payload["replace"] = True
            run.chat_text = text
        if error:
            payload["errorMessage"] = error
        if state != "delta":
            message.update(run.answer_facts)
            if run.answer_entry_id is not None:
                message["messageId"] = str(run.answer_entry_id)
        self._broadcast("chat", payload)

    # -- control -----------------------------------------------------------------------------

    def abort(self, session_key: str, run_id: str | None = None) -> list[str]:
        """Stop the session's running turn and drop its collected next turn; returns the aborted run ids."""
        lane = self._lanes.get(session_key)
        if lane is None:
            return []
        aborted: list[str] = []
        for run in (lane.pending, lane.current):
            if run is None or (run_id and run.id != run_id) or run.done.is_set():
                continue
            if run is lane.pending:
                lane.pending = None
                run.status, run.error = "aborted", "aborted by request"
                # Keep a reference: the loop holds tasks weakly, and this one must run to the end.
                run.task = asyncio.get_running_loop().create_task(self._finish(run), name=f"run-abort-{run.id}")
            elif not run.stop("aborted by request"):
                continue  # already stopping or delivering: nothing more to stop
            aborted.append(run.id)
        return aborted

    def waiting(self, session_key: str) -> list[str]:
        """The messages collected for the session's next turn, in the order they arrived."""
        lane = self._lanes.get(session_key)
        return lane.pending.messages if lane is not None and lane.pending is not None else []

    def clear_waiting(self, session_key: str) -> int:
        """Drop the session's collected next turn (the running one goes on); how many messages were dropped."""
        lane = self._lanes.get(session_key)
        if lane is None or lane.pending is None or lane.pending.done.is_set():
            return 0
        run, lane.pending = lane.pending, None
        run.status, run.error = "aborted", "dropped by /queue clear"
        # Keep a reference: the loop holds tasks weakly, and this one must run to the end.
        run.task = asyncio.get_running_loop().create_task(self._finish(run), name=f"run-drop-{run.id}")
        return len(run.requests)

    def lane_state(self, session_key: str) -> dict[str, Any]:
        lane = self._lanes.get(session_key)
        if lane is None:
            return {"active": None, "queued": 0}
        active = lane.current.id if lane.current is not None else None
        return {"active": active, "status": lane.current.status if lane.current else None,
                "queued": len(lane.pending.requests) if lane.pending else 0}

    def running(self, session_key: str) -> Run | None:
        """The session's turn running on this replica now, if any (what a tool of that run is part of)."""
        lane = self._lanes.get(session_key)
        run = lane.current if lane is not None else None
        return run if run is not None and run.task is not None and not run.done.is_set() else None

    @property
    def active_count(self) -> int:
        return self._active

    async def session_of(self, run_id: str) -> str | None:
        """The session a run belongs to, wherever it runs or ran (None: no such run): what ``agent.wait`` by
        ``runId`` is decided by."""
        run = self.runs.get(run_id)
        if run is not None:
            return run.session_key
        async with self._db.reading() as s:
            row = await SessionRepo.get_run(s, run_id)
        return row.session_key if row is not None else None

    async def wait(self, run_id: str, timeout_ms: int) -> dict[str, Any]:
        """The run's result, or ``status: "timeout"`` if it has not finished within ``timeout_ms``."""
        run = self.runs.get(run_id)
        if run is None:
            return await self._wait_stored(run_id, timeout_ms)
        try:
            await asyncio.wait_for(asyncio.shield(run.done.wait()), timeout_ms / 1000)
        except TimeoutError:
            return {"runId": run.id, "sessionKey": run.session_key, "status": "timeout"}
        return run.result()

    async def _wait_stored(self, run_id: str, timeout_ms: int) -> dict[str, Any]:
        """A run not in this process: finished, held by another replica, or lost with a gateway that died."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        fut: asyncio.Future[dict[str, Any]] | None = None
        if self._bus is not None:  # listen before reading the row, so an end in between is not missed
            fut = loop.create_future()
            self._waiters.setdefault(run_id, []).append(fut)
        poll = min(max(self.leases.ttl_ms / 3000, 0.5), 10.0)  # the row is the fallback if an event is lost
        suspect = False
        try:
            while True:
                row, live = await self._stored_run(run_id, check_lease=fut is not None)
                if row.status not in ("queued", "running"):
                    return _stored_result(row)
                if fut is None or (suspect and not live):  # no replica holds its session: its gateway died
                    return _stored_result(row, orphaned=True)
                suspect = not live
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return {"runId": run_id, "sessionKey": row.session_key, "status": "timeout"}
                with contextlib.suppress(TimeoutError):
                    return await asyncio.wait_for(asyncio.shield(fut),
                                                  min(ORPHAN_RECHECK_S if suspect else poll, remaining))
        finally:
            if fut is not None and fut in (waiting := self._waiters.get(run_id, [])):
                waiting.remove(fut)
                if not waiting:
                    self._waiters.pop(run_id, None)

    async def _stored_run(self, run_id: str, *, check_lease: bool) -> tuple[AgentRun, bool]:
        """The run's row, and whether a live lease holds its session (only asked when it may matter)."""
        async with self._db.session() as s:
            row = await SessionRepo.get_run(s, run_id)
            if row is None:
                raise InvalidRequest(f"unknown runId: no run '{run_id}'", details={"field": "runId"})
            live = False
            if check_lease and row.status in ("queued", "running"):
                lease = await LeaseRepo.get(s, row.session_key)
                # A running turn must hold the lease itself ("<replica>/<run id prefix>"); a queued one waits
                # behind whichever turn holds it.
                live = (lease is not None and lease.expires_at > int(time.time() * 1000)
                        and (row.status == "queued" or lease.holder.endswith(f"/{run_id[:8]}")))
        return row, live

    # -- across replicas (only with Redis; see gateway.bus) ------------------------------------

    def attach_bus(self, bus: EventBus | None) -> None:
        """Hear other replicas' run ends and abort requests; without Redis nothing is hooked up."""
        if bus is None or not bus.url:
            return
        self._bus = bus
        bus.add_listener(self._on_bus_event)
        bus.on_control("abort", self._on_remote_abort)

    def _on_bus_event(self, event: str, payload: Any) -> None:
        data = payload.get("data") if event == "agent" and isinstance(payload, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("result"), dict):
            return
        for fut in self._waiters.pop(str(payload.get("runId")), []):
            if not fut.done():
                fut.set_result(data["result"])

    def _on_remote_abort(self, payload: Any) -> None:
        if not isinstance(payload, dict) or not isinstance(payload.get("sessionKey"), str):
            return
        run_id = payload.get("runId") if isinstance(payload.get("runId"), str) else None
        aborted = self.abort(payload["sessionKey"], run_id)
        if aborted:
            log.info("aborted a turn at another replica's request", session_key=payload["sessionKey"],
                     run_ids=aborted)

    async def abort_everywhere(self, session_key: str, run_id: str | None = None) -> tuple[list[str], bool]:
        """``abort`` here and, with Redis, on every other replica; returns (run ids stopped, forwarded).

        A named run found here is not forwarded: it cannot be running anywhere else. The ids stopped
        elsewhere are read from the database (the session's unfinished runs while another replica holds
        its lease), so the caller learns them without waiting for the other replicas to answer.
        """
        aborted = self.abort(session_key, run_id)
        if self._bus is None or (run_id and aborted):
            return aborted, False
        elsewhere = await self._unfinished_elsewhere(session_key, run_id)
        forwarded = self._bus.publish_control("abort", {"sessionKey": session_key, "runId": run_id})
        return (aborted + elsewhere if forwarded else aborted), forwarded

    async def _unfinished_elsewhere(self, session_key: str, run_id: str | None) -> list[str]:
        async with self._db.session() as s:
            lease = await LeaseRepo.get(s, session_key)
            if lease is None or lease.expires_at <= int(time.time() * 1000):
                return []  # no replica is running this session's turn
            ids = await SessionRepo.unfinished_run_ids(s, session_key)
        return [i for i in ids if i not in self.runs and (run_id is None or i == run_id)]

    async def stop(self) -> None:
        """Drain: no new turn starts; running ones get ``gateway.shutdownGraceSeconds`` to finish, then are cut
        and left for the next start's recovery, as after a crash (``gateway.runs.recovery``)."""
        self.draining = True
        running = [r.task for r in self.runs.values() if r.task is not None and not r.task.done()]
        grace = self._config.config.gateway.shutdownGraceSeconds
        if running and grace > 0:
            log.info("waiting for running turns before stopping", turns=len(running), grace_s=grace)
            await asyncio.wait(running, timeout=grace)
        for run in list(self.runs.values()):
            if run.task is not None and not run.task.done():
                run.cut_by_shutdown = True
                run.task.cancel()
        tasks = [r.task for r in self.runs.values() if r.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=10)


def _stored_result(row: AgentRun, *, orphaned: bool = False) -> dict[str, Any]:
    """``agent.wait``'s answer from the ``agent_runs`` row."""
    out = row.to_dict()
    if row.status in ("aborted", "timeout", "interrupted"):
        out["status"] = "error"
    elif orphaned:
        out.update(status="error", error="the gateway restarted before this run finished")
    if row.reply and row.status == "ok":
        out["reply"] = row.reply
    return out
