"""Gateway tools (5, owner only): restart, and read or change the config.

Config writes are guarded by the config hash: the tool reads the current hash and passes it as
``baseHash``, so a change made meanwhile by someone else is refused rather than overwritten.
"""

from __future__ import annotations

from mcp_shim.schema import free_object, obj, string
from mcp_shim.tools._base import Call, Tool, group

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

TOOLS: list[Tool] = []
tool = group("gateway", TOOLS)


@tool("gateway_restart", "Restart the gateway",
      "Restart the gateway in place; running agent turns are interrupted and clients reconnect.", obj(),
      destructive=True)
async def gateway_restart(call: Call, _a: dict[str, Any]) -> Any:
    return await call.gateway("gateway.restart", {"reason": f"requested by an agent ({call.ctx.session_key})"})


@tool("gateway_config_get", "Read the config", "Read the gateway config (secrets redacted), or one dotted key.",
      obj({"key": string("Dotted key, e.g. agents.default")}),
      read_only=True)
async def gateway_config_get(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("config.get", {"key": a["key"]} if a.get("key") else {})


async def _base_hash(call: Call) -> str:
    current = await call.gateway("config.get", {})
    return str(current["hash"])


@tool("gateway_config_apply", "Replace the config",
      "Replace the whole gateway config with a new one (validated first).",
      obj({"config": free_object("The complete new config")}, ("config",)),
      destructive=True, idempotent=True)
async def gateway_config_apply(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("config.apply", {"config": a["config"], "baseHash": await _base_hash(call)})


@tool("gateway_config_patch", "Patch the config",
      "Change part of the gateway config with a JSON merge patch (null removes a key).",
      obj({"patches": free_object("The merge patch, e.g. {\"logging\": {\"level\": \"debug\"}}")}, ("patches",)),
      destructive=True, idempotent=True)
async def gateway_config_patch(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("config.patch", {"patch": a["patches"], "baseHash": await _base_hash(call)})


@tool("gateway_config_schema", "Config schema", "Show the JSON Schema of the gateway config.", obj(),
      read_only=True)
async def gateway_config_schema(call: Call, _a: dict[str, Any]) -> Any:
    return await call.gateway("config.schema", {})
