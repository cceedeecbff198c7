"""Plugin methods: ``plugins.list``, ``plugins.setEnabled``, and plugin tools over RPC
(``plugin.tools.list``, ``plugin.tools.invoke``, also under the reference's ``plugin:tools:*`` names).

The bridge hands each run's MCP shim the tool list in a file, so a shim never asks at start; a shim run
standalone asks ``plugin.tools.list``. Both call tools through ``plugin.tools.invoke``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.config.reload import apply_committed
from gateway.protocol import InvalidRequest, Unavailable
from gateway.rpc import ADMIN, READ, WRITE, CallContext, NoParams, Params, method

_ID = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$")


class ToolsListParams(Params):
    agentId: str | None = Field(None, min_length=1, max_length=64)


class InvokeParams(Params):
    toolName: str = Field(min_length=1, max_length=128)
    params: dict[str, Any] = Field(default_factory=dict)
    sessionKey: str | None = Field(None, min_length=1, max_length=512)


class SetEnabledParams(Params):
    id: str = _ID
    enabled: bool


def _manager(ctx: CallContext) -> Any:
    manager = ctx.gateway.plugins
    if manager is None:
        raise Unavailable("plugins did not start on this gateway (see its log)", details={"capability": "plugins"})
    return manager


@method("plugins.list", scope=READ)
async def plugins_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Every plugin found: loaded, disabled, denied, or failed (with its error)."""
    return {"plugins": _manager(ctx).describe()}


@method("plugins.setEnabled", params=SetEnabledParams, scope=ADMIN)
async def plugins_set_enabled(p: SetEnabledParams, ctx: CallContext) -> dict[str, Any]:
    """Switch a plugin on or off: written to config (``plugins.entries.<id>.enabled``) and applied at once."""
    manager = _manager(ctx)
    if p.id not in manager.states:
        known = ", ".join(sorted(manager.states)) or "none"
        raise InvalidRequest(f"invalid plugins.setEnabled params: at /id: no plugin {p.id!r} (found: {known})",
                             details={"field": "id"})
    store = ctx.gateway.config_store
    async with store.lock:
        data, config = store.prepare_patch({"plugins": {"entries": {p.id: {"enabled": p.enabled}}}})
        await apply_committed(ctx.gateway, data, config, source=ctx.method)
    plugin = next(x for x in manager.describe() if x["id"] == p.id)
    return {"ok": plugin["enabled"] == p.enabled, "plugin": plugin}


@method("plugin.tools.list", params=ToolsListParams, scope=READ, aliases=("plugin:tools:list",), baseline=True)
async def tools_list(p: ToolsListParams, ctx: CallContext) -> dict[str, Any]:
    """Tools the loaded plugins offer to agents: ``{tools: [{name, description, inputSchema, annotations}]}``."""
    if ctx.gateway.plugins is None:
        return {"tools": []}
    return ctx.gateway.plugins.tool_listing(p.agentId)


@method("plugin.tools.invoke", params=InvokeParams, scope=WRITE, aliases=("plugin:tools:invoke",), baseline=True)
async def tools_invoke(p: InvokeParams, ctx: CallContext) -> dict[str, Any]:
    """Run one plugin tool; answers ``{content: [text | image], details?}``."""
    result: dict[str, Any] = await _manager(ctx).invoke(p.toolName, p.params, ctx.caller, p.sessionKey)
    return result
