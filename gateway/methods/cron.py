"""Cron methods: ``cron.status``, ``cron.list``, ``cron.add``, ``cron.update``, ``cron.remove``,
``cron.run``, ``cron.runs``.

The scheduler is later work. The methods are declared now, with their params and scopes, so
clients (the MCP shim's cron tools) get a validated request and a clear ``UNAVAILABLE`` answer
instead of "unknown method" or, worse, a silent success.
"""

from __future__ import annotations

from typing import Any, Literal, NoReturn

from pydantic import ConfigDict, Field

from gateway.protocol import Unavailable
from gateway.rpc import ADMIN, READ, CallContext, NoParams, Params, method

MISSING = "cron is not available on this gateway yet (the scheduler is not built)"

_JOB_ID = Field(min_length=1, max_length=200)


def _unavailable() -> NoReturn:
    raise Unavailable(MISSING, details={"capability": "cron"})


class CronListParams(Params):
    includeDisabled: bool = False
    filter: str | None = Field(None, max_length=500)


class CronAddParams(Params):
    """A job definition; its full shape belongs to the scheduler, so unknown fields pass for now."""

    model_config = ConfigDict(extra="allow")

    name: str | None = Field(None, max_length=200)


class CronUpdateParams(Params):
    jobId: str = _JOB_ID
    patch: dict[str, Any]


class CronJobParams(Params):
    jobId: str = _JOB_ID


class CronRunParams(CronJobParams):
    mode: Literal["force", "due"] = "force"


class CronRunsParams(CronJobParams):
    limit: int | None = Field(None, ge=1, le=1000)


@method("cron.status", scope=READ, aliases=("cron:status",))
async def cron_status(_p: NoParams, _ctx: CallContext) -> dict[str, Any]:
    """Scheduler state: enabled, job count, next wake."""
    _unavailable()


@method("cron.list", params=CronListParams, scope=READ, aliases=("cron:list",))
async def cron_list(_p: CronListParams, _ctx: CallContext) -> dict[str, Any]:
    """Jobs, optionally filtered by text."""
    _unavailable()


@method("cron.add", params=CronAddParams, scope=ADMIN, aliases=("cron:add",))
async def cron_add(_p: CronAddParams, _ctx: CallContext) -> dict[str, Any]:
    """Create a job; answers its ``id``."""
    _unavailable()


@method("cron.update", params=CronUpdateParams, scope=ADMIN, aliases=("cron:update",))
async def cron_update(_p: CronUpdateParams, _ctx: CallContext) -> dict[str, Any]:
    """Patch a job."""
    _unavailable()


@method("cron.remove", params=CronJobParams, scope=ADMIN, aliases=("cron:remove",))
async def cron_remove(_p: CronJobParams, _ctx: CallContext) -> dict[str, Any]:
    """Delete a job and its schedule."""
    _unavailable()


@method("cron.run", params=CronRunParams, scope=ADMIN, aliases=("cron:run",))
async def cron_run(_p: CronRunParams, _ctx: CallContext) -> dict[str, Any]:
    """Fire a job now."""
    _unavailable()


@method("cron.runs", params=CronRunsParams, scope=READ, aliases=("cron:runs",))
async def cron_runs(_p: CronRunsParams, _ctx: CallContext) -> dict[str, Any]:
    """A job's run history, newest first."""
    _unavailable()
