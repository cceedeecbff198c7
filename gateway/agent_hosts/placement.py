"""Where an agent's turns run, and why they cannot run there: one answer for the chat, ``doctor`` and
``remoteclaw nodes``.

An agent with ``node`` set runs on that node only: never silently on the gateway's machine, whose files and
logins are not the ones the owner placed it with. A turn is placed when the node is paired, connected, offers
``agent.run`` and lends the agent's CLI (and its ``workspace`` is in a folder the node lends); the node's own
description (``agent.describe``: its interpreter, its folders, its view of the gateway's address) is read once
per connection.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.devices.store import APPROVED
from gateway.protocol import RpcError

if TYPE_CHECKING:
    from gateway.config import AgentConfig, ProjectConfig
    from gateway.devices.service import NodeService

__all__ = ["Host", "Placement", "Unplaced", "not_lent"]

DESCRIBE_TTL_S = 60.0
DESCRIBE_TIMEOUT_MS = 10_000


class Unplaced(Exception):
    """The turn cannot run on its node now. ``kept``: the node is only away, so the message waits for it."""

    def __init__(self, message: str, *, code: str, kept: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.kept = kept


@dataclass(frozen=True, slots=True)
class Host:
    """The node a turn runs on, and what it said about itself (``agent.describe``)."""

    node_id: str
    name: str
    facts: dict[str, Any]
    takes_input: bool = False
    """The node offers ``agent.input`` (a running turn's stdin) and the policy allows it: steering, and the
    runtimes that talk to their CLI over stdin, can run there."""

    @property
    def gateway_url(self) -> str:
        return str(self.facts.get("gatewayUrl") or "")

    @property
    def http_origin(self) -> str:
        """The gateway's HTTP root as the node reaches it (its model gateway is below it)."""
        url = self.gateway_url.rstrip("/")
        return "https" + url[3:] if url.startswith("wss") else "http" + url[2:] if url.startswith("ws") else url

    def path(self, key: str) -> Path:
        return Path(str(self.facts[key]))


def lends(host: Host, path: str) -> bool:
    """Whether ``path`` is in a folder ``host`` lends (by name: the node checks links itself)."""
    folders = [Path(f) for f in host.facts.get("folders") or []]
    target = Path(path)
    return any(target == f or f in target.parents for f in folders)


def not_lent(agent: AgentConfig, host: Host) -> list[ProjectConfig]:
    """The agent's projects whose folders ``host`` does not lend."""
    return [p for p in agent.projects if not lends(host, p.path)]


class Placement:
    def __init__(self, nodes: NodeService) -> None:
        self._nodes = nodes
        self._facts: dict[str, tuple[float, dict[str, Any]]] = {}

    def forget(self, node_id: str) -> None:
        """The node (re)connected: what it lends may have changed."""
        self._facts.pop(node_id, None)

    async def place(self, agent: AgentConfig) -> Host:
        """The node ``agent``'s turn runs on now, or ``Unplaced`` saying why not (and whether the message waits)."""
        assert agent.node is not None
        node = await self._nodes.store.find(agent.node)
        where = f"agent {agent.id} runs on node {agent.node}"
        if node is None:
            raise Unplaced(f"{where}, which is not a node this gateway knows (remoteclaw nodes lists them)",
                           code="UNKNOWN_NODE")
        name = node["displayName"]
        if node["status"] != APPROVED:
            raise Unplaced(f"{where}, which is not paired (remoteclaw nodes approve {node['requestId']})",
                           code="NODE_NOT_PAIRED")
        live = self._nodes.live_view(node)
        if not live["connected"]:
            raise Unplaced(f"{where}, which is offline", code="NODE_NOT_CONNECTED", kept=True)
        if "agent.run" not in live["commands"]:
            raise Unplaced(f"{where}, which does not offer agent turns: on {name}, lend a CLI "
                           f"(remoteclaw node agents set clis {agent.runtime}={agent.runtime}) and start it with "
                           "remoteclaw node run --agents", code="NODE_NO_AGENTS")
        if "agent.run" not in live["allowedCommands"]:
            raise Unplaced(f"{where}, but the gateway's node policy does not allow agent.run there "
                           "(nodes.denyCommands)", code="COMMAND_NOT_ALLOWED")
        facts = await self._describe(node["nodeId"], name)
        clis = facts.get("clis") or {}
        if agent.runtime not in clis:
            raise Unplaced(f"{where}, which does not lend the {agent.runtime} CLI (it lends: "
                           f"{', '.join(sorted(clis)) or 'none'}; on the node: remoteclaw node agents set clis ...)",
                           code="CLI_NOT_LENT")
        if agent.workspace is not None:
            folders = [Path(f) for f in facts.get("folders") or []]
            ws = Path(agent.workspace)
            if not any(ws == f or f in ws.parents for f in folders):
                raise Unplaced(f"{where}, which does not lend {agent.workspace} (it lends: "
                               f"{', '.join(map(str, folders)) or 'no folders'}; on the node: remoteclaw node agents "
                               "set folders ...)", code="FOLDER_NOT_LENT")
        if facts.get("sandboxProblem"):
            raise Unplaced(f"{where}, which cannot sandbox its turns: {facts['sandboxProblem']}",
                           code="NODE_SANDBOX")
        return Host(node["nodeId"], name, facts, takes_input="agent.input" in live["commands"]
                    and "agent.input" in live["allowedCommands"])

    async def _describe(self, node_id: str, name: str) -> dict[str, Any]:
        cached = self._facts.get(node_id)
        if cached is not None and time.monotonic() - cached[0] < DESCRIBE_TTL_S:
            return cached[1]
        try:
            answer = await self._nodes.invoke(node_id, "agent.describe", {}, timeout_ms=DESCRIBE_TIMEOUT_MS,
                                              idempotency_key=f"agent.describe:{uuid.uuid4().hex}")
        except RpcError as err:
            kept = (err.details or {}).get("code") in ("NODE_NOT_CONNECTED", "NODE_DISCONNECTED",
                                                       "NODE_INVOKE_TIMEOUT", "NODE_NOT_REACHABLE")
            raise Unplaced(f"node {name} did not describe what it lends: {err.message}", code="NODE_DESCRIBE",
                           kept=kept) from None
        facts = answer.get("payload")
        if not isinstance(facts, dict):
            raise Unplaced(f"node {name} answered agent.describe with nothing usable", code="NODE_DESCRIBE")
        self._facts[node_id] = (time.monotonic(), facts)
        return facts

    async def explain(self, agents: list[AgentConfig]) -> list[dict[str, Any]]:
        """For each agent: where its turns run (``gateway`` or a node) and, on a node, whether a turn can be placed
        there now and why not."""
        out = []
        for agent in agents:
            if agent.node is None:
                out.append({"agentId": agent.id, "runsOn": "gateway"})
                continue
            row: dict[str, Any] = {"agentId": agent.id, "runsOn": "node", "node": agent.node,
                                   "runtime": agent.runtime, "workspace": agent.workspace,
                                   "projects": [p.name for p in agent.projects]}
            try:
                host = await self.place(agent)
            except Unplaced as exc:
                row.update(placeable=False, why=exc.message, code=exc.code, waits=exc.kept)
            else:
                row.update(placeable=True, nodeId=host.node_id, nodeName=host.name,
                           credentials=host.facts.get("credentials"), sandbox=host.facts.get("sandbox"))
                unlent = not_lent(agent, host)
                if unlent:  # the agent runs there, but a turn in these projects is refused by the node
                    row["projectsNotLent"] = [{"name": p.name, "path": p.path} for p in unlent]
            out.append(row)
        return out
