"""Desktop tools (dynamic, owner only): the paired desktop nodes' Cua Driver tools, ``desktop_<tool>``.

Their list comes with the plugin tools (the run's tools file, or ``desktop.tools.list`` when the shim runs
standalone), each with the input schema Cua Driver declares (plus ``nodeId`` when several desktop nodes are
paired). A call goes to the gateway as ``desktop.invoke``, which asks the person first when the run's agent
must ask before acting; the driver's answer comes back as MCP content: its text, and its screenshots as
images.
"""

from __future__ import annotations

from mcp_shim.tools._base import Call, Content, Tool, ToolError

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GROUP", "from_listing", "listing"]

GROUP = "desktop"
WAIT_S = 900.0
"""How long a call may wait on the gateway: an action can wait for the person's approval (600 s by default)."""


async def listing(gateway: Any) -> Any:
    """The desktop tools as the gateway lists them (``desktop.tools.list``), for a standalone owner run's shim."""
    desktop = await gateway("desktop.tools.list", {}, timeout=30)
    return desktop.get("tools") if isinstance(desktop, dict) else None


def _content(result: Any) -> Content:
    """The driver's ``CallToolResult`` as MCP content: text and images as they came; the node named first."""
    out = Content()
    items = result.get("content") if isinstance(result, dict) else None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "image" and isinstance(item.get("data"), str):
            out.append({"type": "image", "data": item["data"], "mimeType": item.get("mimeType") or "image/png"})
        elif item.get("type") == "text" and isinstance(item.get("text"), str):
            out.append({"type": "text", "text": item["text"]})
    if not out:
        out.append({"type": "text", "text": "(the driver answered without content)"})
    return out


def _tool(name: str, tool: str, description: str, schema: dict[str, Any], annotations: dict[str, Any]) -> Tool:
    async def handler(call: Call, args: dict[str, Any]) -> Any:
        arguments = {k: v for k, v in args.items() if k != "nodeId"}
        params: dict[str, Any] = {"tool": tool, "arguments": arguments, "sessionKey": call.ctx.session_key}
        if isinstance(args.get("nodeId"), str):
            params["nodeId"] = args["nodeId"]
        result = await call.gateway("desktop.invoke", params, timeout=WAIT_S)
        content = _content(result)
        if isinstance(result, dict) and result.get("isError"):
            raise ToolError(" ".join(c["text"] for c in content if c.get("type") == "text"))
        return content

    read_only = annotations.get("readOnlyHint") is True
    return Tool(name, GROUP, name, description, schema, handler, read_only=read_only,
                destructive=not read_only and annotations.get("destructiveHint") is not False,
                idempotent=annotations.get("idempotentHint") is True,
                open_world=annotations.get("openWorldHint") is not False, owner_only=True)


def from_listing(entries: Any, taken: set[str]) -> tuple[list[Tool], list[str]]:
    """Tools from the gateway's desktop listing ``[{name, tool, description, inputSchema, annotations}]``."""
    tools: list[Tool] = []
    warnings: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        name = entry.get("name") if isinstance(entry, dict) else None
        tool = entry.get("tool") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not isinstance(tool, str) or not name.startswith("desktop_"):
            warnings.append(f"skipped a desktop tool with an invalid name: {name!r}")
            continue
        if name in taken:
            warnings.append(f"skipped desktop tool {name!r}: the name is already taken")
            continue
        schema = entry.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            schema = {"type": "object", "additionalProperties": True}
        annotations = entry.get("annotations") if isinstance(entry.get("annotations"), dict) else {}
        taken.add(name)
        tools.append(_tool(name, tool, str(entry.get("description") or name), schema, annotations))
    return tools, warnings
