"""``node.agent.output`` (a node streams its turn's output) and ``node.agents`` (where the agents run)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.access import Access
from gateway.composition.ports import AGENT_HOSTS
from gateway.dispatch.dispatcher import NODE, READ, CallContext, NoParams, Params, method
from gateway.protocol import Unavailable

MAX_LINES = 1000


class AgentOutputParams(Params):
    turnId: str = Field(min_length=1, max_length=128)
    seq: int = Field(ge=1)
    lines: list[Any] = Field(max_length=MAX_LINES)


def _hosts(ctx: CallContext) -> Any:
    hosts = ctx.services.find(AGENT_HOSTS)
    if hosts is None:
        raise Unavailable("agent turns on nodes are not available on this gateway (the node service did not start)")
    return hosts


@method("node.agent.output", access=Access("node", "write"), params=AgentOutputParams, scope=NODE)
async def node_agent_output(p: AgentOutputParams, ctx: CallContext) -> dict[str, Any]:
    """Output lines of a turn running on the calling node, in order (``seq``): only a turn placed on that node."""
    hosts = _hosts(ctx)
    nodes = hosts.nodes
    nodes.require_paired(nodes.session_for(ctx.caller))
    outcome = hosts.streams.deliver(ctx.access.principal(ctx.caller), p.turnId, p.seq, p.lines)
    return {"ok": outcome != "refused", "outcome": outcome}


@method("node.agents", access=Access("node", "read"), params=NoParams, scope=READ)
async def node_agents(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Where each agent's turns run (the gateway or a node) and, for a node, whether one can be placed now and why
    not; and how many messages wait for each node that is away."""
    hosts = _hosts(ctx)
    agents = await hosts.placement.explain(list(ctx.config.agents.list))
    return {"agents": agents, "waiting": await hosts.parked.waiting()}
