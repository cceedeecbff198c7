"""Node methods. Operators: ``node.list``, ``node.describe``, ``node.invoke``, ``node.rename`` and pairing
(``node.pair.list|approve|reject|remove``). Nodes (role ``node`` only): ``node.invoke.result``,
``node.event``, ``node.invoke.progress`` and the inventory updates OpenClaw's node host publishes.

A node that is not paired yet may connect (so it can wait for the owner without reconnecting in a loop),
but every node method answers it ``NOT_PAIRED`` until the owner approves it. Approving (which issues the node's
token), rejecting, removing and renaming a node go to the audit log.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from gateway.access import Access
from gateway.devices.service import NodeService
from gateway.devices.store import APPROVED, REJECTED
from gateway.dispatch.dispatcher import NODE, PAIRING, READ, WRITE, CallContext, NoParams, Params, method
from gateway.protocol import Forbidden, Unavailable

_ID = Field(min_length=1, max_length=256)


def _nodes(ctx: CallContext) -> NodeService:
    service = ctx.nodes
    if service is None:
        raise Unavailable("nodes are not available on this gateway (the node service did not start)")
    return service


class NodeIdParams(Params):
    nodeId: str = Field(min_length=1, max_length=256, description="The node's id, id prefix, or display name.")


class NodeInvokeParams(NodeIdParams):
    command: str = Field(min_length=1, max_length=200, description="e.g. system.run")
    params: Any = None
    timeoutMs: int | None = Field(None, ge=1, le=600_000)
    idempotencyKey: str = Field(min_length=1, max_length=200)


class NodeRenameParams(NodeIdParams):
    displayName: str = Field(min_length=1, max_length=200)


class PairRequestParams(Params):
    requestId: str = _ID


@method("node.list", access=Access("node", "read"), scope=READ, aliases=("node:list",))
async def node_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Paired, pending and rejected nodes, with whether each is connected and what it may be asked to run."""
    import time

    return {"ts": int(time.time() * 1000), "nodes": await _nodes(ctx).list()}


@method("node.describe", access=Access("node", "read"), params=NodeIdParams, scope=READ, aliases=("node:describe",))
async def node_describe(p: NodeIdParams, ctx: CallContext) -> dict[str, Any]:
    """One node: platform, capabilities, declared and allowed commands, its latest events."""
    return await _nodes(ctx).describe(p.nodeId)


@method("node.invoke", access=Access("node", "exec"), params=NodeInvokeParams, scope=WRITE, aliases=("node:invoke",))
async def node_invoke(p: NodeInvokeParams, ctx: CallContext) -> dict[str, Any]:
    """Run a command on a node and wait for its answer (a repeated idempotencyKey gets the first answer)."""
    if p.command.startswith("desktop.") and ctx.caller.reach is not None:
        # An agent run acts on the desktop through desktop.invoke, which asks the person when its agent must.
        raise Forbidden(f"command: an agent run calls {p.command} through the desktop_* tools (desktop.invoke), "
                        "not node.invoke", details={"code": "USE_DESKTOP_TOOLS", "field": "command"})
    if p.command.startswith("agent."):
        # An agent turn is placed on a node by its agent's config and built by the executor (its token, its
        # sandbox, the node's checks), never sent as a bare command.
        raise Forbidden(f"command: {p.command} is sent by the gateway for an agent placed on the node "
                        "(agents.list[].node), not through node.invoke",
                        details={"code": "USE_AGENT_PLACEMENT", "field": "command"})
    return await _nodes(ctx).invoke(p.nodeId, p.command, p.params, timeout_ms=p.timeoutMs,
                                    idempotency_key=p.idempotencyKey)


@method("node.rename", access=Access("pairing", "admin"),
        params=NodeRenameParams, scope=PAIRING, aliases=("node:rename",))
async def node_rename(p: NodeRenameParams, ctx: CallContext) -> dict[str, Any]:
    """Give a node the owner's own name (kept when the node reconnects with another)."""
    node = await _nodes(ctx).rename(p.nodeId, p.displayName.strip())
    await ctx.audit("node.rename", f"node:{node['nodeId']}", {"displayName": node.get("displayName")})
    return node


