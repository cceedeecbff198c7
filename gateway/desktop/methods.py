"""The desktop's gateway methods (owner only: scope ``operator.admin``, never baseline).

- ``desktop.tools.list {}``: the ``desktop_*`` agent tools, each with Cua Driver's own schema, and the nodes.
- ``desktop.invoke {tool, arguments?, nodeId?, sessionKey?, timeoutMs?}``: one Cua Driver tool call; answers
  the driver's ``CallToolResult`` (``content`` with text and ``image`` items, ``structuredContent``,
  ``isError``) plus ``nodeId``/``node``.
- ``desktop.record.start {nodeId?, sessionKey?, recordVideo?}`` / ``desktop.record.stop {nodeId?}``: a trajectory.
- ``desktop.trajectories.list {}``, ``desktop.trajectory.get {trajectoryId}``: kept trajectories.
- ``desktop.replay {trajectoryId, nodeId?, pid?, windowId?, delayMs?, stopOnError?}``: each turn's result.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from gateway.access import Access
from gateway.composition.services import Key
from gateway.desktop.service import DesktopService
from gateway.dispatch.dispatcher import ADMIN, CallContext, Params, method
from gateway.protocol import InvalidRequest

__all__ = ["DESKTOP"]

DESKTOP: Key[DesktopService] = Key("desktop")

_NODE = Field(None, min_length=1, max_length=256, description="The desktop node (id, id prefix or name)")
_SESSION = Field(None, min_length=1, max_length=512, description="The agent run's session (for approvals)")


class ListParams(Params):
    pass


class InvokeParams(Params):
    tool: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9_]+$", description="A Cua Driver tool name")
    arguments: dict[str, Any] = Field(default_factory=dict)
    nodeId: str | None = _NODE
    sessionKey: str | None = _SESSION
    timeoutMs: int | None = Field(None, ge=1, le=600_000)


class RecordStartParams(Params):
    nodeId: str | None = _NODE
    sessionKey: str | None = _SESSION
    recordVideo: bool | None = None


class RecordStopParams(Params):
    nodeId: str | None = _NODE


class TrajectoryParams(Params):
    trajectoryId: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")


class ReplayParams(TrajectoryParams):
    nodeId: str | None = _NODE
    sessionKey: str | None = _SESSION
    pid: int | None = Field(None, ge=0, description="Replay on this process (a fresh instance of the app)")
    windowId: int | None = Field(None, ge=0, description="Replay on this window")
    delayMs: int = Field(200, ge=0, le=10_000)
    stopOnError: bool = True


def _service(ctx: CallContext) -> DesktopService:
    return ctx.service(DESKTOP)


@method("desktop.tools.list", access=Access("node", "exec"), params=ListParams, scope=ADMIN)
async def tools_list(_p: ListParams, ctx: CallContext) -> dict[str, Any]:
    """The desktop nodes' tools as agents get them (``desktop_<tool>``, Cua Driver's schema)."""
    service = _service(ctx)
    tools = await service.tool_listing()
    nodes = [{"nodeId": n.node_id, "name": n.name, "tools": len(n.tools), "withheld": n.withheld, "driver": n.driver}
             for n in service.tools.known.values()]
    return {"tools": tools, "nodes": nodes}


@method("desktop.invoke", access=Access("node", "exec"), params=InvokeParams, scope=ADMIN)
async def desktop_invoke(p: InvokeParams, ctx: CallContext) -> dict[str, Any]:
    """Run one Cua Driver tool on a desktop node (an action of an asking agent waits for the person)."""
    return await _service(ctx).invoke(ctx.caller, p.tool, p.arguments, node=p.nodeId, session_key=p.sessionKey,
                                      timeout_ms=p.timeoutMs)


@method("desktop.record.start", access=Access("node", "exec"), params=RecordStartParams, scope=ADMIN)
async def record_start(p: RecordStartParams, ctx: CallContext) -> dict[str, Any]:
    """Start recording a trajectory on a desktop node (Cua Driver's ``start_recording``)."""
    return await _service(ctx).record_start(node=p.nodeId, session_key=p.sessionKey, record_video=p.recordVideo)


@method("desktop.record.stop", access=Access("node", "exec"), params=RecordStopParams, scope=ADMIN)
async def record_stop(p: RecordStopParams, ctx: CallContext) -> dict[str, Any]:
    """Stop recording; the trajectory comes back zipped and is kept (its turns, zip path and page)."""
    saved = await _service(ctx).record_stop(node=p.nodeId)
    return _with_page(ctx, saved)


@method("desktop.trajectories.list", access=Access("node", "exec"), params=ListParams, scope=ADMIN)
async def trajectories_list(_p: ListParams, ctx: CallContext) -> dict[str, Any]:
    """The trajectories kept on this gateway, newest first."""
    return {"trajectories": await asyncio.to_thread(_service(ctx).store.listing)}


@method("desktop.trajectory.get", access=Access("node", "exec"), params=TrajectoryParams, scope=ADMIN)
async def trajectory_get(p: TrajectoryParams, ctx: CallContext) -> dict[str, Any]:
    """One trajectory: its turns, what the agent was asked and which tools it called."""
    meta = await asyncio.to_thread(_service(ctx).store.meta, p.trajectoryId)
    if meta is None:
        raise InvalidRequest(f"trajectoryId: no trajectory {p.trajectoryId!r} is kept on this gateway",
                             details={"field": "trajectoryId"})
    return _with_page(ctx, meta)


@method("desktop.replay", access=Access("node", "exec"), params=ReplayParams, scope=ADMIN)
async def desktop_replay(p: ReplayParams, ctx: CallContext) -> dict[str, Any]:
    """Replay a kept trajectory on a desktop node (Cua Driver's ``replay_trajectory``); each turn's result."""
    return await _service(ctx).replay(p.trajectoryId, node=p.nodeId, pid=p.pid, window_id=p.windowId,
                                      delay_ms=p.delayMs, stop_on_error=p.stopOnError, caller=ctx.caller,
                                      session_key=p.sessionKey)


def _with_page(ctx: CallContext, meta: dict[str, Any]) -> dict[str, Any]:
    from gateway.desktop.web import page_url

    return {**meta, "pageUrl": page_url(ctx.config, meta["viewKey"])}
