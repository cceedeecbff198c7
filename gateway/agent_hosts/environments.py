"""The nodes as ``environments.list`` entries (OpenClaw's ``EnvironmentSummary``), so the Control UI's Systems
page shows where agent turns run: each paired node, online or not, and each node an agent is placed on.

OpenClaw's Systems page groups an entry of ``type: "node"`` and id ``node:<nodeId>`` under its nodes (joined to
``node.list``'s row of that id) and shows its ``capabilities`` as chips on the details panel: there each agent
placed on the node gets one, saying whether a turn can be placed now or, in a few words, why not (the full
reason is ``node.agents``' and ``remoteclaw nodes agents``'). ``lastSeenReason`` carries the first reason a turn
cannot be placed. A node an agent names that is not paired (or not known at all) is listed too, as
``unavailable`` (or ``error``): the owner sees the agent that waits for it.
"""

from __future__ import annotations

from typing import Any

from gateway.devices.store import APPROVED

__all__ = ["agent_chip", "node_environments"]

MAX_COMMANDS = 128
"""``invocableCommands``: at most 128, each at most 128 characters (OpenClaw's schema)."""


def agent_chip(row: dict[str, Any]) -> str:
    """One placed agent as a capability chip: ``agent remote: ready`` or ``agent pry: gemini CLI not lent``."""
    return f"agent {row['agentId']}: " + ("ready" if row.get("placeable") else str(row.get("brief") or "cannot run"))


def _summary(node: dict[str, Any], placed: list[dict[str, Any]]) -> dict[str, Any]:
    """One node: ``available`` while connected and paired (a node waiting for approval runs nothing)."""
    out: dict[str, Any] = {
        "id": f"node:{node['nodeId']}", "type": "node", "label": node.get("displayName") or node["nodeId"],
        "status": "available" if node.get("connected") and node.get("status") == APPROVED else "unavailable",
        "sessionHost": False,
        "trust": "persistent",
    }
    if node.get("platform"):
        out["platform"] = node["platform"]
    if isinstance(node.get("lastConnectedAtMs"), int):
        out["lastConnectedAtMs"] = node["lastConnectedAtMs"]
    blocked = [r for r in placed if not r.get("placeable")]
    if blocked:
        out["lastSeenReason"] = str(blocked[0].get("why") or blocked[0].get("brief"))
    caps = sorted({str(c) for c in [*(node.get("caps") or []), *(node.get("commands") or [])] if c})
    chips = [agent_chip(r) for r in placed] + caps
    if chips:
        out["capabilities"] = chips
    commands = sorted({str(c) for c in node.get("allowedCommands") or [] if c and len(str(c)) <= MAX_COMMANDS})
    if node.get("connected") and node.get("status") == APPROVED and commands:
        out["invocableCommands"] = commands[:MAX_COMMANDS]
    return out


def node_environments(nodes: list[dict[str, Any]], placement: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries for ``nodes`` (``node.list``'s rows) given ``placement`` (``Placement.explain``'s rows): every
    paired node, and each other node an agent is placed on (pending, rejected or unknown)."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    unknown: dict[str, list[dict[str, Any]]] = {}
    for row in placement:
        if row.get("runsOn") != "node":
            continue
        if row.get("nodeId"):
            by_node.setdefault(str(row["nodeId"]), []).append(row)
        else:
            unknown.setdefault(str(row["node"]), []).append(row)
    out = [_summary(n, by_node.get(n["nodeId"], [])) for n in nodes
           if n.get("status") == APPROVED or n["nodeId"] in by_node]
    for ref, rows in sorted(unknown.items()):
        out.append({"id": f"node:{ref}", "type": "node", "label": ref, "status": "error", "sessionHost": False,
                    "lastSeenReason": str(rows[0].get("why") or "not a node this gateway knows"),
                    "capabilities": [agent_chip(r) for r in rows]})
    return out
