"""The same tool list served by the official ``mcp`` Python SDK's low-level server (benchmark reference).

Usage: ``python bench/mcp/sdk_server.py TOOLS.json``. Every call answers a fixed small JSON text.
"""

from __future__ import annotations

import json
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

with open(sys.argv[1]) as fh:
    TOOLS = [types.Tool.model_validate(t) for t in json.load(fh)]


async def list_tools(_ctx, _params):  # type: ignore[no-untyped-def]
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(_ctx, params):  # type: ignore[no-untyped-def]
    text = json.dumps({"ok": True, "tool": params.name}, indent=2)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def main() -> None:
    server = Server("sdk-reference", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
