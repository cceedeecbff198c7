"""The example plugin: one of everything a plugin can add, small enough to read in two minutes.

- ``example_greet``: a text tool that uses the plugin's config (``greeting``).
- ``example_chart``: a tool whose result is an image (a PNG bar chart drawn here, no library needed).
- ``example.stats``: a gateway method (how often the tools ran).
- ``GET /plugins/example/hello``: an HTTP route.
- ``before_tool_call``: blocks calls whose params mention one of ``blockedWords``.
- ``message_sending``: appends ``signature`` to outgoing chat messages.

Enable it with ``remoteclaw plugins enable example`` (or ``plugins.entries.example.enabled: true``).
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gateway.plugin_host import PluginApi, ToolContext, image, text


def bar_chart_png(values: list[float], height: int = 60, bar: int = 12) -> bytes:
    """A PNG of one dark bar per value (scaled to the largest), on white."""
    top = max(max(values), 1e-9)
    width = bar * len(values) + 2
    rows = []
    for y in range(height):
        row = bytearray([0])  # filter: none
        for x in range(width):
            i, within = divmod(x - 1, bar)
            filled = 0 <= i < len(values) and 0 < within < bar - 1 and height - y <= values[i] / top * height
            row += b"\x20\x40\x80" if filled else b"\xff\xff\xff"
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"".join(rows)))
            + chunk(b"IEND", b""))


def register(api: PluginApi) -> None:
    greeting = api.config.get("greeting", "Hello")
    blocked = [w.lower() for w in api.config.get("blockedWords", [])]
    signature = api.config.get("signature")
    calls = {"example_greet": 0, "example_chart": 0}

    @api.tool("example_greet", "Greet someone by name.",
              {"type": "object", "required": ["name"], "additionalProperties": False,
               "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 100}}},
              annotations={"readOnlyHint": True, "openWorldHint": False})
    async def greet(params: dict[str, Any], ctx: ToolContext) -> Any:
        calls["example_greet"] += 1
        return {"content": [text(f"{greeting}, {params['name']}!")],
                "details": {"agentId": ctx.agent_id, "owner": ctx.is_owner}}

    @api.tool("example_chart", "Draw a bar chart of some numbers; returns the picture.",
              {"type": "object", "required": ["values"], "additionalProperties": False,
               "properties": {"values": {"type": "array", "minItems": 1, "maxItems": 50,
                                         "items": {"type": "number", "minimum": 0}}}},
              annotations={"readOnlyHint": True, "openWorldHint": False})
    async def chart(params: dict[str, Any], _ctx: ToolContext) -> Any:
        calls["example_chart"] += 1
        values = params["values"]
        return {"content": [text(f"bar chart of {len(values)} values"), image(bar_chart_png(values))]}

    @api.method("example.stats", scope="operator.read")
    async def stats(_params: dict[str, Any], _ctx: Any) -> Any:
        """How often this plugin's tools ran since it loaded."""
        return {"calls": calls}

    async def hello(_request: Request) -> JSONResponse:
        return JSONResponse({"plugin": api.id, "greeting": greeting})

    api.route(Route("/hello", hello, methods=["GET"]))

    if blocked:
        @api.on("before_tool_call", priority=10)
        def guard(event: dict[str, Any]) -> dict[str, Any] | None:
            said = json.dumps(event.get("params") or {}).lower()
            for word in blocked:
                if word in said:
                    return {"block": True, "reason": f"the params mention {word!r}, which this gateway forbids"}
            return None

    if signature:
        @api.on("message_sending")
        def sign(event: dict[str, Any]) -> dict[str, Any]:
            return {"content": f"{event['content']}\n\n{signature}"}
