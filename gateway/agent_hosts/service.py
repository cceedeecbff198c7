"""The agent-hosts service the executor finds (``ports.AGENT_HOSTS``): placement, output streams, kept messages."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.agent_hosts.environments import node_environments
from gateway.agent_hosts.files import TooLarge, file_from_node, outgoing_limit, renamed_in_prompt, turn_attachments
from gateway.agent_hosts.parked import Parked
from gateway.agent_hosts.placement import Host, Placement, Unplaced, lends
from gateway.agent_hosts.remote import LOST, LOST_CODES, NodePlace, NodeProcess, rebase
from gateway.agent_hosts.streams import TurnStreams
from gateway.projects.workdir import Workdir
from gateway.protocol import RpcError

if TYPE_CHECKING:
    from gateway.bus import EventBus
    from gateway.config import AgentConfig, ConfigStore, ProjectConfig
    from gateway.devices.service import NodeService
    from gateway.dispatch.callers import Caller
    from gateway.runs import RunQueue
    from gateway.sandbox.open_beneath import FileBytes
    from gateway.store import Database

__all__ = ["AgentHosts", "project_block"]

PROJECT_TIMEOUT_MS = 60_000
"""A worktree's first ``git worktree add`` on a large repository takes a while."""


def project_block(project: ProjectConfig, session_key: str) -> dict[str, Any]:
    """What the node is told of a session's project (``agent.project``, ``agent.run``'s ``project``)."""
    return {"path": project.path, "worktrees": project.worktrees, "sessionKey": session_key}


class AgentHosts:
    def __init__(self, nodes: NodeService, bus: EventBus | None, runs: RunQueue, db: Database,
                 config: ConfigStore) -> None:
        self.nodes = nodes
        self._config = config
        self.placement = Placement(nodes)
        self.streams = TurnStreams(bus)
        self.parked = Parked(nodes, runs, db, config)
        nodes.on_connect.append(self._connected)

    LOST = LOST
    LOST_CODES = LOST_CODES
    TooLarge = TooLarge
    NodePlace = NodePlace
    rebase = staticmethod(rebase)
    renamed_in_prompt = staticmethod(renamed_in_prompt)

    def attachments(self, run: Any, node: str) -> list[dict[str, str]]:
        """The run's files for its turn on ``node`` (``files.turn_attachments``; blocking: run in a thread)."""
        return turn_attachments(run, limit=outgoing_limit(self._config), node=node)

    async def read_file(self, caller: Caller, file: str, field: str, max_bytes: int) -> FileBytes:
        """A file a run on a node names, read on that node inside its turn's folder (``files.file_from_node``)."""
        return await file_from_node(self.nodes, self._config, caller, file, field, max_bytes)

    async def try_place(self, agent: AgentConfig) -> tuple[Host | None, str, bool]:
        """``(host, "", False)``, or ``(None, why, kept)``: why the turn cannot run there now, and whether its message
        waits for the node (it is only away)."""
        try:
            return await self.placement.place(agent), "", False
        except Unplaced as exc:
            return None, exc.message, exc.kept

    def process(self, host: Host, *, session_key: str, run_id: str, agent: AgentConfig, logins: tuple[str, ...],
                local_fx: Path, timeout_s: float, attachments: list[dict[str, str]] | None = None,
                workdir: Workdir | None = None, project: ProjectConfig | None = None) -> NodeProcess:
        """What runs the turn on ``host`` (a ``ProcessRunner`` for the driver), with its paths there: the session's
        project folder or worktree there when it has one (the node checks it again, snapshots and diffs it)."""
        place = NodePlace.of(host, session_key=session_key, run_id=run_id,
                             workspace=workdir.path if workdir is not None else agent.workspace)
        block = project_block(project, session_key) if project is not None and workdir is not None else None
        return NodeProcess(self.nodes, self.streams, host, place, run_id=run_id, agent_id=agent.id,
                           runtime=agent.runtime, logins=logins, plugin_tools="", local_fx=local_fx,
                           timeout_s=timeout_s, attachments=attachments or [], project=block)

    async def ask(self, host_ref: str, project: ProjectConfig, session_key: str, action: str,
                  more: dict[str, Any] | None = None) -> dict[str, Any]:
        """The node's answer about the session's project (``agent.project``): ``describe``, ``prepare`` (the
        worktree made on first use), ``uncommitted``, ``sessionDiff`` (``sessions.diff``'s, with ``more``: its
        ``scope`` and ``commit``), ``worktrees``, ``remove``. ``RpcError`` with the node's reason when it refuses
        (a folder not lent)."""
        answer = await self.nodes.invoke(host_ref, "agent.project",
                                         {**(more or {}), "project": project_block(project, session_key),
                                          "action": action},
                                         timeout_ms=PROJECT_TIMEOUT_MS,
                                         idempotency_key=f"agent.project:{uuid.uuid4().hex}")
        got = answer.get("payload")
        return got if isinstance(got, dict) else {}

    async def workdir(self, host_ref: str, project: ProjectConfig, session_key: str, *, create: bool) -> Workdir:
        """Where the session works in ``project`` on the node: the folder or its worktree, made when ``create``."""
        got = await self.ask(host_ref, project, session_key, "prepare" if create else "describe")
        return Workdir(path=Path(str(got.get("path") or project.path)), project=project.name,
                       branch=str(got["branch"]) if got.get("branch") else None, git=bool(got.get("git")),
                       worktree=bool(got.get("worktree")))

    async def describe(self, agent: AgentConfig, name: str | None, session_key: str,
                       action: str = "describe", more: dict[str, Any] | None = None) -> dict[str, Any]:
        """``{project, path, branch}`` of a session of an agent on a node, as the node sees it (with what
        ``action`` asked: ``diff``, ``worktrees``, ``removed``); ``refused``: the node does not lend that folder,
        or git refused (why); ``note``: the node could not be asked now (why)."""
        project = agent.project(name)
        if project is None:
            return {"project": None, "path": None, "branch": None}
        out: dict[str, Any] = {"project": project.name, "path": project.path, "branch": None}
        host, why, _kept = await self.try_place(agent)
        if host is None:
            return {**out, "note": why}
        if not lends(host, project.path):
            folders = ", ".join(host.facts.get("folders") or []) or "no folders"
            return {**out, "refused": f"{project.path} is not in a folder node {host.name} lends (it lends: "
                                      f"{folders}; on the node: remoteclaw node agents set folders ...)"}
        try:
            got = await self.ask(host.node_id, project, session_key, action, more)
        except RpcError as exc:
            key = "refused" if exc.code in ("FORBIDDEN", "INVALID_REQUEST") else "note"
            return {**out, key: exc.message}
        return {**out, **got, "project": project.name, "path": str(got.get("path") or project.path),
                "branch": got.get("branch")}

    async def kept_for(self, node_ref: str, run: Any, why: str, *, mid_turn: bool) -> str:
        """Keep ``run``'s messages for the node's return (unless a turn cut off must not run again); the chat's
        line."""
        return await self.parked.keep(node_ref, run, why, mid_turn=mid_turn)

    async def environments(self, agents: list[AgentConfig]) -> list[dict[str, Any]]:
        """The nodes as ``environments.list`` entries: each paired node and each node an agent is placed on, with
        those agents and whether a turn can be placed there now."""
        return node_environments(await self.nodes.list(), await self.placement.explain(agents))

    def _connected(self, node_id: str) -> None:
        self.placement.forget(node_id)
        self.parked.node_connected(node_id)
