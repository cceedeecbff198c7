"""Read-only views of one session that OpenClaw's Control UI opens with every chat: ``sessions.describe``,
``tasks.list``, ``sessions.branches.list``, ``sessions.companion.state``, ``progressCard.get``, and the
``sessions.observer.visibility`` signal.

Where we keep the data the answer is real (the session row, the runs of this replica's queue); where we have
no such thing (transcript branches, a companion side-chat, progress cards) the answer is the schema's empty
shape, so the page shows "nothing here" instead of an error. docs/control-ui.md lists which is which.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from gateway.access import Access
from gateway.dispatch.dispatcher import READ, CallContext, Params, method
from gateway.runs.run import Run
from gateway.sessions.methods import check_visible
from gateway.sessions.store import SessionRepo

Key = Field(min_length=1, max_length=512)


class DescribeParams(Params):
    key: str = Key
    agentId: str | None = Field(None, min_length=1)
    includeDerivedTitles: bool = False
    includeLastMessage: bool = False


@method("sessions.describe", access=Access("session", "read", ("key", "agentId")), params=DescribeParams, scope=READ)
async def sessions_describe(p: DescribeParams, ctx: CallContext) -> dict[str, Any]:
    """One session's row (as ``sessions.list`` shows it), or ``session: null`` when it does not exist yet."""
    key = ctx.sessions.normalize_key(p.key)
    await check_visible(ctx, key, "key")
    async with ctx.db.session() as s:
        row = await SessionRepo.get(s, key)
        if row is None:
            return {"session": None}
        titles = await SessionRepo.first_user_texts(s, [key]) if p.includeDerivedTitles else {}
        latest = await SessionRepo.last_texts(s, [key]) if p.includeLastMessage else {}
    session = row.to_dict()
    if ctx.runs is not None:
        lane = ctx.runs.lane_state(key)
        session["run"] = lane
        session["hasActiveRun"] = lane["active"] is not None
    if key in titles:
        session["derivedTitle"] = titles[key][:60]
    if key in latest:
        session["lastMessagePreview"] = latest[key][:120]
    return {"session": session}


TaskStatus = Literal["queued", "running", "completed", "failed", "cancelled", "timed_out"]

_TASK_STATUS: dict[str, TaskStatus] = {
    "queued": "queued", "running": "running", "ok": "completed", "error": "failed", "aborted": "cancelled",
    "timeout": "timed_out",
}


class TasksListParams(Params):
    status: TaskStatus | list[TaskStatus] | None = None
    agentId: str | None = Field(None, min_length=1)
    sessionKey: str | None = Field(None, min_length=1, max_length=512)
    limit: int | None = Field(None, ge=1, le=500)
    cursor: str | None = None
    sortBy: str | None = Field(None, description="Accepted and ignored: tasks come newest first.")


def _task(run: Run) -> dict[str, Any]:
    out: dict[str, Any] = {"id": run.id, "kind": "agent-run", "runtime": "cli",
                           "status": _TASK_STATUS.get(run.status, "failed"), "agentId": run.agent_id,
                           "sessionKey": run.session_key, "runId": run.id,
                           "title": (run.first.message.strip().splitlines() or [""])[0][:120],
                           "createdAt": int(run.created_at * 1000)}
    if run.started_at is not None:
        out["startedAt"] = int(run.started_at * 1000)
    if run.ended_at is not None:
        out["endedAt"] = int(run.ended_at * 1000)
    if run.error:
        out["error"] = run.error[:2000]
    return out


@method("tasks.list", access=Access("session", "read", ("sessionKey",)), params=TasksListParams, scope=READ)
async def tasks_list(p: TasksListParams, ctx: CallContext) -> dict[str, Any]:
    """The agent runs this replica's queue knows of (running, queued and recent), newest first, as tasks."""
    wanted = {p.status} if isinstance(p.status, str) else set(p.status or [])
    key = ctx.sessions.normalize_key(p.sessionKey) if p.sessionKey else None
    if key is not None:
        await check_visible(ctx, key)
    runs = list(ctx.runs.runs.values()) if ctx.runs is not None else []
    runs = [r for r in runs if not (key and r.session_key != key) and not (p.agentId and r.agent_id != p.agentId)]
    sessions = {k: await ctx.access.session(k, "run") for k in {r.session_key for r in runs}}
    runs = ctx.access.visible(ctx.caller, runs, lambda r: sessions[r.session_key])  # the runs it may read
    tasks = []
    for run in sorted(runs, key=lambda r: r.created_at, reverse=True):
        task = _task(run)
        if wanted and task["status"] not in wanted:
            continue
        tasks.append(task)
    return {"tasks": tasks[: p.limit or 100]}


class SessionKeyParams(Params):
    sessionKey: str = Key
    agentId: str | None = Field(None, min_length=1)


@method("sessions.branches.list", access=Access("session", "read", ("sessionKey", "agentId")),
        params=SessionKeyParams, scope=READ)
async def sessions_branches_list(p: SessionKeyParams, ctx: CallContext) -> dict[str, Any]:
    """Transcript branches: ours are linear (one branch, none to switch to), so the list is empty."""
    await check_visible(ctx, ctx.sessions.normalize_key(p.sessionKey))
    return {"branches": []}


@method("sessions.companion.state", access=Access("session", "read", ("sessionKey", "agentId")),
        params=SessionKeyParams, scope=READ)
async def sessions_companion_state(p: SessionKeyParams, ctx: CallContext) -> dict[str, Any]:
    """The side-chat beside a session: we have none, so no exchanges."""
    await check_visible(ctx, ctx.sessions.normalize_key(p.sessionKey))
    return {"exchanges": []}


class ProgressCardParams(Params):
    sessionKey: str = Key


@method("progressCard.get", access=Access("session", "read", ("sessionKey",)), params=ProgressCardParams, scope=READ)
async def progress_card_get(p: ProgressCardParams, ctx: CallContext) -> dict[str, Any]:
    """A session's progress card: our agents keep none (their progress streams as ``agent`` events)."""
    await check_visible(ctx, ctx.sessions.normalize_key(p.sessionKey))
    return {"card": None}


class ObserverVisibilityParams(Params):
    visible: bool = Field(strict=True)


@method("sessions.observer.visibility", access=Access("gateway", "read"), params=ObserverVisibilityParams, scope=READ)
async def sessions_observer_visibility(_p: ObserverVisibilityParams, _ctx: CallContext) -> dict[str, Any]:
    """Whether the page is in view (OpenClaw then throttles observer digests); we send none, so just ok."""
    return {"ok": True}
