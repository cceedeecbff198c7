"""Plugin tools over RPC: ``plugin.tools.list`` and ``plugin.tools.invoke``.

The MCP shim, run standalone, asks ``plugin.tools.list`` which extra tools to offer and sends their
calls to ``plugin.tools.invoke``. Until the plugin API exists the list is honestly empty and an
invoke is ``UNAVAILABLE``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.protocol import Unavailable
from gateway.rpc import READ, WRITE, CallContext, NoParams, Params, method

MISSING = "plugin tools are not available on this gateway yet (no plugins loaded)"


class InvokeParams(Params):
    toolName: str = Field(min_length=1, max_length=128)
    params: dict[str, Any] = Field(default_factory=dict)
    sessionKey: str | None = Field(None, min_length=1, max_length=512)


@method("plugin.tools.list", scope=READ, aliases=("plugin:tools:list",), baseline=True)
async def tools_list(_p: NoParams, _ctx: CallContext) -> dict[str, Any]:
    """Tools the loaded plugins offer to agents: ``{tools: [{name, description, inputSchema}]}``."""
    return {"tools": []}


@method("plugin.tools.invoke", params=InvokeParams, scope=WRITE, aliases=("plugin:tools:invoke",), baseline=True)
async def tools_invoke(p: InvokeParams, _ctx: CallContext) -> dict[str, Any]:
    """Run one plugin tool; answers MCP-style ``{content: [...]}``."""
    raise Unavailable(f"{MISSING}: no plugin tool named '{p.toolName}'", details={"capability": "plugins"})
