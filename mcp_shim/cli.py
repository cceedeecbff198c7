"""``remoteclaw call <tool> '<json>'`` (``remoteclaw mcp`` itself is the gateway CLI's: it also manages tokens).

``call`` runs one tool through the very path an agent's MCP call takes (same env context, same
validation, hooks, side effects and result shaping), which makes it the quickest way to try a tool
by hand or from a script. It prints the result's text and exits 1 when the result is an error.

``remoteclaw call desktop.<tool> '<json>' [--node N]`` is ``cua-driver call <tool> '<json>'`` on a paired desktop
node: the agents' ``desktop_<tool>`` with the same arguments (``--image-out`` writes the screenshot to a file).
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
    call.add_argument("--node", help="desktop.<tool>: which desktop node (id, id prefix or name)")
    call.add_argument("--image-out", metavar="PATH", help="write the result's first image to PATH (not base64)")
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
    if args.tool.startswith("desktop."):  # Cua Driver's name on a desktop node: the agents' desktop_<tool>
        if not isinstance(arguments, dict):
            print("remoteclaw: a desktop tool's arguments are a JSON object", file=sys.stderr)
            return 2
        args.tool = "desktop_" + args.tool.removeprefix("desktop.")
        if args.node:
            arguments = {**arguments, "nodeId": args.node}

    async def go() -> dict[str, Any]:
        runner = Runner(catalog)
        try:
            if catalog.plugins_from_gateway and args.tool not in catalog.tools:
                await runner.refresh_plugins()
            tool = catalog.tools.get(args.tool)
            if tool is not None and tool.group == "desktop" and args.node:
                # One desktop node: its schema has no nodeId, but naming the node is still allowed here.
                props = dict(tool.input_schema.get("properties") or {})
                props.setdefault("nodeId", {"type": "string"})
                tool.input_schema = {**tool.input_schema, "properties": props}
            return await runner.call(args.tool, arguments)
        finally:
            await runner.close(grace=1.0)

    try:
        result = asyncio.run(go())
    except UnknownTool:
        print(f"remoteclaw: no tool named {args.tool!r} (see: remoteclaw call --list)", file=sys.stderr)
        return 2
    image_out = args.image_out
    for item in result.get("content", []):
        if item.get("type") == "text":
            print(item["text"])
        elif item.get("type") == "image" and image_out:
            import base64
            from pathlib import Path

            Path(image_out).write_bytes(base64.b64decode(item["data"]))
            print(f"[{item.get('mimeType')} written to {image_out}]")
            image_out = None
        else:
            print(orjson.dumps(item, option=orjson.OPT_INDENT_2).decode())
    return 1 if result.get("isError") else 0
