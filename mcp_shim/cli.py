"""``remoteclaw call <tool> '<json>'`` (``remoteclaw mcp`` itself is the gateway CLI's: it also manages tokens).

``call`` runs one tool through the very path an agent's MCP call takes (same env context, same
validation, hooks, side effects and result shaping), which makes it the quickest way to try a tool
by hand or from a script. It prints the result's text and exits 1 when the result is an error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    call = subparsers.add_parser(
        "call", help="call one MCP tool the way an agent would (reads REMOTECLAW_* env)",
        description="Run one MCP tool through the shim's own code path and print its result.",
    )
    call.add_argument("tool", nargs="?", help="tool name, e.g. sessions_list")
    call.add_argument("arguments", nargs="?", default="{}", metavar="JSON", help="the tool's arguments (default {})")
    call.add_argument("--list", action="store_true", help="list the tools this context may use instead")
    call.set_defaults(func=_cmd_call)


def _cmd_call(args: argparse.Namespace) -> int:
    import asyncio

    import orjson

    from mcp_shim.catalog import Catalog
    from mcp_shim.context import Context, ContextError
    from mcp_shim.runner import Runner, UnknownTool

    try:
        catalog = Catalog(Context.from_env())
    except ContextError as exc:
        print(f"remoteclaw: {exc}", file=sys.stderr)
        return 1
    if args.list or not args.tool:
        if catalog.plugins_from_gateway:  # the plugin tools too, when the gateway can be reached

            async def plugins() -> None:
                runner = Runner(catalog)
                try:
                    listed = await runner.fetch_plugins(patient=False)
                    if listed is not None:
                        catalog.set_plugins(listed)
                finally:
                    await runner.close()

            asyncio.run(plugins())
        for tool in catalog.visible():
            print(f"{tool.name:28} {tool.description}")
        return 0
    try:
        arguments = orjson.loads(args.arguments)
    except ValueError as exc:
        print(f"remoteclaw: the arguments are not valid JSON: {exc}", file=sys.stderr)
        return 2

    async def go() -> dict[str, Any]:
        runner = Runner(catalog)
        try:
            if catalog.plugins_from_gateway and args.tool not in catalog.tools:
                await runner.refresh_plugins()
            return await runner.call(args.tool, arguments)
        finally:
            await runner.close(grace=1.0)

    try:
        result = asyncio.run(go())
    except UnknownTool:
        print(f"remoteclaw: no tool named {args.tool!r} (see: remoteclaw call --list)", file=sys.stderr)
        return 2
    for item in result.get("content", []):
        if item.get("type") == "text":
            print(item["text"])
        else:
            print(orjson.dumps(item, option=orjson.OPT_INDENT_2).decode())
    return 1 if result.get("isError") else 0
