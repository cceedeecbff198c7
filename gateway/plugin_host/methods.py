"""Plugin methods: ``plugins.list``, ``plugins.setEnabled``, and plugin tools over RPC
(``plugin.tools.list``, ``plugin.tools.invoke``, also under the reference's ``plugin:tools:*`` names).

The executor hands each run's MCP shim the tool list in a file, so a shim never asks at start; a shim run
standalone asks ``plugin.tools.list``. Both call tools through ``plugin.tools.invoke``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from gateway.access import Access
from gateway.dispatch.dispatcher import ADMIN, READ, WRITE, CallContext, NoParams, Params, method
from gateway.plugin_host.manager import PLUGINS, PluginManager
from gateway.protocol import InvalidRequest, Unavailable

_OPTIONAL_ID = Field(None, min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$")


class ToolsListParams(Params):
    agentId: str | None = Field(None, min_length=1, max_length=64)


class InvokeParams(Params):
    toolName: str = Field(min_length=1, max_length=128)
    params: dict[str, Any] = Field(default_factory=dict)
    sessionKey: str | None = Field(None, min_length=1, max_length=512)


class SetEnabledParams(Params):
    pluginId: str | None = _OPTIONAL_ID
    id: str | None = _OPTIONAL_ID  # our earlier spelling, still accepted
    enabled: bool
    acknowledgeCapabilities: dict[str, Any] | None = None  # OpenClaw's capability review: nothing to review here

    @model_validator(mode="after")
    def _one_id(self) -> SetEnabledParams:
        if not (self.pluginId or self.id):
            raise ValueError("pluginId: required (the plugin's id; id is accepted too)")
        return self

    @property
    def plugin_id(self) -> str:
        return self.pluginId or self.id or ""


def _manager(ctx: CallContext) -> PluginManager:
    manager = ctx.services.find(PLUGINS)
    if manager is None:
        raise Unavailable("plugins did not start on this gateway (see its log)", details={"capability": "plugins"})
    return manager


def _listing(row: dict[str, Any]) -> dict[str, Any]:
    """One ``plugins.list`` row in OpenClaw's shape (``PluginsListResult.plugins[]``, a closed object)."""
    out: dict[str, Any] = {"id": row["id"], "name": row["name"] or row["id"], "installed": True,
                           "enabled": row["enabled"], "origin": row["source"],
                           "state": "error" if row["status"] == "error" else
                           ("enabled" if row["status"] == "loaded" else "disabled")}
    if row.get("version"):
        out["version"] = row["version"]
    if row.get("description"):
        out["description"] = row["description"]
    if row.get("error"):
        out["error"] = row["error"]
    return out


@method("plugins.list", access=Access("plugin", "read"), scope=READ)
async def plugins_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Every plugin found: loaded, disabled, denied, or failed (with its error).

    ``plugins`` is OpenClaw's closed shape; ``diagnostics`` (which it leaves open) carries ours: ``status``
    (loaded, disabled, denied, error), ``source`` and what a loaded plugin added (tools, methods, hooks...).
    """
    rows = _manager(ctx).describe()
    return {"plugins": [_listing(r) for r in rows], "diagnostics": rows, "mutationAllowed": True}


@method("plugins.setEnabled", access=Access("plugin", "exec"), params=SetEnabledParams, scope=ADMIN)
async def plugins_set_enabled(p: SetEnabledParams, ctx: CallContext) -> dict[str, Any]:
    """Switch a plugin on or off: written to config (``plugins.entries.<id>.enabled``) and applied at once.

    Answers ``{ok: true, plugin, restartRequired: false}`` (``plugin`` as in ``plugins.list``; its
    ``state`` says whether it is running now) and, ours, ``diagnostics`` with the plugin's detailed row.
    """
    manager = _manager(ctx)
    plugin_id = p.plugin_id
    field = "pluginId" if p.pluginId else "id"
    if plugin_id not in manager.states:
        known = ", ".join(sorted(manager.states)) or "none"
        raise InvalidRequest(f"plugins.setEnabled: at /{field}: no plugin {plugin_id!r} (found: {known})",
                             details={"field": field})
    store = ctx.config_store
    async with store.lock:
        data, config = store.prepare_patch({"plugins": {"entries": {plugin_id: {"enabled": p.enabled}}}})
        await ctx.config_changes.apply(data, config, source=ctx.method)
    row = next(x for x in manager.describe() if x["id"] == plugin_id)
    out: dict[str, Any] = {"ok": True, "plugin": _listing(row), "restartRequired": False}
    if row["enabled"] != p.enabled:
        out["warnings"] = [f"plugin {plugin_id} is {row['status']}" + (f": {row['error']}" if row.get("error") else "")]
    return out


@method("plugin.tools.list", access=Access("plugin", "read"),
        params=ToolsListParams, scope=READ, aliases=("plugin:tools:list",), baseline=True)
async def tools_list(p: ToolsListParams, ctx: CallContext) -> dict[str, Any]:
    """Tools the loaded plugins offer to agents: ``{tools: [{name, description, inputSchema, annotations}]}``."""
    manager = ctx.services.find(PLUGINS)
    if manager is None:
        return {"tools": []}
    return manager.tool_listing(p.agentId)


@method("plugin.tools.invoke", access=(Access("plugin", "write"), Access("session", "write", ("sessionKey",))),
        params=InvokeParams, scope=WRITE, aliases=("plugin:tools:invoke",), baseline=True)
async def tools_invoke(p: InvokeParams, ctx: CallContext) -> dict[str, Any]:
    """Run one plugin tool; answers ``{content: [text | image], details?}``."""
    result: dict[str, Any] = await _manager(ctx).invoke(p.toolName, p.params, ctx.caller, p.sessionKey)
    return result
