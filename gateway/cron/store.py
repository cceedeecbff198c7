"""Cron tables: jobs (definition and scheduling state) and one history row per run.

Jobs are plain rows with JSON columns for the parts whose shape follows OpenClaw (schedule, payload,
delivery), not a scheduler library's pickled job store: any replica, and any tool, can read them.
``next_run_at`` is indexed: the service asks only for the earliest due job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import BigInteger, Boolean, Index, Integer, Select, String, Text, delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.base import Base

__all__ = ["CronJob", "CronRun", "JobCounts", "JobPage", "delivery_status", "job_counts", "job_page", "remove_job",
           "run_page"]


def _load(text: str | None) -> Any:
    return orjson.loads(text) if text else None


class CronJob(Base):
    __tablename__ = "cron_jobs"
    __table_args__ = (Index("ix_cron_jobs_due", "enabled", "next_run_at"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    agent_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    schedule: Mapped[str] = mapped_column(Text)  # JSON
    session_target: Mapped[str] = mapped_column(String(600))  # main | isolated | session:<key>
    payload: Mapped[str] = mapped_column(Text)  # JSON
    delivery: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON
    failure_alert: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON
    delete_after_run: Mapped[bool] = mapped_column(Boolean, default=False)
    kind: Mapped[str] = mapped_column(String(16), default="job")  # job | heartbeat
    wake_mode: Mapped[str] = mapped_column(String(16), default="now", server_default="now")  # now | next-heartbeat
    wake_pending_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    """A next-heartbeat job that fired: its event waits for the agent's next heartbeat turn (then cleared)."""
    next_run_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    running_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    running_replica: Mapped[str | None] = mapped_column(String(64), nullable=True)
    last_run_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    last_status: Mapped[str | None] = mapped_column(String(16), nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    last_duration_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    last_delivery_status: Mapped[str | None] = mapped_column(String(32), nullable=True)
    consecutive_errors: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)

    def to_dict(self, *, redact: bool = True) -> dict[str, Any]:
        """The job in OpenClaw's ``CronJob`` shape (a closed object its clients validate).

        ``wakeMode`` as stored (``now``, or ``next-heartbeat`` for a main-session job). A heartbeat job (declared
        in the config, not added) says where in ``declarationKey``. ``redact=False`` is the
        stored form, with the webhook's bearer ``delivery.token`` (never read back otherwise).
        """
        out: dict[str, Any] = {
            "id": self.id, "name": self.name, "enabled": self.enabled, "schedule": _load(self.schedule),
            "sessionTarget": self.session_target, "wakeMode": self.wake_mode, "payload": _load(self.payload),
            "createdAtMs": self.created_at, "updatedAtMs": self.updated_at, "state": self._state(),
        }
        if self.description:
            out["description"] = self.description
        if self.agent_id:
            out["agentId"] = self.agent_id
        if self.delivery:
            delivery = _load(self.delivery)
            if redact:
                delivery.pop("token", None)
            out["delivery"] = delivery
        if self.failure_alert:
            out["failureAlert"] = _load(self.failure_alert)
        if self.delete_after_run:
            out["deleteAfterRun"] = True
        if self.kind == "heartbeat":
            out["declarationKey"] = f"agents.{self.agent_id or 'main'}.heartbeat"
        elif self.kind != "job":
            out["declarationKey"] = self.kind
        return out

    def _state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"consecutiveErrors": self.consecutive_errors}
        for key, value in (("nextRunAtMs", self.next_run_at), ("runningAtMs", self.running_at),
                           ("lastRunAtMs", self.last_run_at), ("lastDurationMs", self.last_duration_ms)):
            if value is not None:
                state[key] = value
        if self.last_status is not None:
            # OpenClaw knows ok, error and skipped; a run a crash cut short ("interrupted") is an error.
            status = self.last_status if self.last_status in ("ok", "error", "skipped") else "error"
            state["lastRunStatus"] = state["lastStatus"] = status
            if self.last_status != status and not self.last_error:
                state["lastError"] = f"the run was {self.last_status}"
        if self.last_error:
            state["lastError"] = self.last_error
        delivery = self.last_delivery_status
        if delivery is not None:
            state["lastDeliveryStatus"] = delivery_status(delivery)
            state["lastDelivered"] = state["lastDeliveryStatus"] == "delivered"
            if state["lastDeliveryStatus"] == "not-delivered" and delivery != "failed":
                state["deliverySuppressionReason"] = delivery  # e.g. the agent already sent it itself
        return state


def delivery_status(raw: str) -> str:
    """Our recorded delivery outcome (``delivered``, ``webhook:204``, ``none``, ``failed``, a reason it was
    skipped) as OpenClaw's ``delivered`` / ``not-delivered`` / ``not-requested`` / ``unknown``."""
    if raw == "delivered" or raw.startswith("webhook:2"):
        return "delivered"
    if raw == "none":
        return "not-requested"
    return "not-delivered" if raw else "unknown"


