"""Plugin tools (dynamic): tools the gateway's plugins offer, called through ``plugin.tools.invoke``.

Their list comes from a manifest file the executor writes (``REMOTECLAW_PLUGIN_TOOLS_FILE``, read at
start, no network) or, when the shim runs standalone, from ``plugin.tools.list`` on the gateway.
"""

from __future__ import annotations

import re

from mcp_shim.tools._base import Call, Content, Tool

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

__all__ = ["from_manifest"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _content(result: Any, structured: bool) -> Any:
    """``plugin.tools.invoke``'s ``{content, details?}`` as MCP content; with ``structured`` (the tool declares
    an ``outputSchema``), an object in ``details`` goes along as ``structuredContent``. Not otherwise: clients
    such as Claude Code then show the model ``structuredContent`` instead of the text, and ``details`` is the
    plugin's side data, not its answer."""
    items = result.get("content") if isinstance(result, dict) else None
    if not isinstance(items, list):
        return result
    out = Content()
    details = result.get("details")
    if structured and isinstance(details, dict):
        out.structured = details
    for item in items:
        if isinstance(item, dict) and item.get("type") == "image" and isinstance(item.get("data"), str):
            out.append({"type": "image", "data": item["data"], "mimeType": item.get("mimeType") or "image/png"})
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            out.append({"type": "text", "text": item["text"]})
        else:
            from gateway.protocol import encode

            out.append({"type": "text", "text": encode(item)})
    return out


def _hint(annotations: Any, key: str, default: bool) -> bool:
    value = annotations.get(key) if isinstance(annotations, dict) else None
    return value if isinstance(value, bool) else default


def _plugin_tool(name: str, description: str, schema: dict[str, Any], annotations: Any, owner: bool,
                 output_schema: dict[str, Any] | None) -> Tool:
    async def handler(call: Call, args: dict[str, Any]) -> Any:
        result = await call.gateway("plugin.tools.invoke",
                                    {"toolName": name, "params": args, "sessionKey": call.ctx.session_key})
        return _content(result, output_schema is not None)

    # The plugin says what its tool does; what it does not say is assumed the worst (MCP's own defaults).
    read_only = _hint(annotations, "readOnlyHint", False)
    tool = Tool(name, "plugin", name, description, schema, handler, read_only=read_only,
                destructive=not read_only and _hint(annotations, "destructiveHint", True),
                idempotent=_hint(annotations, "idempotentHint", False),
                open_world=_hint(annotations, "openWorldHint", True), owner_only=owner)
    tool.output_schema = output_schema
    return tool


def from_manifest(data: Any, taken: set[str]) -> tuple[list[Tool], list[str]]:
    """Tools from ``{tools: [{name, description, inputSchema, outputSchema?, annotations?, owner?}]}``, and a
    warning per entry skipped."""
    tools: list[Tool] = []
    warnings: list[str] = []
    entries = data.get("tools") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return tools, ["plugin tools manifest has no 'tools' list"]
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not _NAME.match(name):
            warnings.append(f"skipped a plugin tool with an invalid name: {name!r}")
            continue
        if name in taken:
            warnings.append(f"skipped plugin tool {name!r}: the name is already taken")
            continue
        schema = entry.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            # Clients drop tools whose schema is not an object; an open object keeps the tool usable.
            schema = {"type": "object", "additionalProperties": True}
        output = entry.get("outputSchema")
        if output is not None and not (isinstance(output, dict) and output.get("type") == "object"):
            warnings.append(f"plugin tool {name!r}: ignored its outputSchema (not a schema of type object)")
            output = None
        taken.add(name)
        tools.append(_plugin_tool(name, str(entry.get("description") or name), schema, entry.get("annotations"),
                                  entry.get("owner") is True, output))
    return tools, warnings
