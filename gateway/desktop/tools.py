"""The desktop nodes' tools as the gateway offers them to agents: read from each node, never written by hand.

A desktop node declares ``desktop.tools`` among its commands; the gateway asks it (when the node says it is
ready, and again whenever a connected desktop node is not known yet) for Cua Driver's tool list: name,
description, input schema and annotations as the driver declared them. Agents get one MCP tool per Cua Driver
tool, ``desktop_<tool>``, with that schema; when more than one desktop node is paired the schema gains a
required ``nodeId``. A node is known by its connection: a reconnect reads its tools again.
"""

from __future__ import annotations

import asyncio
import copy
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from gateway.protocol import InvalidRequest, RpcError, Unavailable

if TYPE_CHECKING:
    from gateway.devices.service import NodeService

__all__ = ["LIST_COMMAND", "TOOL_PREFIX", "DesktopNode", "DesktopTools"]

log = structlog.get_logger("gateway.desktop")

LIST_COMMAND = "desktop.tools"
TOOL_PREFIX = "desktop_"
"""An agent's name for Cua Driver tool ``click`` is ``desktop_click``."""
FETCH_TIMEOUT_MS = 20_000
LISTING_FRESH_S = 5.0
"""How long a run's start trusts the last reading of the node list. A desktop node that connects here is read at
once (its ready event); one that connects to another replica shows in runs started up to this long after."""


@dataclass(slots=True)
class DesktopNode:
    """One desktop node as last read: its tools by name, and those it withholds with the reason."""

    node_id: str
    name: str
    connected_at_ms: int | None
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    withheld: dict[str, str] = field(default_factory=dict)
    driver: dict[str, Any] = field(default_factory=dict)


def _is_desktop(node: dict[str, Any]) -> bool:
    return node.get("status") == "approved" and LIST_COMMAND in (node.get("commands") or [])


