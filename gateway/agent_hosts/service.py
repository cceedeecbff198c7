"""The agent-hosts service the executor finds (``ports.AGENT_HOSTS``): placement, output streams, kept messages."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.agent_hosts.environments import node_environments
from gateway.agent_hosts.parked import Parked
from gateway.agent_hosts.placement import Host, Placement, Unplaced
from gateway.agent_hosts.remote import LOST, NodePlace, NodeProcess, rebase
from gateway.agent_hosts.streams import TurnStreams

if TYPE_CHECKING:
    from gateway.bus import EventBus
    from gateway.config import AgentConfig, ConfigStore
    from gateway.devices.service import NodeService
    from gateway.runs import RunQueue
    from gateway.store import Database

__all__ = ["AgentHosts"]


class AgentHosts:
    def __init__(self, nodes: NodeService, bus: EventBus | None, runs: RunQueue, db: Database,
                 config: ConfigStore) -> None:
        self.nodes = nodes
        self.placement = Placement(nodes)
        self.streams = TurnStreams(bus)
        self.parked = Parked(nodes, runs, db, config)
        nodes.on_connect.append(self._connected)

    LOST = LOST
    rebase = staticmethod(rebase)

    async def try_place(self, agent: AgentConfig) -> tuple[Host | None, str, bool]:
        """``(host, "", False)``, or ``(None, why, kept)``: why the turn cannot run there now, and whether its message
        waits for the node (it is only away)."""
        try:
            return await self.placement.place(agent), "", False
        except Unplaced as exc:
            return None, exc.message, exc.kept

    def process(self, host: Host, *, session_key: str, run_id: str, agent: AgentConfig, logins: tuple[str, ...],
                local_fx: Path, timeout_s: float) -> NodeProcess:
        """What runs the turn on ``host`` (a ``ProcessRunner`` for the driver), with its paths there."""
        place = NodePlace.of(host, session_key=session_key, run_id=run_id, workspace=agent.workspace)
        return NodeProcess(self.nodes, self.streams, host, place, run_id=run_id, agent_id=agent.id,
                           runtime=agent.runtime, logins=logins, plugin_tools="", local_fx=local_fx,
                           timeout_s=timeout_s)

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
