"""``remoteclaw doctor``'s lines about agents placed on nodes: one per agent, asked of the running gateway
(``node.agents``, the answer ``remoteclaw nodes agents`` prints) when it is reachable: whether the node is online
and on which replica, whether a turn can be placed there now and, if not, why. With no gateway to ask, the line
says where the config places the agent, and that the rest is known once the gateway runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.config import AgentConfig, Config

__all__ = ["rows"]

Row = tuple[str, str, str, str | None]

TIMEOUT_S = 8.0
"""A node's ``agent.describe`` may take a few seconds; the rest of doctor does not wait on it longer."""


def _live() -> tuple[dict[str, Any] | None, str]:
    """``node.agents`` from the running gateway, or None and why it could not be asked."""
    from gateway.cli import CliError, call_gateway

    try:
        return call_gateway(None, None, "node.agents", {}, timeout=TIMEOUT_S), ""
    except CliError as exc:
        return None, str(exc)


def _where(agent: AgentConfig) -> str:
    where = agent.workspace or (f"its projects {', '.join(p.name for p in agent.projects)} or a private folder "
                                "per session" if agent.projects else "a private folder per session")
    return f"{agent.runtime}, in {where}"


def _line(agent: AgentConfig, row: dict[str, Any], waiting: dict[str, int]) -> Row:
    name = f"agent {agent.id} (on node {agent.node})"
    held = row.get("connectedTo")
    node = f"node {row.get('nodeName') or agent.node} " + (f"online on {held}" if held else "offline"
                                                           if row.get("nodeId") else "unknown")
    if row.get("placeable"):
        return (name, "ok", f"{node}: a turn can be placed now ({_where(agent)}; credentials: "
                f"{row.get('credentials')}, sandbox: {row.get('sandbox')})", None)
    kept = waiting.get(str(agent.node), 0)
    waits = f"; {kept} message(s) wait for it" if kept else "; messages sent meanwhile wait for it" \
        if row.get("waits") else ""
    fix = f"start the node: remoteclaw node run --agents (on {row.get('nodeName')})" \
        if row.get("code") == "NODE_NOT_CONNECTED" else None  # otherwise the reason says what to change
    return (name, "warn", f"{node}: a turn cannot be placed now: {row.get('why')}{waits}", fix)


def rows(config: Config) -> list[Row]:
    placed = [a for a in config.agents.list if a.node is not None]
    if not placed:
        return []
    live, why = _live()
    if live is None:
        return [(f"agent {a.id} (on node {a.node})", "ok", f"turns run on node {a.node} ({_where(a)}); whether "
                 f"one can be placed now is known once the gateway runs ({why})",
                 "start the gateway, then remoteclaw nodes agents") for a in placed]
    by_id = {r.get("agentId"): r for r in live.get("agents") or []}
    waiting = live.get("waiting") or {}
    out: list[Row] = []
    for agent in placed:
        row = by_id.get(agent.id)
        if row is None or row.get("runsOn") != "node":  # the running gateway has an older config
            out.append((f"agent {agent.id} (on node {agent.node})", "warn", "the running gateway does not place "
                        "this agent on a node: it runs an older config", "restart the gateway"))
            continue
        out.append(_line(agent, row, waiting))
    return out
