"""What a tool is, and what its handler gets to work with.

A tool is a name, an input schema (a plain dict), honest MCP annotations and an ``async`` handler.
The handler receives a ``Call`` (the run's context, the gateway, the side-effects file) and the
already validated arguments, and returns the gateway's payload (shown as pretty JSON) or a
``Content`` list (for images). Raising ``ToolError`` or a gateway ``RpcError`` becomes an
``isError`` result; nothing a handler raises reaches the MCP transport.

Plain slotted classes, not dataclasses, and no runtime ``typing``: this module is on the path to
answering ``tools/list`` and those imports would cost more than the whole tool table.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import Any

    from mcp_shim.context import Context
    from mcp_shim.side_effects import SideEffects

    GatewayCall = Callable[..., Awaitable[Any]]
    Handler = Callable[["Call", dict[str, Any]], Awaitable[Any]]

__all__ = ["Call", "Content", "Tool", "ToolError", "compact", "group"]


class ToolError(Exception):
    """A failure to report to the model as it is (no gateway code to add)."""


class Content(list):  # type: ignore[type-arg]
    """Ready-made MCP content items (``{"type": "image", ...}``), returned as they are; ``structured``, when
    set, goes along as the result's ``structuredContent``."""

    structured: dict[str, Any] | None = None


class Call:
    """One tool call's view of the world."""

    __slots__ = ("ctx", "gateway", "side_effects", "tool")

    def __init__(self, tool: str, ctx: Context, gateway: GatewayCall, side_effects: SideEffects) -> None:
        self.tool = tool
        self.ctx = ctx
        self.gateway = gateway
        self.side_effects = side_effects


class Tool:
    """One MCP tool: its listing (schema, annotations) and its handler."""

    __slots__ = ("description", "destructive", "group", "handler", "idempotent", "input_schema", "name",
                 "open_world", "output_schema", "owner_only", "read_only", "title")

    def __init__(self, name: str, group: str, title: str, description: str, input_schema: dict[str, Any],
                 handler: Handler, *, read_only: bool = False, destructive: bool = False,
                 idempotent: bool = False, open_world: bool = False, owner_only: bool = False) -> None:
        if read_only and destructive:
            raise ValueError(f"{name}: a read-only tool cannot be destructive")
        self.name = name
        self.group = group
        self.title = title
        self.description = description
        self.input_schema = input_schema
        self.handler = handler
        self.read_only = read_only
        self.destructive = destructive
        self.idempotent = idempotent or read_only
        self.open_world = open_world
        self.owner_only = owner_only
        """Only for owner runs, whatever its group (a plugin tool registered with ``owner=True``)."""
        self.output_schema: dict[str, Any] | None = None
        """The shape of its ``structuredContent`` when the answer is always one (``tools.outputs``)."""

    def __repr__(self) -> str:
        return f"Tool({self.name!r}, group={self.group!r})"

    def listing(self) -> dict[str, Any]:
        """The entry for ``tools/list``. Every hint is spelled out: MCP's defaults assume the worst."""
        entry: dict[str, Any] = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": self.open_world,
            },
        }
        if self.output_schema is not None:
            entry["outputSchema"] = self.output_schema
        return entry


def group(name: str, into: list[Tool]) -> Callable[..., Callable[[Handler], Handler]]:
    """A decorator factory that declares the tools of one group beside their handlers."""

    def tool(tool_name: str, title: str, description: str, schema: dict[str, Any], **hints: bool
             ) -> Callable[[Handler], Handler]:
        def deco(fn: Handler) -> Handler:
            into.append(Tool(tool_name, name, title, description, schema, fn, **hints))
            return fn

        return deco

    return tool


def compact(**fields: Any) -> dict[str, Any]:
    """The given fields without the ``None`` ones (optional arguments the model left out)."""
    return {k: v for k, v in fields.items() if v is not None}