@method("node.pair.list", access=Access("pairing", "admin"), scope=PAIRING, aliases=("node:pair:list",))
async def node_pair_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Pending pairing requests, and the paired and rejected nodes."""
    return await _nodes(ctx).pairing_list()


@method("node.pair.approve", access=Access("pairing", "admin"),
        params=PairRequestParams, scope=PAIRING, aliases=("node:pair:approve",))
async def node_pair_approve(p: PairRequestParams, ctx: CallContext) -> dict[str, Any]:
    """Approve a pending (or rejected) request: the node may take invocations and gets its node token."""
    node = await _nodes(ctx).resolve(p.requestId, APPROVED)
    await ctx.audit("node.approve", f"node:{node['nodeId']}", {"requestId": p.requestId, **_named(node)})
    return {"requestId": p.requestId, "decision": "approved", "node": node}


@method("node.pair.reject", access=Access("pairing", "admin"),
        params=PairRequestParams, scope=PAIRING, aliases=("node:pair:reject",))
async def node_pair_reject(p: PairRequestParams, ctx: CallContext) -> dict[str, Any]:
    """Reject a request (or unpair a node): it is disconnected and refused until approved."""
    node = await _nodes(ctx).resolve(p.requestId, REJECTED)
    await ctx.audit("node.reject", f"node:{node['nodeId']}", {"requestId": p.requestId, **_named(node)})
    return {"requestId": p.requestId, "decision": "rejected", "node": node}


@method("node.pair.remove", access=Access("pairing", "admin"),
        params=NodeIdParams, scope=PAIRING, aliases=("node:pair:remove",))
async def node_pair_remove(p: NodeIdParams, ctx: CallContext) -> dict[str, Any]:
    """Forget a node (its pairing and token); it is disconnected and must ask again."""
    removed = await _nodes(ctx).remove(p.nodeId)
    await ctx.audit("node.remove", f"node:{removed['nodeId']}")
    return removed


def _named(node: dict[str, Any]) -> dict[str, Any]:
    """What the audit log keeps of a node it names."""
    return {"displayName": node.get("displayName"), "platform": node.get("platform")}


# -- methods only a node connection calls ------------------------------------------------------


class NodeErrorShape(Params):
    code: str | None = Field(None, max_length=200)
    message: str | None = Field(None, max_length=20_000)


class InvokeResultParams(Params):
    id: str = _ID
    nodeId: str | None = Field(None, max_length=256)
    ok: bool
    payload: Any = None
    payloadJSON: str | None = None
    error: NodeErrorShape | None = None


class NodeEventParams(Params):
    event: str = Field(min_length=1, max_length=200)
    payload: Any = None
    payloadJSON: str | None = None


class OpenParams(BaseModel):
    """Params taken as they come: inventories whose shape is the node's business."""

    model_config = ConfigDict(extra="allow")


@method("node.invoke.result", access=Access("node", "write"), params=InvokeResultParams, scope=NODE)
async def node_invoke_result(p: InvokeResultParams, ctx: CallContext) -> dict[str, Any]:
    """A node's answer to a ``node.invoke.request`` event."""
    nodes = _nodes(ctx)
    session = nodes.session_for(ctx.caller)
    nodes.require_paired(session)
    answer = p.model_dump(exclude_none=True)
    if p.error is not None:
        answer["error"] = p.error.model_dump(exclude_none=True)
    return {"ok": True, "matched": nodes.result(session, p.id, answer)}


@method("node.event", access=Access("node", "write"), params=NodeEventParams, scope=NODE)
async def node_event(p: NodeEventParams, ctx: CallContext) -> dict[str, Any]:
    """An event a node reports (host stats, a finished background job...): kept as its latest, and relayed."""
    nodes = _nodes(ctx)
    session = nodes.session_for(ctx.caller)
    nodes.require_paired(session)
    payload = p.payload
    if payload is None and p.payloadJSON is not None:
        try:
            payload = orjson.loads(p.payloadJSON)
        except orjson.JSONDecodeError:
            payload = p.payloadJSON
    nodes.event(session, p.event, payload)
    return {"ok": True, "event": p.event, "handled": True}


@method("node.invoke.progress", access=Access("node", "write"), params=OpenParams, scope=NODE)
async def node_invoke_progress(_p: OpenParams, ctx: CallContext) -> dict[str, Any]:
    """Progress of a long command; accepted (the caller gets the final answer only)."""
    nodes = _nodes(ctx)
    nodes.require_paired(nodes.session_for(ctx.caller))
    return {"ok": True}


async def _inventory(name: str, p: OpenParams, ctx: CallContext) -> dict[str, Any]:
    nodes = _nodes(ctx)
    session = nodes.session_for(ctx.caller)
    nodes.require_paired(session)
    session.inventory[name] = p.model_dump()
    return {"ok": True}


@method("node.runnerInventory.update", access=Access("node", "write"), params=OpenParams, scope=NODE)
async def node_runner_inventory(p: OpenParams, ctx: CallContext) -> dict[str, Any]:
    """What agent runners the node offers (kept, shown by node.describe)."""
    return await _inventory("runners", p, ctx)


@method("node.skills.update", access=Access("node", "write"), params=OpenParams, scope=NODE)
async def node_skills(p: OpenParams, ctx: CallContext) -> dict[str, Any]:
    """The node's skills (kept, shown by node.describe)."""
    return await _inventory("skills", p, ctx)


@method("node.pluginTools.update", access=Access("node", "write"), params=OpenParams, scope=NODE)
async def node_plugin_tools(p: OpenParams, ctx: CallContext) -> dict[str, Any]:
    """The node's plugin tools (kept, shown by node.describe)."""
    return await _inventory("pluginTools", p, ctx)