class CronRun(Base):
    __tablename__ = "cron_runs"
    __table_args__ = (Index("ix_cron_runs_job", "job_id", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(String(64))
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)  # the agent run, if one was started
    status: Mapped[str] = mapped_column(String(16))  # running | ok | error | skipped | interrupted
    trigger: Mapped[str] = mapped_column(String(16), default="schedule")  # schedule | manual
    scheduled_for: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    started_at: Mapped[int] = mapped_column(BigInteger)
    ended_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    duration_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    delivery_status: Mapped[str | None] = mapped_column(String(32), nullable=True)
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    session_key: Mapped[str | None] = mapped_column(String(600), nullable=True)
    replica_id: Mapped[str | None] = mapped_column(String(64), nullable=True)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "jobId": self.job_id, "status": self.status, "trigger": self.trigger,
                               "startedAtMs": self.started_at}
        for key, value in (("runId", self.run_id), ("scheduledForMs", self.scheduled_for),
                           ("endedAtMs", self.ended_at), ("durationMs", self.duration_ms),
                           ("deliveryStatus", self.delivery_status), ("summary", self.summary),
                           ("error", self.error), ("sessionKey", self.session_key)):
            if value is not None:
                out[key] = value
        return out


# -- queries of the cron.* methods (handlers never build queries) ---------------------------------------------

@dataclass(frozen=True, slots=True)
class JobCounts:
    total: int
    enabled: int
    next_run_at: int | None


async def job_counts(s: AsyncSession) -> JobCounts:
    """How many jobs, how many enabled, and the soonest enabled job's next run."""
    total = await s.scalar(select(func.count()).select_from(CronJob)) or 0
    enabled = await s.scalar(select(func.count()).select_from(CronJob).where(CronJob.enabled.is_(True))) or 0
    nxt = await s.scalar(select(func.min(CronJob.next_run_at)).where(CronJob.enabled.is_(True)))
    return JobCounts(total, enabled, nxt)


@dataclass(frozen=True, slots=True)
class JobPage:
    rows: list[CronJob]
    total: int
    revision: str
    """Changes whenever a job is added, changed or removed (count and latest update)."""


def job_filter(*, enabled: str, agent_id: str | None, default_agent: str, schedule_kind: str,
               text: str | None) -> Select[CronJob]:
    """The jobs ``cron.list`` selects: enabled ``enabled|disabled|all``, an agent (the default agent's jobs
    include those with no agent), a schedule kind, and a text matched in name, description, id and payload."""
    q = select(CronJob)
    if enabled == "enabled":
        q = q.where(CronJob.enabled.is_(True))
    elif enabled == "disabled":
        q = q.where(CronJob.enabled.is_(False))
    if agent_id:
        q = q.where(CronJob.agent_id == agent_id if agent_id != default_agent
                    else or_(CronJob.agent_id == agent_id, CronJob.agent_id.is_(None)))
    if schedule_kind != "all":
        q = q.where(CronJob.schedule.like(f'%"kind":"{schedule_kind}"%'))
    if text:
        like = f"%{text.lower()}%"
        q = q.where(or_(func.lower(CronJob.name).like(like), func.lower(CronJob.description).like(like),
                        func.lower(CronJob.id).like(like), func.lower(CronJob.payload).like(like)))
    return q


async def job_page(s: AsyncSession, q: Select[CronJob], *, sort_by: str, descending: bool, offset: int,
                   limit: int) -> JobPage:
    """One page of ``q`` sorted by ``nextRunAtMs|updatedAtMs|name`` (jobs without a value last, then by id)."""
    column = {"nextRunAtMs": CronJob.next_run_at, "updatedAtMs": CronJob.updated_at, "name": CronJob.name}[sort_by]
    order = [column.is_(None), column.desc() if descending else column, CronJob.id]
    total = await s.scalar(select(func.count()).select_from(q.subquery())) or 0
    rows = list((await s.execute(q.order_by(*order).offset(offset).limit(limit))).scalars().all())
    revision = (await s.execute(select(func.count(), func.max(CronJob.updated_at)))).one()
    return JobPage(rows, total, f"{revision[0]}.{revision[1] or 0}")


async def remove_job(s: AsyncSession, job: CronJob) -> None:
    """Delete a job and its run history."""
    await s.delete(job)
    await s.execute(delete(CronRun).where(CronRun.job_id == job.id))


async def run_page(s: AsyncSession, *, job_id: str | None, status: str | None, statuses: Sequence[str] | None,
                   descending: bool, offset: int, limit: int) -> tuple[list[CronRun], int]:
    """One page of run history (one job's, or every job's; ``status`` and ``statuses`` both apply), with the
    total count."""
    q = select(CronRun)
    if job_id is not None:
        q = q.where(CronRun.job_id == job_id)
    if status:
        q = q.where(CronRun.status == status)
    if statuses:
        q = q.where(CronRun.status.in_(statuses))
    total = await s.scalar(select(func.count()).select_from(q.subquery())) or 0
    order = CronRun.id.desc() if descending else CronRun.id
    rows = list((await s.execute(q.order_by(order).offset(offset).limit(limit))).scalars().all())
    return rows, total
