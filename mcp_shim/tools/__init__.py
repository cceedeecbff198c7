"""The built-in tools, one module per group. Importing this costs only dicts and functions."""

from __future__ import annotations

from mcp_shim.tools import a2a, approvals, browser, canvas, cron, gateway, heartbeat, message, nodes, session, tts
from mcp_shim.tools._base import Call, Content, Tool, ToolError
from mcp_shim.tools.outputs import OUTPUT_SCHEMAS

__all__ = ["BASELINE_GROUPS", "BUILTIN", "OWNER_GROUPS", "Call", "Content", "Tool", "ToolError"]

BASELINE_GROUPS = ("session", "message", "heartbeat", "approvals")
"""Every agent gets these (20 tools)."""

OWNER_GROUPS = ("cron", "gateway", "nodes", "canvas", "browser", "tts", "a2a", "desktop")
"""Only runs for the owner get these (34 tools, and the desktop nodes' tools: ``tools.desktop``)."""

BUILTIN: tuple[Tool, ...] = (
    *session.TOOLS, *message.TOOLS, *heartbeat.TOOLS, *approvals.TOOLS,
    *cron.TOOLS, *gateway.TOOLS, *nodes.TOOLS, *canvas.TOOLS, *browser.TOOLS, *tts.TOOLS,
    *a2a.TOOLS,
)

for _tool in BUILTIN:
    _tool.output_schema = OUTPUT_SCHEMAS.get(_tool.name)
