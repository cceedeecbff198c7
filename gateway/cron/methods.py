"""``cron.*`` methods, shaped as OpenClaw's so its clients work unchanged.

``cron.status``, ``cron.list {includeDisabled, query, limit, offset}``, ``cron.get {id}``, ``cron.add`` (the
job object as params), ``cron.update {id, patch}``, ``cron.remove {id}``, ``cron.run {id, mode}``,
``cron.runs {id, limit, offset, status}``. A job is named by ``id`` or ``jobId`` (the MCP tools send the
latter). Every change and run is a ``cron`` event.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from gateway.access import Access
from gateway.cron import store
from gateway.cron.jobs import KNOWN, validate_job, validate_patch
from gateway.cron.service import CRON, CronService, now_ms, stored_schedule
from gateway.cron.store import CronJob
from gateway.dispatch.dispatcher import ADMIN, READ, CallContext, NoParams, Params, method
from gateway.protocol import InvalidRequest, Unavailable

__all__: list[str] = []

MAX_PAGE = 200
"""The most jobs one ``cron.list`` page holds (OpenClaw's clients refuse a page that claims more)."""


class JobRef(Params):
    id: str | None = Field(None, min_length=1, max_length=64)
    jobId: str | None = Field(None, min_length=1, max_length=64)

    @model_validator(mode="after")
    def _one_id(self) -> JobRef:
        if not (self.id or self.jobId):
            raise ValueError("id: required (the job's id; jobId is accepted too)")
        return self

    @property
    def ref(self) -> str:
        return self.id or self.jobId or ""


class ListParams(Params):
    includeDisabled: bool = True
    enabled: Literal["all", "enabled", "disabled"] = "all"
    agentId: str | None = Field(None, min_length=1, max_length=128)
    scheduleKind: Literal["all", "at", "every", "cron", "on-exit", "stream"] = "all"
    query: str | None = Field(None, max_length=500)
    filter: str | None = Field(None, max_length=500)
    sortBy: Literal["nextRunAtMs", "updatedAtMs", "name"] = "nextRunAtMs"
    sortDir: Literal["asc", "desc"] = "asc"
    limit: int = Field(MAX_PAGE, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=1_000_000_000)


class AddParams(Params):
    model_config = ConfigDict(extra="allow")  # the job object; gateway.cron.jobs checks every field
    wire_fields: ClassVar[frozenset[str]] = KNOWN


class UpdateParams(JobRef):
    patch: dict[str, Any]


class RunParams(JobRef):
    mode: Literal["force", "due"] = "force"


class RunsParams(Params):
    id: str | None = Field(None, min_length=1, max_length=64)
    jobId: str | None = Field(None, min_length=1, max_length=64)
    scope: Literal["job", "all"] | None = None
    limit: int = Field(50, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=1_000_000_000)
    status: Literal["all", "ok", "error", "skipped", "interrupted", "running"] | None = None
    statuses: list[Literal["ok", "error", "skipped"]] | None = Field(None, min_length=1, max_length=3)
    sortDir: Literal["asc", "desc"] = "desc"

    @property
    def ref(self) -> str | None:
        """The job whose runs are asked for; None: every job's (``scope: all``, or no id given)."""
        return None if self.scope == "all" else (self.id or self.jobId)


def _service(ctx: CallContext) -> CronService:
    svc = ctx.services.find(CRON)
    if svc is None:
        raise Unavailable("cron is not running on this gateway", details={"capability": "cron"})
    return svc


def _agents(ctx: CallContext) -> dict[str, Any]:
    """What a job definition is checked against: the agents, which have a heartbeat, the default one."""
    agents = ctx.config.agents.list
    return {"agent_ids": [a.id for a in agents], "default_agent": ctx.sessions.default_agent_id,
            "heartbeat_agents": frozenset(a.id for a in agents if a.heartbeat is not None)}


async def _job(ctx: CallContext, job_id: str) -> CronJob:
    async with ctx.db.session() as s:
        job = await s.get(CronJob, job_id)
    if job is None:
        raise InvalidRequest(f"id: no cron job {job_id!r}", details={"field": "id"})
    return job


@method("cron.status", access=Access("cron", "read"), scope=READ, aliases=("cron:status",))
async def cron_status(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Scheduler state: enabled, job counts, next wake, runs in progress."""
    svc = _service(ctx)
    async with ctx.db.session() as s:
        counts = await store.job_counts(s)
    return {"enabled": ctx.config.cron.enabled, "jobs": counts.total, "enabledJobs": counts.enabled,
            "nextWakeAtMs": counts.next_run_at, "running": svc.running,
            "maxConcurrentRuns": ctx.config.cron.maxConcurrentRuns, "firedSinceStart": svc.fired}


@method("cron.list", access=Access("cron", "read"), params=ListParams, scope=READ, aliases=("cron:list",))
async def cron_list(p: ListParams, ctx: CallContext) -> dict[str, Any]:
    """One page of jobs (soonest first by default); ``query`` matches name, description, id and payload text.

    The page is OpenClaw's inventory page: ``jobs, total, offset, limit, hasMore, nextOffset`` and a
    ``snapshotRevision`` that changes whenever a job is added, changed or removed.
    """
    _service(ctx)
    enabled = "enabled" if not p.includeDisabled else p.enabled
    q = store.job_filter(enabled=enabled, agent_id=p.agentId, default_agent=ctx.config.agents.default,
                         schedule_kind=p.scheduleKind, text=p.query or p.filter)
    limit = min(p.limit, MAX_PAGE)
    async with ctx.db.session() as s:
        page = await store.job_page(s, q, sort_by=p.sortBy, descending=p.sortDir == "desc", offset=p.offset,
                                    limit=limit)
    total, rows = page.total, page.rows
    jobs = [r.to_dict() for r in rows]
    more = p.offset + len(jobs) < total
    return {"jobs": jobs, "total": total, "offset": p.offset, "limit": limit, "hasMore": more,
            "nextOffset": p.offset + len(jobs) if more else None,
            "snapshotRevision": page.revision}


@method("cron.get", access=Access("cron", "read"), params=JobRef, scope=READ, aliases=("cron:get",))
async def cron_get(p: JobRef, ctx: CallContext) -> dict[str, Any]:
    _service(ctx)
    return (await _job(ctx, p.ref)).to_dict()


@method("cron.add", access=Access("cron", "admin"), params=AddParams, scope=ADMIN, aliases=("cron:add",))
async def cron_add(p: AddParams, ctx: CallContext) -> dict[str, Any]:
    """Create a job from the job object; answers the stored job (with its ``id`` and next run)."""
    svc = _service(ctx)
    now = now_ms()
    raw = dict(p.model_extra or {})
    raw.pop("id", None)
    raw.pop("jobId", None)
    spec = validate_job(raw, now_ms=now, **_agents(ctx))
    job = CronJob(id=uuid.uuid4().hex[:16], created_at=now, updated_at=now, kind="job", consecutive_errors=0,
                  **spec.columns())
    job.next_run_at = spec.schedule.first_run(now) if spec.enabled else None
    if spec.schedule.kind == "at" and job.next_run_at is None and spec.enabled:
        job.next_run_at = now  # an "at" time already past: run it now, once
    async with ctx.db.session() as s:
        s.add(job)
    svc.wake()
    out = job.to_dict()
    svc.event("added", job.id, {"job": out})
    return out


@method("cron.update", access=Access("cron", "admin"), params=UpdateParams, scope=ADMIN, aliases=("cron:update",))
async def cron_update(p: UpdateParams, ctx: CallContext) -> dict[str, Any]:
    """Patch a job (a partial payload or delivery keeps its other fields); answers the stored job."""
    svc = _service(ctx)
    now = now_ms()
    current = await _job(ctx, p.ref)
    if current.kind == "heartbeat":
        raise InvalidRequest("id: heartbeat jobs follow agents.<id>.heartbeat in the config; change it there",
                             details={"field": "id"})
    spec = validate_patch(current.to_dict(redact=False), p.patch, now_ms=now, **_agents(ctx))
    async with ctx.db.session() as s:
        job = await s.get(CronJob, p.ref)
        if job is None:
            raise InvalidRequest(f"id: no cron job {p.ref!r}", details={"field": "id"})
        for column, value in spec.columns().items():
            setattr(job, column, value)
        job.updated_at = now
        if "schedule" in p.patch or "enabled" in p.patch:
            job.next_run_at = stored_schedule(job).first_run(now) if spec.enabled else None
            if spec.enabled and spec.schedule.kind == "at" and job.next_run_at is None and "schedule" in p.patch:
                job.next_run_at = now
        if "enabled" in p.patch and spec.enabled:
            job.consecutive_errors = 0
        out = job.to_dict()
    svc.wake()
    svc.event("updated", p.ref, {"job": out})
    return out


@method("cron.remove", access=Access("cron", "admin"), params=JobRef, scope=ADMIN, aliases=("cron:remove",))
async def cron_remove(p: JobRef, ctx: CallContext) -> dict[str, Any]:
    """Delete a job and its history (a run in progress finishes, unrecorded)."""
    svc = _service(ctx)
    async with ctx.db.session() as s:
        job = await s.get(CronJob, p.ref)
        if job is not None and job.kind == "heartbeat":
            raise InvalidRequest("id: heartbeat jobs follow agents.<id>.heartbeat in the config; remove it there",
                                 details={"field": "id"})
        removed = job is not None
        if job is not None:
            await store.remove_job(s, job)
    if removed:
        svc.wake()
        svc.event("removed", p.ref)
    return {"ok": True, "removed": removed, "id": p.ref}


@method("cron.run", access=Access("cron", "admin"), params=RunParams, scope=ADMIN, aliases=("cron:run",))
async def cron_run(p: RunParams, ctx: CallContext) -> dict[str, Any]:
    """Fire a job now (``force``), or only if it is due (``due``)."""
    svc = _service(ctx)
    await _job(ctx, p.ref)
    return {**await svc.run_now(p.ref, due_only=p.mode == "due"), "id": p.ref}


@method("cron.runs", access=Access("cron", "read"), params=RunsParams, scope=READ, aliases=("cron:runs",))
async def cron_runs(p: RunsParams, ctx: CallContext) -> dict[str, Any]:
    """Run history, newest first: one job's (``id``), or every job's (``scope: all``, or no ``id``)."""
    _service(ctx)
    status = p.status if p.status and p.status != "all" else None
    async with ctx.db.session() as s:
        rows, total = await store.run_page(s, job_id=p.ref, status=status, statuses=p.statuses,
                                           descending=p.sortDir == "desc", offset=p.offset, limit=p.limit)
    entries = [r.to_dict() for r in rows]
    more = p.offset + len(entries) < total
    return {"entries": entries, "total": total, "offset": p.offset, "limit": p.limit, "hasMore": more,
            "nextOffset": p.offset + len(entries) if more else None}
