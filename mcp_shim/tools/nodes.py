"""Node tools (7, owner only): paired devices, their commands, and pairing requests."""

from __future__ import annotations

from mcp_shim.schema import any_value, integer, obj, string
from mcp_shim.tools._base import Call, Tool, compact, group

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any


def _uuid() -> str:
    import uuid  # imported on first use: listing tools does not need it

    return str(uuid.uuid4())


TOOLS: list[Tool] = []
tool = group("nodes", TOOLS)

NODE_ID = string("The node's id")
_REQUEST_ID = string("The pairing request's id")


async def invoke(call: Call, node_id: str, command: str, params: Any = None, timeout_ms: int | None = None) -> Any:
    """``node.invoke`` with a fresh idempotency key, waiting a little longer than the node may take."""
    wait = max(30.0, (timeout_ms or 0) / 1000 + 5)
    return await call.gateway("node.invoke", compact(nodeId=node_id, command=command, params=params,
                                                     timeoutMs=timeout_ms, idempotencyKey=_uuid()),
                              timeout=wait)


@tool("node_list", "List nodes", "List paired and connected nodes.", obj(), read_only=True)
async def node_list(call: Call, _a: dict[str, Any]) -> Any:
    return await call.gateway("node.list", {})


@tool("node_describe", "Describe a node", "Show one node: platform, capabilities and the commands it accepts.",
      obj({"nodeId": NODE_ID}, ("nodeId",)), read_only=True)
async def node_describe(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("node.describe", {"nodeId": a["nodeId"]})


@tool("node_invoke", "Run a node command", "Run a command on a connected node and return its answer.",
      obj({"nodeId": NODE_ID, "command": string("Command name, e.g. system.run"),
           "params": any_value("The command's parameters"),
           "timeoutMs": integer("How long the node may take, in milliseconds", minimum=1, maximum=600_000)},
          ("nodeId", "command")),
      destructive=True, open_world=True)
async def node_invoke(call: Call, a: dict[str, Any]) -> Any:
    return await invoke(call, a["nodeId"], a["command"], a.get("params"), a.get("timeoutMs"))


@tool("node_rename", "Rename a node", "Change a paired node's display name.",
      obj({"nodeId": NODE_ID, "displayName": string("The new name")}, ("nodeId", "displayName")),
      idempotent=True)
async def node_rename(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("node.rename", {"nodeId": a["nodeId"], "displayName": a["displayName"]})


@tool("node_pair_list", "List pairing requests", "List pending and resolved node pairing requests.", obj(),
      read_only=True)
async def node_pair_list(call: Call, _a: dict[str, Any]) -> Any:
    return await call.gateway("node.pair.list", {})


@tool("node_pair_approve", "Approve a pairing", "Approve a pending node pairing request.",
      obj({"requestId": _REQUEST_ID}, ("requestId",)), idempotent=True)
async def node_pair_approve(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("node.pair.approve", {"requestId": a["requestId"]})


@tool("node_pair_reject", "Reject a pairing", "Reject a pending node pairing request.",
      obj({"requestId": _REQUEST_ID}, ("requestId",)), destructive=True, idempotent=True)
async def node_pair_reject(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("node.pair.reject", {"requestId": a["requestId"]})
