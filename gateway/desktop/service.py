"""The desktop capability's service: calls to a node's Cua Driver, their approvals, and trajectories.

``invoke`` sends one Cua Driver tool call to a desktop node as ``desktop.<tool>``. A call from an agent run
(a caller with a run token) whose agent asks before acting (``permissions`` ``ask`` or ``ask-dangerous``,
docs/approvals.md) waits for the person when the tool changes the desktop (Cua Driver does not declare it
``readOnlyHint``); a deny comes back as a refusal naming who denied. Inspection never asks.

A recording (``record_start``/``record_stop``) is Cua Driver's own, on the node; while it runs the gateway
journals each desktop call and the run's tool calls (``after_tool_call``), and files them beside the
recording when it arrives (``trajectories.py``). ``replay`` sends a kept recording back to a node.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from gateway.desktop.tools import LISTING_FRESH_S, TOOL_PREFIX, DesktopTools
from gateway.desktop.trajectories import TrajectoryStore
from gateway.protocol import Forbidden, InvalidRequest, RpcError, Unavailable

if TYPE_CHECKING:
    from gateway.composition.ports import ToolApprover
    from gateway.composition.services import Services
    from gateway.config import ConfigStore
    from gateway.devices.service import NodeService
    from gateway.dispatch.callers import Caller
    from gateway.runs import RunQueue
    from gateway.sessions.service import SessionsService
    from gateway.store import Database

__all__ = ["ASKING_MODES", "DesktopService", "Recording"]

log = structlog.get_logger("gateway.desktop")

ASKING_MODES = ("ask", "ask-dangerous")
DEFAULT_TIMEOUT_MS = 60_000
NODE_MARGIN_MS = 5_000
RECORD_TIMEOUT_MS = 120_000
JOURNAL_LIMIT = 500
ASKED_LIMIT = 5
RUN_LISTING_WAIT_S = 3.0
"""How long a run's start waits for a desktop node that has not listed its tools yet."""


