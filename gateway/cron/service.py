"""The scheduler: one task that sleeps until the earliest due job, claims it, runs it, records it.

No polling loop: the task sleeps until the next ``next_run_at``, and any change wakes it at once (one made
on another replica through the event bus; without Redis it is noticed within ``MAX_SLEEP_S``).

**Exactly once across replicas.** A due job is claimed in the database before it fires: the candidate
rows are selected ``FOR UPDATE SKIP LOCKED`` (PostgreSQL; SQLite has one writer anyway), and each is
taken with a conditional update that moves ``next_run_at`` on and sets ``running_at`` only if
``next_run_at`` is still the value that was read. Whoever's update matched fires it; nobody else can.
Misfires (the gateway was down over several firings) coalesce: the next firing is computed from now.

**Crashes.** A job that was running when its gateway died is recorded as interrupted at the next start
(or, for a replica that never comes back, by a live one once its heartbeat is stale) and fires again
on schedule. Its agent run is not retried by run recovery (``source: cron``).

Cron runs are never owner-tier: the agent gets the baseline tools only.

**Wake modes** (OpenClaw's ``wakeMode``). ``now``: a job's turn runs at its time. ``next-heartbeat`` (main-session
jobs only, for an agent with a heartbeat): the firing only queues the job's event (``wake_pending_at``, recorded
as an ``ok`` run saying so); the agent's next heartbeat turn takes every queued event, each as a ``System:``
line before the heartbeat prompt, and clears them, so the main session hears of them once, in one turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from sqlalchemy import delete, func, select, update

from gateway.composition.services import Key
from gateway.cron.delivery import announce, post_webhook, skip_reason
from gateway.cron.schedule import Schedule, parse_schedule
from gateway.cron.store import CronJob, CronRun
from gateway.runs.run import RunRequest
from gateway.store.db import rowcount

if TYPE_CHECKING:
    from collections.abc import Callable

    from gateway.composition.callable_types import Broadcast
    from gateway.composition.hosts import CapabilityHost
    from gateway.config import ConfigStore
    from gateway.platforms.interface import ChatPlatforms
    from gateway.runs import RunQueue
    from gateway.runs.replicas import ReplicaWatch
    from gateway.sessions.service import SessionsService
    from gateway.store import Database

__all__ = ["CronService", "now_ms", "start", "stored_schedule"]

log = structlog.get_logger("gateway.cron")

MAX_SLEEP_S = 10.0
"""Longest sleep: how soon a job another replica added is noticed when no event bus tells us at once."""
BACKOFF_MS = (30_000, 60_000, 5 * 60_000, 15 * 60_000, 60 * 60_000)
"""Earliest retry after 1, 2, 3, 4, 5+ consecutive errors (the schedule's own next firing if later)."""
SUMMARY_CHARS = 2000
CLAIM_AHEAD_MS = 3000
"""Jobs due this soon are claimed now and wait for their second in memory, so a busy database (the claim is
a write) does not make them late."""
ADOPT_EVERY_S = 10.0


def now_ms() -> int:
    return int(time.time() * 1000)


def stored_schedule(job: CronJob) -> Schedule:
    return parse_schedule(orjson.loads(job.schedule), now_ms=job.created_at)


class CronService:
    """Jobs of this gateway's database, fired by this replica when it claims them."""

    def __init__(self, db: Database, config: ConfigStore, replica_id: str, sessions: SessionsService, runs: RunQueue,
                 replicas: ReplicaWatch | None, broadcast: Broadcast,
                 platforms: Callable[[], ChatPlatforms | None]) -> None:
        self._db = db
        self._config = config
        self._replica_id = replica_id
        self._sessions = sessions
        self._runs = runs
        self._replicas = replicas
        self._broadcast = broadcast
        self._platforms = platforms
        """The chat platforms, once attached (they start after the capabilities)."""
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._running: dict[str, asyncio.Task[None]] = {}
        self.next_wake_ms: int | None = None
        self.fired = 0
        self._adopted_at = 0.0

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.mark_interrupted([self._replica_id])
        self._task = asyncio.create_task(self._loop(), name="cron-timer")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for task in list(self._running.values()):
            task.cancel()
        if self._running:  # each records itself as interrupted on the way out
            await asyncio.gather(*self._running.values(), return_exceptions=True)

    def wake(self) -> None:
        """Re-read the earliest due time now (a job was added, changed or finished)."""
        self._wake.set()

    @property
    def running(self) -> int:
        return len(self._running)

    # -- the timer --------------------------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            delay = MAX_SLEEP_S
            self._wake.clear()  # before the pass: a wake during it (a job added meanwhile) is not lost
            try:
                if self._config.config.cron.enabled:
                    await self._fire_due()
                    delay = await self._seconds_to_next()
                    if time.monotonic() - self._adopted_at > ADOPT_EVERY_S:
                        self._adopted_at = time.monotonic()
                        await self._adopt_dead_replicas()
            except Exception:
                log.exception("cron timer pass failed; trying again shortly")
                delay = 5.0
            # ``asyncio.timeout``, not ``wait_for``: on Python 3.11 ``wait_for`` returns normally when it is
            # cancelled in the same moment its event is set (a run finishing as ``stop`` cancels this loop), the
            # cancellation is lost and ``stop`` waits for this loop forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    async def _seconds_to_next(self) -> float:
        if self.running >= self._config.config.cron.maxConcurrentRuns:
            self.next_wake_ms = None
            return MAX_SLEEP_S  # a finishing run wakes the timer
        async with self._db.reading() as s:
            nxt = await s.scalar(select(func.min(CronJob.next_run_at)).where(
                CronJob.enabled.is_(True), CronJob.running_at.is_(None), CronJob.next_run_at.is_not(None)))
        self.next_wake_ms = nxt
        if nxt is None:
            return MAX_SLEEP_S
        return min(max(nxt - CLAIM_AHEAD_MS - now_ms(), 0) / 1000, MAX_SLEEP_S)

    async def _fire_due(self) -> None:
        free = self._config.config.cron.maxConcurrentRuns - self.running
        if free <= 0:
            return
        now = now_ms()
        claimed: list[tuple[CronJob, int]] = []
        async with self._db.session() as s:
            rows = (await s.execute(
                select(CronJob).where(CronJob.enabled.is_(True), CronJob.running_at.is_(None),
                                      CronJob.next_run_at <= now + CLAIM_AHEAD_MS)
                .order_by(CronJob.next_run_at).limit(free).with_for_update(skip_locked=True))).scalars().all()
            for job in rows:
                due = job.next_run_at
                assert due is not None
                try:
                    nxt = stored_schedule(job).next_after(max(now, due))  # missed firings coalesce into this one
                except Exception as exc:  # a row edited by hand into something unusable: park it
                    log.error("cron job has an unusable schedule; disabling it", job=job.id, error=str(exc))
                    await s.execute(update(CronJob).where(CronJob.id == job.id).values(enabled=False))
                    continue
                result = await s.execute(update(CronJob).where(
                    CronJob.id == job.id, CronJob.next_run_at == due, CronJob.running_at.is_(None),
                ).values(running_at=now, running_replica=self._replica_id, next_run_at=nxt))
                if rowcount(result):
                    s.expunge(job)
                    claimed.append((job, due))
        for job, due in claimed:
            self._launch(job, scheduled_for=due, trigger="schedule")

    def _launch(self, job: CronJob, *, scheduled_for: int | None, trigger: str) -> None:
        task = asyncio.create_task(self._run(job, scheduled_for, trigger), name=f"cron-{job.id}")
        self._running[job.id] = task

        def done(_t: asyncio.Task[None]) -> None:
            self._running.pop(job.id, None)
            self.wake()

        task.add_done_callback(done)

    # -- a run --------------------------------------------------------------------------------------

    async def run_now(self, job_id: str, *, due_only: bool) -> dict[str, Any]:
        """``cron.run``: claim the job now (``force``) or only if it is due (``due``) and start it."""
        now = now_ms()
        async with self._db.session() as s:
            job = await s.get(CronJob, job_id)
            if job is None:
                return {"ok": False, "ran": False, "reason": "not-found"}
            if job.running_at is not None:
                return {"ok": True, "ran": False, "reason": "already-running"}
            if due_only and (job.next_run_at is None or job.next_run_at > now or not job.enabled):
                return {"ok": True, "ran": False, "reason": "not-due"}
            due = job.next_run_at
            values: dict[str, Any] = {"running_at": now, "running_replica": self._replica_id}
            if due_only and due is not None:
                values["next_run_at"] = stored_schedule(job).next_after(now)
            result = await s.execute(update(CronJob).where(
                CronJob.id == job_id, CronJob.running_at.is_(None)).values(**values))
            if not rowcount(result):
                return {"ok": True, "ran": False, "reason": "already-running"}
            s.expunge(job)
        self._launch(job, scheduled_for=due if due_only else None, trigger="manual" if not due_only else "due")
        return {"ok": True, "ran": True}

    async def _run(self, job: CronJob, scheduled_for: int | None, trigger: str) -> None:
        try:
            begun = await self._begin(job, scheduled_for, trigger)
        except Exception:
            # The claim must not outlive this task: a job left "running" by a live replica never fires again.
            log.exception("cron job could not start; giving its claim back", job=job.id)
            with contextlib.suppress(Exception):
                await self._db.persist(lambda s: self._give_back(s, job.id), what=f"cron job {job.id}'s claim")
            return
        if begun is None:
            return
        job, history_id, started = begun
        self.fired += 1
        self.event("started", job.id, {"startedAtMs": started, "scheduledForMs": scheduled_for})
        status, summary, error, run_id, session_key, delivery_status = "error", None, None, None, None, None
        try:
            status, summary, error, run_id, session_key, delivery_status = await self._execute(job)
        except asyncio.CancelledError:
            status, error = "interrupted", "the gateway stopped during the run"
            raise
        except Exception as exc:
            log.exception("cron job failed", job=job.id)
            status, error = "error", str(exc) or type(exc).__name__
        finally:
            await asyncio.shield(self._finish(job, history_id, started, status, summary, error, run_id,
                                              session_key, delivery_status))

    async def _begin(self, job: CronJob, scheduled_for: int | None, trigger: str) -> tuple[CronJob, int, int] | None:
        """The firing's start: its time waited for when it was claimed ahead, the job read again (removed,
        switched off or changed meanwhile?), its history row. A database restart delays it (the claim is
        ours: the firing happens once, late) instead of failing it. None: it is not to run."""
        if scheduled_for is not None and scheduled_for > now_ms():  # claimed ahead: wait for its time
            await asyncio.sleep((scheduled_for - now_ms()) / 1000)

            async def read(s: Any) -> CronJob | None:
                found = await s.get(CronJob, job.id)
                if found is not None:
                    s.expunge(found)
                return found

            current = await self._db.persist(read, what=f"cron job {job.id}")
            if current is None or current.running_replica != self._replica_id:
                return None
            if not current.enabled:
                await self._db.persist(lambda s: self._give_back(s, job.id), what=f"cron job {job.id}'s claim")
                return None
            job = current
        started = now_ms()

        async def record(s: Any) -> int:
            row = CronRun(job_id=job.id, status="running", trigger=trigger, scheduled_for=scheduled_for,
                          started_at=started, replica_id=self._replica_id)
            s.add(row)
            await s.flush()
            return int(row.id)

        return job, await self._db.persist(record, what=f"cron job {job.id}'s run"), started

    async def _give_back(self, s: Any, job_id: str) -> None:
        """This replica's claim on the job released, so it fires again on schedule."""
        await s.execute(update(CronJob).where(CronJob.id == job_id, CronJob.running_replica == self._replica_id)
                        .values(running_at=None, running_replica=None))

    async def _execute(self, job: CronJob) -> tuple[str, str | None, str | None, str | None, str | None, str | None]:
        """Run the job's payload; (status, summary, error, agent run id, session key, delivery status)."""
        payload: dict[str, Any] = orjson.loads(job.payload)
        delivery: dict[str, Any] = orjson.loads(job.delivery) if job.delivery else {"mode": "none"}
        agent = self._sessions.agent(job.agent_id)
        if job.kind == "heartbeat" and not _within_active_hours(agent.heartbeat):
            return "skipped", "outside active hours", None, None, None, None
        if job.kind == "job" and job.wake_mode == "next-heartbeat" and job.session_target == "main":
            return await self._queue_for_heartbeat(job, agent.id)
        run_key = uuid.uuid4().hex[:12]
        target = job.session_target
        if target == "isolated":
            key = f"agent:{agent.id}:cron:{job.id}:{run_key}"
        elif target == "main":
            key = f"agent:{agent.id}:main"
        else:
            key = self._sessions.normalize_key(target.removeprefix("session:"))
        await self._sessions.ensure(key, kind="cron" if target == "isolated" else None)
        text = payload["message"] if payload["kind"] == "agentTurn" else f"[scheduled: {job.name}] {payload['text']}"
        if job.kind == "heartbeat":
            events = await self._take_queued(agent.id)
            if events:
                text = "\n".join(f"System: {line}" for line in events) + "\n\n" + text
        run, _ = await self._runs.submit(RunRequest(session_key=key, agent_id=agent.id, message=text, source="cron",
                                                 is_owner=False, deliver=False))
        limit = payload.get("timeoutSeconds") or self._config.config.agents.timeoutSeconds + 30
        try:
            await asyncio.wait_for(asyncio.shield(run.done.wait()), limit)
        except TimeoutError:
            run.stop("the cron job's timeoutSeconds passed")
            await asyncio.wait_for(asyncio.shield(run.done.wait()), 30)
        if run.status != "ok":
            return "error", (run.reply or None), run.error or f"the run ended {run.status}", run.id, key, None
        reply = run.reply or ""
        summary = reply[:SUMMARY_CHARS] or None
        mode = delivery.get("mode", "none")
        if mode == "none":
            return "ok", summary, None, run.id, key, "none"
        skip = skip_reason(run.side_effects)
        if skip is not None:
            return "ok", summary, None, run.id, key, skip
        try:
            if mode == "announce":
                delivered = await announce(self._db, self._sessions, self._platforms(), delivery, reply, key, agent.id)
            else:
                body = {"jobId": job.id, "jobName": job.name, "runId": run.id, "status": "ok", "sessionKey": key,
                        "summary": reply, "finishedAtMs": now_ms()}
                code = await post_webhook(delivery["to"], body, token=delivery.get("token"),
                                          allow_private=self._config.config.cron.webhookAllowPrivate)
                delivered = f"webhook:{code}"
        except Exception as exc:  # WebhookRefused, a chat platform error, ...
            if delivery.get("bestEffort"):
                log.warning("cron delivery failed (best effort)", job=job.id, error=str(exc))
                return "ok", summary, None, run.id, key, "failed"
            return "error", summary, f"delivery failed: {exc}", run.id, key, "failed"
        return "ok", summary, None, run.id, key, delivered

    async def _queue_for_heartbeat(self, job: CronJob, agent_id: str) -> tuple[str, str | None, str | None,
                                                                                 str | None, str | None, str | None]:
        """A ``next-heartbeat`` firing: mark the job's event queued (once, however often it fires before)."""
        async with self._db.session() as s:
            await s.execute(update(CronJob).where(CronJob.id == job.id, CronJob.wake_pending_at.is_(None))
                            .values(wake_pending_at=now_ms()))
        # Nothing is delivered by this run: the heartbeat turn that carries the event delivers its own reply.
        return ("ok", f"queued for the next heartbeat of agent {agent_id}", None, None, f"agent:{agent_id}:main",
                "not-requested")

    async def _take_queued(self, agent_id: str) -> list[str]:
        """The events queued for ``agent_id``'s heartbeat, oldest first, cleared as they are taken."""
        default = self._sessions.default_agent_id
        async with self._db.session() as s:
            mine = CronJob.agent_id == agent_id
            if agent_id == default:
                mine = mine | CronJob.agent_id.is_(None)
            rows = list((await s.execute(
                select(CronJob).where(CronJob.wake_pending_at.is_not(None), mine)
                .order_by(CronJob.wake_pending_at))).scalars())
            if not rows:
                return []
            await s.execute(update(CronJob).where(CronJob.id.in_([r.id for r in rows])).values(wake_pending_at=None))
            out = []
            for row in rows:
                payload = orjson.loads(row.payload)
                body = payload.get("text") if payload.get("kind") == "systemEvent" else payload.get("message")
                out.append(f"[scheduled: {row.name}] {body}")
            return out

    async def _finish(self, job: CronJob, history_id: int, started: int, status: str, summary: str | None,
                      error: str | None, run_id: str | None, session_key: str | None,
                      delivery_status: str | None) -> None:
        ended = now_ms()
        cfg = self._config.config.cron
        alert, threshold = False, 0
        try:
            async with self._db.session() as s:
                await s.execute(update(CronRun).where(CronRun.id == history_id).values(
                    status=status, ended_at=ended, duration_ms=ended - started, summary=summary, error=error,
                    run_id=run_id, session_key=session_key, delivery_status=delivery_status))
                current = await s.get(CronJob, job.id)
                if current is not None:
                    errors = current.consecutive_errors + 1 if status == "error" else 0
                    values: dict[str, Any] = {
                        "running_at": None, "running_replica": None, "last_run_at": started, "last_status": status,
                        "last_error": error, "last_duration_ms": ended - started,
                        "last_delivery_status": delivery_status, "consecutive_errors": errors, "updated_at": ended}
                    if status == "error" and current.next_run_at is not None:
                        backoff = BACKOFF_MS[min(errors, len(BACKOFF_MS)) - 1]
                        values["next_run_at"] = max(current.next_run_at, ended + backoff)
                    at_job = stored_schedule(current).kind == "at"
                    if at_job and status == "ok" and current.delete_after_run:
                        await s.execute(delete(CronJob).where(CronJob.id == job.id))
                    else:
                        if at_job and current.next_run_at is None:
                            values["enabled"] = False  # done: kept for its history, off
                        await s.execute(update(CronJob).where(CronJob.id == job.id).values(**values))
                    threshold = orjson.loads(current.failure_alert or "{}").get("after") or cfg.failureAlertAfter
                    alert = status == "error" and errors == threshold
                await self._prune(s, job.id, ended)
        except Exception:
            log.exception("could not record a cron run", job=job.id)
        self.event("finished", job.id, {"status": status, "durationMs": ended - started, "runId": run_id,
                                         "deliveryStatus": delivery_status, "error": error})
        log.info("cron job ran", job=job.id, name=job.name, status=status, ms=ended - started,
                 delivery=delivery_status)
        if alert:
            await self._alert(job, error, threshold)

    async def _prune(self, s: Any, job_id: str, now: int) -> None:
        cfg = self._config.config.cron
        await s.execute(delete(CronRun).where(CronRun.job_id == job_id,
                                              CronRun.started_at < now - cfg.keepRunsDays * 86_400_000))
        keep_from = await s.scalar(select(CronRun.id).where(CronRun.job_id == job_id)
                                   .order_by(CronRun.id.desc()).offset(cfg.keepRunsPerJob - 1).limit(1))
        if keep_from is not None:
            await s.execute(delete(CronRun).where(CronRun.job_id == job_id, CronRun.id < keep_from))

    async def _alert(self, job: CronJob, error: str | None, failures: int) -> None:
        """Tell the owner a job keeps failing: where its failureAlert says, else where it delivers, else the
        agent's main session (the web chat shows it)."""
        alert = orjson.loads(job.failure_alert or "{}")
        delivery = orjson.loads(job.delivery or "{}")
        target = alert if alert.get("channel") and alert.get("to") else (
            delivery if delivery.get("mode") == "announce" else {})
        text = f"⚠️ Scheduled job “{job.name}” failed {failures} times in a row. Last error: {error or 'unknown'}"
        agent = self._sessions.agent(job.agent_id)
        try:
            await announce(self._db, self._sessions, self._platforms(), target, text, f"agent:{agent.id}:main",
                           agent.id)
        except Exception as exc:
            log.warning("could not send a cron failure alert", job=job.id, error=str(exc))

    # -- crashes ----------------------------------------------------------------------------------

    async def mark_interrupted(self, replicas: list[str]) -> int:
        """Jobs left running by a process of these replicas that is gone: recorded as interrupted."""
        if not replicas:
            return 0
        ended = now_ms()
        async with self._db.session() as s:
            jobs = (await s.execute(select(CronJob.id).where(CronJob.running_replica.in_(replicas),
                                                             CronJob.running_at.is_not(None)))).scalars().all()
            for job_id in jobs:
                await s.execute(update(CronRun).where(CronRun.job_id == job_id, CronRun.status == "running",
                                                      CronRun.replica_id.in_(replicas)).values(
                    status="interrupted", ended_at=ended, error="the gateway stopped during the run"))
                await s.execute(update(CronJob).where(CronJob.id == job_id, CronJob.running_replica.in_(replicas))
                                .values(running_at=None, running_replica=None, last_status="interrupted",
                                        last_error="the gateway stopped during the run", updated_at=ended))
        if jobs:
            log.warning("cron runs interrupted by a gateway stop", jobs=list(jobs))
        return len(jobs)

    async def _adopt_dead_replicas(self) -> None:
        watch = self._replicas
        if watch is None:
            return
        from gateway.store.leases import ReplicaRepo

        cutoff = watch.dead_before_ms()  # None: cut off from the database until lately, it cannot tell yet
        if cutoff is None:
            return
        async with self._db.session() as s:
            dead = await ReplicaRepo.stale(s, self._replica_id, before_ms=cutoff)
        if dead:
            await self.mark_interrupted(dead)

    def event(self, action: str, job_id: str, extra: dict[str, Any] | None = None) -> None:
        self._broadcast("cron", {"action": action, "jobId": job_id, **(extra or {})})


def _within_active_hours(heartbeat: Any) -> bool:
    hours = getattr(heartbeat, "activeHours", None)
    if hours is None:
        return True
    from datetime import datetime
    from zoneinfo import ZoneInfo

    now = datetime.now(ZoneInfo(hours.tz)).strftime("%H:%M")
    start, end = hours.start, hours.end
    return start <= now < end if start <= end else (now >= start or now < end)


CRON: Key[CronService] = Key("cron")


async def start(host: CapabilityHost) -> None:
    """Capability entry: the scheduler, and the heartbeat jobs in step with the config."""
    from gateway.cron.heartbeat import sync_heartbeats

    svc = CronService(host.db, host.config_store, host.replica_id, host.sessions, host.runs, host.replicas,
                      host.broadcast, host.platforms)
    await sync_heartbeats(host.db, host.config, now_ms())
    await svc.start()
    host.services.provide(CRON, svc)
    host.on_stop(svc.stop)

    async def on_change(_old: Any, new: Any, changed: frozenset[str]) -> None:
        if "agents" in changed and await sync_heartbeats(host.db, new, now_ms()):
            svc.wake()
        if "cron" in changed:
            svc.wake()

    host.on_config_change(on_change)

    def on_remote(event: str, payload: Any) -> None:  # another replica changed a job: its time may be sooner
        if event == "cron" and isinstance(payload, dict) and payload.get("action") in ("added", "updated"):
            svc.wake()

    if host.bus is not None:
        host.bus.add_listener(on_remote)
