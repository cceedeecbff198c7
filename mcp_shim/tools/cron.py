"""Cron tools (7, owner only): inspect and change scheduled jobs."""

from __future__ import annotations

from mcp_shim.schema import free_object, integer, obj, string
from mcp_shim.tools._base import Call, Tool, compact, group

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

TOOLS: list[Tool] = []
tool = group("cron", TOOLS)

_JOB_ID = string("The job's id")


@tool("cron_status", "Scheduler status", "Show the cron scheduler's status: enabled, job count, next wake.", obj(),
      read_only=True)
async def cron_status(call: Call, _a: dict[str, Any]) -> Any:
    return await call.gateway("cron.status", {})


@tool("cron_list", "List cron jobs", "List cron jobs, disabled ones included, optionally filtered by text.",
      obj({"filter": string("Text to match in job names and descriptions")}),
      read_only=True)
async def cron_list(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("cron.list", {"includeDisabled": True, **compact(filter=a.get("filter"))})


@tool("cron_add", "Add a cron job", "Create a cron job; the job object is the gateway's job definition.",
      obj({"job": free_object("The job: name, schedule, what to run and where to deliver")}, ("job",)))
async def cron_add(call: Call, a: dict[str, Any]) -> Any:
    # The job is the gateway call's params as it is, not nested under "job".
    result = await call.gateway("cron.add", a["job"])
    res = result if isinstance(result, dict) else {}
    job = res.get("job")
    job = job if isinstance(job, dict) else {}
    call.side_effects.cron_added(res.get("id") or res.get("jobId") or job.get("id"))
    return result


@tool("cron_update", "Update a cron job", "Change some fields of a cron job.",
      obj({"jobId": _JOB_ID, "patch": free_object("The fields to change")}, ("jobId", "patch")),
      idempotent=True)
async def cron_update(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("cron.update", {"jobId": a["jobId"], "patch": a["patch"]})


@tool("cron_remove", "Remove a cron job", "Delete a cron job for good.", obj({"jobId": _JOB_ID}, ("jobId",)),
      destructive=True, idempotent=True)
async def cron_remove(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("cron.remove", {"jobId": a["jobId"]})


@tool("cron_run", "Run a cron job now", "Run a cron job right away, whether or not it is due.",
      obj({"jobId": _JOB_ID}, ("jobId",)),
      open_world=True)
async def cron_run(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("cron.run", {"jobId": a["jobId"], "mode": "force"})


@tool("cron_runs", "Cron run history", "Show a cron job's past runs, newest first.",
      obj({"jobId": _JOB_ID, "limit": integer("Most runs to return", minimum=1, maximum=1000)}, ("jobId",)),
      read_only=True)
async def cron_runs(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("cron.runs", compact(jobId=a["jobId"], limit=a.get("limit")))