class DesktopTools:
    """Which desktop nodes there are, what each offers, and the agents' view of it."""

    def __init__(self, nodes: NodeService) -> None:
        self._nodes = nodes
        self.known: dict[str, DesktopNode] = {}
        self.paired = 0
        self._read_at = -LISTING_FRESH_S
        """How many desktop nodes were paired at the last ``refresh`` (more than one: calls name their node)."""
        self._lock = asyncio.Lock()

    async def desktop_nodes(self) -> list[dict[str, Any]]:
        """Every approved node that declares the desktop (connected or not), from the node service."""
        return [n for n in await self._nodes.list() if _is_desktop(n)]

    async def refresh(self, *, force_node: str | None = None) -> list[DesktopNode]:
        """Read the tools of connected desktop nodes not known at this connection; the known ones."""
        async with self._lock:
            nodes = await self.desktop_nodes()
            for node in nodes:
                node_id = node["nodeId"]
                have = self.known.get(node_id)
                if not node.get("connected"):
                    continue
                if have is not None and have.connected_at_ms == node.get("connectedAtMs") and node_id != force_node:
                    continue
                try:
                    answer = await self._nodes.invoke(node_id, LIST_COMMAND, {}, timeout_ms=FETCH_TIMEOUT_MS,
                                                      idempotency_key=uuid.uuid4().hex)
                except RpcError as err:
                    log.warning("could not read a desktop node's tools", node_id=node_id, error=err.message)
                    continue
                payload = answer.get("payload") if isinstance(answer, dict) else None
                if not isinstance(payload, dict) or not isinstance(payload.get("tools"), list):
                    log.warning("a desktop node answered desktop.tools without a tool list", node_id=node_id)
                    continue
                tools = {t["name"]: t for t in payload["tools"]
                         if isinstance(t, dict) and isinstance(t.get("name"), str)}
                withheld = payload.get("withheld")
                driver = payload.get("driver")
                self.known[node_id] = DesktopNode(
                    node_id, node.get("displayName") or node_id, node.get("connectedAtMs"), tools,
                    {str(k): str(v) for k, v in withheld.items()} if isinstance(withheld, dict) else {},
                    driver if isinstance(driver, dict) else {})
                log.info("desktop node tools read", node_id=node_id, tools=len(tools))
            paired = {n["nodeId"] for n in nodes}
            self.paired, self._read_at = len(paired), time.monotonic()
            for gone in set(self.known) - paired:  # unpaired or removed
                del self.known[gone]
            return [self.known[n["nodeId"]] for n in nodes if n["nodeId"] in self.known]

    async def listing(self, *, wait_s: float | None = None, fresh_s: float = 0.0) -> list[dict[str, Any]]:
        """The agents' ``desktop_*`` tools: each Cua Driver tool any desktop node offers, with its schema.

        ``wait_s`` bounds the reading of nodes not known yet (a run must not wait on a node that does not
        answer); past it the list is made from what is known. ``fresh_s``: a reading of the node list younger
        than this is used as it is (a run's start: reading the nodes at every start cost a tenth of the runs
        per second)."""
        try:
            if time.monotonic() - self._read_at >= fresh_s:
                await asyncio.wait_for(self.refresh(), wait_s)
        except TimeoutError:
            log.warning("desktop nodes did not list their tools in time; using what is known", wait_s=wait_s)
        known = list(self.known.values())
        several = self.paired > 1
        names = ", ".join(f"{n.name} ({n.node_id[:12]})" for n in known)
        out: dict[str, dict[str, Any]] = {}
        for node in known:
            for name, tool in node.tools.items():
                if name in out:
                    out[name]["nodes"].append(node.node_id)
                    continue
                declared = tool.get("inputSchema")
                schema: dict[str, Any] = copy.deepcopy(declared) if isinstance(declared, dict) else {}
                schema.setdefault("type", "object")
                if several:
                    props: dict[str, Any] = schema.setdefault("properties", {})
                    props["nodeId"] = {"type": "string", "description": f"Which desktop node: {names}"}
                    schema["required"] = [*schema.get("required", []), "nodeId"]
                annotations = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
                out[name] = {"name": TOOL_PREFIX + name, "tool": name,
                             "description": str(tool.get("description") or name),
                             "inputSchema": schema, "annotations": annotations, "nodes": [node.node_id]}
        return list(out.values())

    def read_only(self, node_id: str, tool: str) -> bool:
        """Whether Cua Driver declares ``tool`` read-only (its ``readOnlyHint``); unknown counts as not."""
        node = self.known.get(node_id)
        spec = node.tools.get(tool) if node is not None else None
        annotations = spec.get("annotations") if isinstance(spec, dict) else None
        return isinstance(annotations, dict) and annotations.get("readOnlyHint") is True

    async def target(self, wanted: str | None, tool: str | None = None) -> DesktopNode:
        """The desktop node a call goes to (``wanted``: id, id prefix or name), refusing with the reason a
        node cannot take ``tool``."""
        known = await self.refresh()
        nodes = await self.desktop_nodes()
        if wanted:
            found = await self._nodes.store.find(wanted)
            if found is None:
                raise InvalidRequest(f"nodeId: no node is called {wanted}", details={"code": "UNKNOWN_NODE",
                                                                                    "field": "nodeId"})
            match = next((n for n in nodes if n["nodeId"] == found["nodeId"]), None)
            if match is None:
                why = self._why_not_desktop(found["nodeId"])
                raise InvalidRequest(f"nodeId: node {found.get('displayName') or wanted} offers no desktop ({why})",
                                     details={"code": "NOT_A_DESKTOP_NODE", "field": "nodeId",
                                              "nodeId": found["nodeId"]})
        else:
            if not nodes:
                raise Unavailable("no desktop node is paired: run `remoteclaw node run` on a machine with a display "
                                  "and the optional part 'desktop' (pip install 'remoteclaw[desktop]'), then approve "
                                  "it", details={"code": "NO_DESKTOP_NODE", "extra": "desktop"})
            if len(nodes) > 1:
                names = ", ".join(f"{n['displayName']} ({n['nodeId'][:12]})" for n in nodes)
                raise InvalidRequest(f"nodeId: several desktop nodes are paired ({names}); say which",
                                     details={"code": "DESKTOP_NODE_AMBIGUOUS", "field": "nodeId"})
            match = nodes[0]
        if not match.get("connected"):
            raise Unavailable(f"desktop node {match['displayName']} is not connected",
                              details={"code": "NODE_NOT_CONNECTED", "nodeId": match["nodeId"]}, retryable=True)
        node = next((k for k in known if k.node_id == match["nodeId"]), None)
        if node is None:
            raise Unavailable(f"desktop node {match['displayName']} did not say which tools it offers (see the "
                              "gateway log)", details={"code": "DESKTOP_TOOLS_UNKNOWN", "nodeId": match["nodeId"]})
        if tool is not None and tool not in node.tools:
            why = node.withheld.get(tool) or "its Cua Driver has no such tool"
            raise InvalidRequest(f"desktop node {node.name} does not offer {tool}: {why}",
                                 details={"code": "DESKTOP_TOOL_NOT_OFFERED", "nodeId": node.node_id, "tool": tool,
                                          "reason": why})
        return node

    def _why_not_desktop(self, node_id: str) -> str:
        """What a node said about its missing desktop (``capabilities.unavailable``), if anything."""
        session = self._nodes.sessions.get(node_id)
        said = session.events.get("capabilities.unavailable") if session is not None else None
        if isinstance(said, dict):
            groups = said.get("groups")
            if isinstance(groups, dict) and groups.get("desktop.*"):
                return str(groups["desktop.*"])[:400]
        return "it does not declare desktop.tools"
