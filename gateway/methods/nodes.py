"""Node methods: ``node.list``, ``node.describe``, ``node.invoke``, ``node.rename`` and pairing
(``node.pair.list``, ``node.pair.approve``, ``node.pair.reject``).

Node hosts (``remoteclaw node run``) are later work; so are the two methods only a node connection
may call, ``node.invoke.result`` and ``node.event``. The methods are declared now with their
params and scopes so callers get a validated request and a clear ``UNAVAILABLE`` answer.
Canvas tools go through ``node.invoke`` too, so they share this answer.
"""

from __future__ import annotations

from typing import Any, NoReturn

from pydantic import Field

from gateway.protocol import Unavailable
from gateway.rpc import NODE, PAIRING, READ, WRITE, CallContext, NoParams, Params, method

MISSING = "nodes are not available on this gateway yet (no node host support)"

_ID = Field(min_length=1, max_length=256)


def _unavailable() -> NoReturn:
    raise Unavailable(MISSING, details={"capability": "nodes"})


class NodeIdParams(Params):
    nodeId: str = _ID


class NodeInvokeParams(NodeIdParams):
    command: str = Field(min_length=1, max_length=200)
    params: Any = None
    timeoutMs: int | None = Field(None, ge=1, le=600_000)
    idempotencyKey: str = Field(min_length=1, max_length=200)


class NodeRenameParams(NodeIdParams):
    displayName: str = Field(min_length=1, max_length=200)


class PairRequestParams(Params):
    requestId: str = _ID


@method("node.list", scope=READ, aliases=("node:list",))
async def node_list(_p: NoParams, _ctx: CallContext) -> dict[str, Any]:
    """Paired and connected nodes."""
    _unavailable()


@method("node.describe", params=NodeIdParams, scope=READ, aliases=("node:describe",))
async def node_describe(_p: NodeIdParams, _ctx: CallContext) -> dict[str, Any]:
    """One node: platform, capabilities, declared commands."""
    _unavailable()


@method("node.invoke", params=NodeInvokeParams, scope=WRITE, idempotent=True, aliases=("node:invoke",))
async def node_invoke(_p: NodeInvokeParams, _ctx: CallContext) -> dict[str, Any]:
    """Run a command on a node and wait for its answer."""
    _unavailable()


@method("node.rename", params=NodeRenameParams, scope=PAIRING, aliases=("node:rename",))
async def node_rename(_p: NodeRenameParams, _ctx: CallContext) -> dict[str, Any]:
    """Change a paired node's display name."""
    _unavailable()


@method("node.pair.list", scope=PAIRING, aliases=("node:pair:list",))
async def node_pair_list(_p: NoParams, _ctx: CallContext) -> dict[str, Any]:
    """Pending and resolved pairing requests."""
    _unavailable()


@method("node.pair.approve", params=PairRequestParams, scope=PAIRING, aliases=("node:pair:approve",))
async def node_pair_approve(_p: PairRequestParams, _ctx: CallContext) -> dict[str, Any]:
    """Approve a pending pairing request."""
    _unavailable()


@method("node.pair.reject", params=PairRequestParams, scope=PAIRING, aliases=("node:pair:reject",))
async def node_pair_reject(_p: PairRequestParams, _ctx: CallContext) -> dict[str, Any]:
    """Reject a pending pairing request."""
    _unavailable()


class InvokeResultParams(Params):
    id: str = _ID
    nodeId: str | None = Field(None, max_length=256)
    ok: bool
    payload: Any = None
    error: dict[str, Any] | None = None


class NodeEventParams(Params):
    event: str = Field(min_length=1, max_length=200)
    payload: Any = None


@method("node.invoke.result", params=InvokeResultParams, scope=NODE)
async def node_invoke_result(_p: InvokeResultParams, _ctx: CallContext) -> dict[str, Any]:
    """A node's answer to a ``node.invoke.request`` event (node connections only)."""
    _unavailable()


@method("node.event", params=NodeEventParams, scope=NODE)
async def node_event(_p: NodeEventParams, _ctx: CallContext) -> dict[str, Any]:
    """An event a node reports to the gateway (node connections only)."""
    _unavailable()