@dataclass(slots=True)
class Recording:
    trajectory_id: str
    node_id: str
    node_name: str
    session_key: str | None
    started_ms: int
    run_id: str | None = None
    """The agent run of ``session_key`` going on when the recording started (its side effects are kept)."""
    desktop_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def _summary(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    texts = [c.get("text") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "text"]
    return " ".join(t for t in texts if isinstance(t, str))[:300]


class DesktopService:
    """Everything the desktop methods, tools and the ``/record`` command do."""

    def __init__(self, nodes: NodeService, config: ConfigStore, db: Database, sessions: SessionsService,
                 services: Services, store: TrajectoryStore, runs: RunQueue | None = None) -> None:
        self.nodes = nodes
        self._runs = runs
        self.tools = DesktopTools(nodes)
        self._config = config
        self._db = db
        self._sessions = sessions
        self._services = services
        self.store = store
        self.recordings: dict[str, Recording] = {}
        """Recordings running, by node id."""

    # -- agent tools ---------------------------------------------------------------------------

    async def tool_listing(self, *, is_owner: bool = True) -> list[dict[str, Any]]:
        """The ``desktop_*`` tools of a run (owner runs only: they act on the owner's computer)."""
        if not is_owner:
            return []
        return await self.tools.listing(wait_s=RUN_LISTING_WAIT_S, fresh_s=LISTING_FRESH_S)

    def _permissions(self, session_key: str | None) -> tuple[str, str]:
        """The agent behind a run's call and its permission mode."""
        agent_id = None
        if session_key:
            from gateway.sessions.service import parse_key

            try:
                agent_id = parse_key(self._sessions.normalize_key(session_key))[0]
            except RpcError:
                agent_id = None
        agent = self._sessions.agent(agent_id)
        return agent.id, agent.permissions

    async def _approve(self, caller: Caller, node_name: str, tool: str, arguments: dict[str, Any],
                       session_key: str | None) -> dict[str, Any] | None:
        """Ask the person about a desktop action of an agent run that must ask; the outcome, or None (no ask)."""
        if caller.reach is None:  # not an agent run: the owner's own client or CLI
            return None
        agent_id, mode = self._permissions(session_key)
        if mode not in ASKING_MODES:
            return None
        from gateway.composition.ports import TOOL_APPROVALS

        approver: ToolApprover | None = self._services.find(TOOL_APPROVALS)
        if approver is None:
            raise Unavailable(f"{TOOL_PREFIX}{tool} needs the person's approval (agent {agent_id} asks before "
                              "acting) but the approvals capability is not running", details={"tool": tool})
        if not session_key:
            raise InvalidRequest("sessionKey: a desktop action of an agent that asks needs the run's sessionKey",
                                 details={"field": "sessionKey"})
        outcome = await approver.ask_and_wait(agent_id, session_key, f"{TOOL_PREFIX}{tool}",
                                              {**arguments, "node": node_name})
        if outcome.get("status") != "allowed":
            who = outcome.get("resolvedBy")
            reason = outcome.get("reason")
            how = f"denied by {who}" if who and outcome.get("status") == "denied" else (
                "nobody decided in time" if reason == "timeout" else f"not allowed ({outcome.get('status')})")
            raise Forbidden(f"refused: the person did not allow {TOOL_PREFIX}{tool} on {node_name} ({how})",
                            details={"code": "DESKTOP_ACTION_DENIED", "tool": tool, "decision": outcome.get("decision"),
                                     "resolvedBy": who, "reason": reason})
        return outcome

    async def invoke(self, caller: Caller, tool: str, arguments: dict[str, Any], *, node: str | None,
                     session_key: str | None, timeout_ms: int | None) -> dict[str, Any]:
        """One Cua Driver tool call on a desktop node; the driver's ``CallToolResult`` and the node."""
        target = await self.tools.target(node, tool)
        read_only = self.tools.read_only(target.node_id, tool)
        approval = None if read_only else await self._approve(caller, target.name, tool, arguments, session_key)
        timeout = timeout_ms or DEFAULT_TIMEOUT_MS
        started = time.perf_counter()
        answer = await self.nodes.invoke(target.node_id, f"desktop.{tool}", arguments,
                                         timeout_ms=timeout + NODE_MARGIN_MS, idempotency_key=uuid.uuid4().hex)
        result = answer.get("payload")
        if not isinstance(result, dict):
            raise Unavailable(f"desktop node {target.name} answered {tool} without a result",
                              details={"nodeId": target.node_id})
        recording = self.recordings.get(target.node_id)
        if recording is not None and len(recording.desktop_calls) < JOURNAL_LIMIT:
            recording.desktop_calls.append({
                "tool": tool, "arguments": arguments, "readOnly": read_only, "isError": bool(result.get("isError")),
                "summary": _summary(result), "durationMs": round((time.perf_counter() - started) * 1000, 1),
                "approval": {k: approval.get(k) for k in ("decision", "resolvedBy")} if approval else None,
                "sessionKey": session_key, "atMs": int(time.time() * 1000)})
        return {**result, "nodeId": target.node_id, "node": target.name}

    # -- trajectories --------------------------------------------------------------------------

    async def record_start(self, *, node: str | None, session_key: str | None,
                           record_video: bool | None) -> dict[str, Any]:
        target = await self.tools.target(node)
        if target.node_id in self.recordings:
            running = self.recordings[target.node_id]
            raise InvalidRequest(f"a recording is already running on {target.name} ({running.trajectory_id}): stop "
                                 "it first",
                                 details={"code": "RECORDING_RUNNING", "trajectoryId": running.trajectory_id})
        params: dict[str, Any] = {}
        if record_video is not None:
            params["recordVideo"] = record_video
        answer = await self.nodes.invoke(target.node_id, "desktop.record.start", params, timeout_ms=RECORD_TIMEOUT_MS,
                                         idempotency_key=uuid.uuid4().hex)
        payload = answer.get("payload") or {}
        trajectory_id = str(payload.get("trajectoryId") or "")
        run_id = None
        if session_key and self._runs is not None:
            active = self._runs.lane_state(session_key).get("active")
            run_id = str(active) if active else None
        self.recordings[target.node_id] = Recording(trajectory_id, target.node_id, target.name, session_key,
                                                    int(payload.get("startedAtMs") or time.time() * 1000), run_id)
        log.info("desktop recording started", node_id=target.node_id, trajectory_id=trajectory_id)
        return {"trajectoryId": trajectory_id, "nodeId": target.node_id, "node": target.name,
                "video": payload.get("video", False), "recording": True}

    async def record_stop(self, *, node: str | None) -> dict[str, Any]:
        if node is None and len(self.recordings) == 1:
            node_id = next(iter(self.recordings))
        else:
            node_id = (await self.tools.target(node)).node_id
        recording = self.recordings.get(node_id)
        try:
            answer = await self.nodes.invoke(node_id, "desktop.record.stop", {}, timeout_ms=RECORD_TIMEOUT_MS,
                                             idempotency_key=uuid.uuid4().hex)
        except RpcError as err:
            if err.code == "INVALID_REQUEST":  # the node records nothing (it restarted): forget ours too
                self.recordings.pop(node_id, None)
            raise
        self.recordings.pop(node_id, None)
        payload = answer.get("payload") or {}
        try:
            data = base64.b64decode(str(payload.get("zipBase64") or ""), validate=True)
        except (binascii.Error, ValueError):
            raise Unavailable("the desktop node sent a recording that is not base64", details={"nodeId": node_id}) \
                from None
        trajectory_id = str(payload.get("trajectoryId") or (recording.trajectory_id if recording else ""))
        meta: dict[str, Any] = {
            "nodeId": node_id, "nodeName": recording.node_name if recording else node_id,
            "sessionKey": recording.session_key if recording else None,
            "startedAtMs": payload.get("startedAtMs"), "stoppedAtMs": payload.get("stoppedAtMs"),
            "notes": payload.get("notes") or [], "nodeFolder": payload.get("nodeFolder"),
            "asked": await self._asked(recording.session_key) if recording and recording.session_key else [],
            "toolCalls": recording.tool_calls if recording else [],
            "runId": recording.run_id if recording else None,
            "sideEffects": await asyncio.to_thread(self._side_effects, recording.run_id) if recording else [],
            "desktopCalls": recording.desktop_calls if recording else []}
        try:
            saved = await asyncio.to_thread(self.store.save, trajectory_id, data, meta)
        except (ValueError, OSError) as exc:
            raise Unavailable(f"the recording could not be kept: {exc}", details={"nodeId": node_id}) from None
        except Exception as exc:  # a corrupt zip
            raise Unavailable(f"the recording could not be read: {exc}", details={"nodeId": node_id}) from None
        log.info("desktop recording kept", node_id=node_id, trajectory_id=trajectory_id, turns=len(saved["turns"]))
        return saved

    def _side_effects(self, run_id: str | None) -> list[dict[str, Any]]:
        """The side-effect records the run's shim has written so far (messages sent, cron jobs added)."""
        if not run_id:
            return []
        from gateway.agents.workspace import read_effects, runs_folder

        return read_effects(runs_folder(self.store.state_dir) / f"{run_id}.side-effects.ndjson")

    async def _asked(self, session_key: str) -> list[dict[str, Any]]:
        """What the agent was asked: the session's last messages from people."""
        from gateway.sessions.store import SessionRepo

        try:
            async with self._db.session() as s:
                entries = await SessionRepo.history(s, session_key, 50)
        except Exception:
            log.exception("could not read the session's messages for a trajectory", session_key=session_key)
            return []
        rows = [e.to_dict() for e in entries]
        asked = [{"text": r.get("text"), "at": r.get("createdAt") or r.get("ts")} for r in rows
                 if r.get("role") == "user"]
        return asked[-ASKED_LIMIT:]

    def observe_tool_call(self, event: dict[str, Any]) -> None:
        """``after_tool_call``: the run's tool calls, kept for the recordings of its session."""
        for recording in self.recordings.values():
            if recording.session_key and event.get("sessionKey") != recording.session_key:
                continue
            if len(recording.tool_calls) < JOURNAL_LIMIT:
                params = event.get("params")
                recording.tool_calls.append({
                    "toolName": event.get("toolName"), "params": params if isinstance(params, dict) else {},
                    "durationMs": event.get("durationMs"), "error": event.get("error"),
                    "atMs": int(time.time() * 1000)})

    async def replay(self, trajectory_id: str, *, node: str | None, pid: int | None, window_id: int | None,
                     delay_ms: int, stop_on_error: bool, caller: Caller, session_key: str | None) -> dict[str, Any]:
        meta = self.store.meta(trajectory_id)
        if meta is None:
            raise InvalidRequest(f"trajectoryId: no trajectory {trajectory_id!r} is kept on this gateway",
                                 details={"field": "trajectoryId"})
        target = await self.tools.target(node or meta.get("nodeId"), "replay_trajectory")
        await self._approve(caller, target.name, "replay_trajectory", {"trajectoryId": trajectory_id},
                            session_key)
        zipped = await asyncio.to_thread(self.store.zip_path, trajectory_id)
        if zipped is None:
            raise InvalidRequest(f"trajectoryId: the recording of {trajectory_id!r} is no longer kept",
                                 details={"field": "trajectoryId"})
        data = await asyncio.to_thread(zipped.read_bytes)
        params: dict[str, Any] = {"zipBase64": base64.b64encode(data).decode(), "delayMs": delay_ms,
                                  "stopOnError": stop_on_error}
        if pid is not None:
            params["pid"] = pid
        if window_id is not None:
            params["windowId"] = window_id
        answer = await self.nodes.invoke(target.node_id, "desktop.replay", params, timeout_ms=RECORD_TIMEOUT_MS * 5,
                                         idempotency_key=uuid.uuid4().hex)
        result = answer.get("payload") or {}
        structured = result.get("structuredContent") if isinstance(result, dict) else None
        report = structured if isinstance(structured, dict) else {}
        out = {"trajectoryId": trajectory_id, "nodeId": target.node_id, "node": target.name,
               "retargetedTurns": result.get("retargetedTurns"), "isError": bool(result.get("isError")),
               "summary": _summary(result), "attempted": report.get("attempted"), "succeeded": report.get("succeeded"),
               "failed": report.get("failed"), "turns": report.get("turns") or []}
        replays = [*(meta.get("replays") or []), {k: out[k] for k in ("nodeId", "attempted", "succeeded", "failed")}
                   | {"atMs": int(time.time() * 1000)}]
        await asyncio.to_thread(self.store.update, trajectory_id, replays=replays[-20:])
        return out
