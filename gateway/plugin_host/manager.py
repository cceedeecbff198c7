"""The plugin manager: finds plugins, loads the enabled ones, and keeps the loaded set in step with config.

The plugins capability's ``start(host)`` builds it (``gateway.plugin_host``). It loads before the chat platforms start,
so a plugin's channel type is there when the channels look for theirs. A config change to the ``plugins`` section is
applied live: plugins switched off (or denied) are unloaded, plugins switched on are loaded, and a plugin whose settings
changed is loaded again with the new ones. A plugin that fails anywhere (its manifest, its config, its
import, its ``register``, a service's start) is listed with the error and skipped; the gateway goes on.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

# jsonschema is imported only by gateway.plugin_host.schemas, when a check runs (none for the bundled plugins).
import orjson
import structlog
from pydantic import BaseModel, ConfigDict
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Router

from gateway.access import Access
from gateway.composition.entry_points import CHANNELS
from gateway.composition.ports import PLUGIN_TOOLS
from gateway.composition.services import Key
from gateway.config import model as config_model
from gateway.dispatch.dispatcher import ADMIN, PAIRING, READ, CallContext, Caller, MethodSpec, registry
from gateway.hooks.runner import HookHandler
from gateway.plugin_host.api import PluginApi, PluginMethod, PluginTool, ToolContext, whose_for
from gateway.plugin_host.discovery import Candidate, discover
from gateway.plugin_host.schemas import SchemaValidator
from gateway.protocol import Forbidden, InvalidRequest, RpcError, Unavailable
from gateway.redaction import schema_secret_paths

if TYPE_CHECKING:
    from collections.abc import Callable

    from starlette.types import Receive, Scope, Send

    from gateway.composition.callable_types import MethodCall
    from gateway.composition.hosts import CapabilityHost
    from gateway.config import Config, ConfigStore
    from gateway.hooks.runner import HookRunner
    from gateway.sessions.service import SessionsService
    from gateway.store import Database

__all__ = ["LOAD_TIMEOUT_S", "PLUGINS", "PluginManager", "ToolFailed", "start"]

log = structlog.get_logger("gateway.plugin_host")

LOAD_TIMEOUT_S = 30.0
"""Longest a plugin's ``register`` or one service's start may take before the plugin counts as failed."""


class ToolFailed(Exception):
    """Raised by a plugin tool to refuse or fail with a message the agent should read as it is."""


class OpenParams(BaseModel):
    """Params of a plugin method: any object; the plugin's JSON Schema checks it (``SchemaValidator``)."""

    model_config = ConfigDict(extra="allow")


@dataclass(slots=True)
class PluginState:
    """One plugin found, and where it stands."""

    candidate: Candidate
    status: str = "disabled"
    """``loaded``, ``disabled`` (config or its default), ``denied`` (allow/deny), ``error``."""
    error: str | None = None
    api: PluginApi | None = None
    config_sig: bytes = b""


class PluginHttp:
    """``/plugins/<id>/...``: hands each request to the routes of plugin ``<id>`` while it is loaded."""

    def __init__(self, manager: PluginManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.routing import get_route_path

        plugin_id, _, _ = get_route_path(scope).lstrip("/").partition("/")
        router = self.manager.routers.get(plugin_id)
        if router is None:
            if scope["type"] == "http":
                await PlainTextResponse(f"no loaded plugin {plugin_id!r} serves this path", 404)(scope, receive, send)
            return
        child = dict(scope)
        child["root_path"] = scope.get("root_path", "") + "/" + plugin_id
        await router(child, receive, send)


class PluginManager:
    """Every plugin found, the loaded ones' tools and routes, and loading/unloading them."""

    def __init__(self, config: ConfigStore, db: Database, state_dir: Path, hooks: HookRunner,
                 sessions: SessionsService, call: MethodCall, restart_reason: Callable[[], str | None]) -> None:
        self.config_store = config
        self.db = db
        self.state_dir = state_dir
        self.hooks = hooks
        self._sessions = sessions
        self._call = call
        """Calls a gateway method in process (``call_as_plugin``)."""
        self._restart_reason = restart_reason
        self.states: dict[str, PluginState] = {}
        self.tools: dict[str, PluginTool] = {}
        self.routers: dict[str, Router] = {}
        self._lock = asyncio.Lock()

    # -- what is wanted --------------------------------------------------------------------------

    @staticmethod
    def _wanted(cand: Candidate, config: Config) -> tuple[bool, str]:
        cfg = config.plugins
        if not cfg.enabled:
            return False, "disabled"
        if cand.id in cfg.deny or (cfg.allow and cand.id not in cfg.allow):
            return False, "denied"
        entry = cfg.entries.get(cand.id)
        enabled = entry.enabled if entry is not None and entry.enabled is not None else cand.default_enabled
        return enabled, "disabled"

    @staticmethod
    def _settings(cand: Candidate, config: Config) -> dict[str, Any]:
        entry = config.plugins.entries.get(cand.id)
        return dict(entry.config) if entry is not None else {}

    def config_problems(self, config: Config) -> list[dict[str, str]]:
        """Each plugin's settings checked against its schema (a ``gateway.config`` check)."""
        problems = []
        for plugin_id, entry in config.plugins.entries.items():
            state = self.states.get(plugin_id)
            manifest = state.candidate.manifest if state else None
            if manifest is None:
                continue
            problem = SchemaValidator(manifest.configSchema).problem(entry.config)
            if problem:
                where, _, message = problem.partition(": ")
                problems.append({"path": f"/plugins/entries/{plugin_id}/config{where[3:].rstrip('/')}",
                                 "message": message})
        return problems

    # -- reconciling -----------------------------------------------------------------------------

    async def reconcile(self) -> None:
        """Load what config wants loaded and unload the rest (also after the plugin folders changed)."""
        async with self._lock:
            config = self.config_store.config
            base = Path(self.config_store.path).parent
            found: dict[str, Candidate] = {}
            duplicates: list[Candidate] = []
            for cand in await asyncio.to_thread(discover, config.plugins.load.paths, base):
                if cand.id not in found:
                    found[cand.id] = cand
                elif cand.source.startswith("path:") and found[cand.id].source.startswith("entry-point:"):
                    duplicates.append(found[cand.id])  # a folder in config wins over the installed package
                    found[cand.id] = cand
                else:
                    duplicates.append(cand)
            for plugin_id in [p for p in self.states if p not in found]:
                await self._unload(self.states.pop(plugin_id))
            for plugin_id, cand in found.items():
                state = self.states.get(plugin_id)
                if state is None:
                    state = self.states[plugin_id] = PluginState(cand)
                wanted, why_not = self._wanted(cand, config)
                settings = self._settings(cand, config)
                sig = orjson.dumps(settings, option=orjson.OPT_SORT_KEYS) + cand.source.encode()
                if state.status == "loaded" and (not wanted or sig != state.config_sig):
                    await self._unload(state)
                state.candidate = cand
                if state.status == "loaded":
                    continue
                if not wanted:
                    state.status, state.error = why_not, None
                elif state.status == "error" and sig == state.config_sig and cand.error == state.error:
                    continue  # failed with these very settings: not again on every unrelated change
                else:
                    state.config_sig = sig
                    await self._load(state, settings)
            for dup in duplicates:
                log.warning("plugin id found twice, one is skipped", plugin=dup.id, skipped=dup.source,
                            kept=found[dup.id].source)
            self._secret_paths()

    def _secret_paths(self) -> None:
        config_model.extra_secret_paths.clear()
        for plugin_id, state in self.states.items():
            if state.candidate.manifest is not None:
                for path in schema_secret_paths(state.candidate.manifest.configSchema):
                    config_model.extra_secret_paths.add(("plugins", "entries", plugin_id, "config", *path))

    async def _load(self, state: PluginState, settings: dict[str, Any]) -> None:
        cand = state.candidate
        try:
            if cand.manifest is None:
                raise RuntimeError(cand.error or "no manifest")
            # A bundled plugin with no settings needs no check: the test suite checks that its schema takes {}.
            problem = (SchemaValidator(cand.manifest.configSchema).problem(settings)
                       if settings or not cand.bundled else None)
            if problem:
                raise RuntimeError(f"invalid config plugins.entries.{cand.id}.config: {problem}")
            register = cand.load_register()
            api = PluginApi(self, cand.manifest, settings, bundled=cand.bundled)
            result = register(api)
            if inspect.isawaitable(result):
                await asyncio.wait_for(result, LOAD_TIMEOUT_S)
            self._check(api)
        except Exception as exc:
            state.status, state.error, state.api = "error", _describe(exc), None
            log.warning("plugin not loaded", plugin=cand.id, source=cand.source, error=state.error)
            return
        state.api = api
        self._commit(api)
        state.status, state.error = "loaded", None
        for service in api.registration.services:
            try:
                await asyncio.wait_for(service.start(), LOAD_TIMEOUT_S)
            except Exception as exc:
                await self._unload(state)
                state.status, state.error = "error", f"service {service.name} did not start: {_describe(exc)}"
                log.warning("plugin not loaded", plugin=cand.id, error=state.error)
                return
        reg = api.registration
        log.info("plugin loaded", plugin=cand.id, version=cand.manifest.version if cand.manifest else None,
                 source=cand.source, tools=len(reg.tools), methods=len(reg.methods), hooks=len(reg.hooks))

    def _check(self, api: PluginApi) -> None:
        """Refuse a registration that clashes with what exists (nothing is committed then)."""
        from mcp_shim.tools import BUILTIN

        builtin = {t.name for t in BUILTIN}
        names: set[str] = set()
        for tool in api.registration.tools:
            owner = self.tools.get(tool.name)
            if tool.name in builtin or tool.name in names or owner is not None:
                by = f"plugin {owner.plugin_id}" if owner else "a built-in tool"
                raise RuntimeError(f"tool name {tool.name!r} is already taken by {by}")
            names.add(tool.name)
        for m in api.registration.methods:
            if registry.declares(m.name):
                raise RuntimeError(f"method {m.name!r} already exists")
        for name in api.registration.channels:
            if name in CHANNELS:
                raise RuntimeError(f"channel type {name!r} already exists")

    def _commit(self, api: PluginApi) -> None:
        reg = api.registration
        for tool in reg.tools:
            self.tools[tool.name] = tool
        for m in reg.methods:
            registry.add(MethodSpec(name=m.name, params=OpenParams, scope=m.scope, handler=_method_handler(m),
                                    access=(plugin_access(m.scope),), description=m.description))
        for hook, fn, priority, timeout_s in reg.hooks:
            self.hooks.add(HookHandler(api.id, hook, fn, priority, timeout_s))
        for name, channel_type in reg.channels.items():
            CHANNELS.register(name, channel_type)
        if reg.routes:
            self.routers[api.id] = Router(routes=list(reg.routes))

    async def _unload(self, state: PluginState) -> None:
        api = state.api
        state.api = None
        if state.status == "loaded":
            state.status = "disabled"
        if api is None:
            return
        reg = api.registration
        for service in reversed(reg.services):
            if service.stop is not None:
                try:
                    await asyncio.wait_for(service.stop(), LOAD_TIMEOUT_S)
                except Exception:
                    log.exception("plugin service did not stop cleanly", plugin=api.id, service=service.name)
        for tool in reg.tools:
            if self.tools.get(tool.name) is tool:
                del self.tools[tool.name]
        for m in reg.methods:
            registry.remove(m.name)
        self.hooks.remove_plugin(api.id)
        for name in reg.channels:
            CHANNELS.unregister(name)
        self.routers.pop(api.id, None)
        log.info("plugin unloaded", plugin=api.id)

    async def stop(self) -> None:
        self.hooks.fire("gateway_stop", {"reason": self._restart_reason() or "stop"})
        await self.hooks.drain(2.0)
        async with self._lock:
            for state in list(self.states.values()):
                await self._unload(state)
        if self.config_problems in config_model.extra_checks:
            config_model.extra_checks.remove(self.config_problems)

    # -- what operators and agents see -----------------------------------------------------------

    def describe(self) -> list[dict[str, Any]]:
        """``plugins.list``: every plugin found, loaded or not, with what it adds or why it is not loaded."""
        out = []
        for plugin_id, state in sorted(self.states.items()):
            m = state.candidate.manifest
            entry: dict[str, Any] = {
                "id": plugin_id, "name": m.name if m else plugin_id, "version": m.version if m else None,
                "description": m.description if m else "", "source": state.candidate.source,
                "status": state.status, "enabled": state.status == "loaded",
            }
            if state.error:
                entry["error"] = state.error
            if state.api is not None:
                reg = state.api.registration
                entry.update(tools=[t.name for t in reg.tools], methods=[x.name for x in reg.methods],
                             hooks=sorted({h[0] for h in reg.hooks}), services=[s.name for s in reg.services],
                             channels=sorted(reg.channels), httpPath=f"/plugins/{plugin_id}" if reg.routes else None)
            out.append(entry)
        return out

    def tool_listing(self, agent_id: str | None = None) -> dict[str, Any]:
        """``plugin.tools.list``, also written for each run's shim: the tools, and whether the shim must wait
        for ``before_tool_call`` (only when a plugin can block or rewrite calls)."""
        tools = [t.listing() for t in self.tools.values()
                 if agent_id is None or t.agents is None or agent_id in t.agents]
        out: dict[str, Any] = {"tools": tools}
        if self.hooks.has("before_tool_call"):
            out["hooks"] = ["before_tool_call"]
        return out

    async def invoke(self, name: str, params: dict[str, Any], caller: Caller, session_key: str | None) -> Any:
        """Run plugin tool ``name`` for ``caller``; returns ``{content: [...], details?}``."""
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none loaded"
            raise InvalidRequest(f"invalid plugin.tools.invoke params: at /toolName: no plugin tool named {name!r} "
                                 f"(plugin tools: {known})", details={"field": "toolName"})
        is_owner = caller.methods is None
        if tool.owner_only and not is_owner:
            raise Forbidden(f"{name} is only for the bot's owner", details={"code": "RUN_TIER_FORBIDDEN"})
        if caller.confined_to is not None:  # a non-owner run acts for its own session, whatever it says
            session_key = caller.confined_to.session_key
        sessions = self._sessions
        agent_id = sessions.default_agent_id
        if session_key:
            from gateway.sessions.service import parse_key

            agent_id = parse_key(sessions.normalize_key(session_key))[0]
        if tool.agents is not None and agent_id not in tool.agents:
            raise Forbidden(f"{name} is not offered to agent {agent_id!r}")
        problem = tool.validator.problem(params) if tool.validator is not None else None
        if problem:
            raise InvalidRequest(f"invalid params for {name}: {problem}", details={"field": "params"})
        try:
            result = await asyncio.wait_for(tool.handler(
                params, ToolContext(session_key, agent_id, is_owner, whose_for(caller, session_key))),
                                            tool.timeout_s)
        except ToolFailed as exc:
            raise InvalidRequest(f"{name}: {exc}") from None
        except RpcError:
            raise
        except TimeoutError:
            raise Unavailable(f"plugin tool {name} took longer than {tool.timeout_s:g} s", retryable=True) from None
        except Exception as exc:
            log.exception("plugin tool failed", plugin=tool.plugin_id, tool=name)
            raise Unavailable(f"plugin tool {name} failed: {_describe(exc)}") from None
        return _tool_result(result)

    async def call_as_plugin(self, plugin_id: str, method: str, params: dict[str, Any] | None) -> Any:
        caller = Caller(conn_id=f"plugin:{plugin_id}", role="operator", scopes=frozenset({ADMIN, PAIRING}),
                        client_id=f"plugin:{plugin_id}", client_mode="backend", remote="in-process")
        return await self._call(method, params, caller)

    def extend_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The config JSON Schema with each known plugin's settings schema under its entry."""
        entries = schema.get("$defs", {}).get("PluginsConfig", {}).get("properties", {}).get("entries")
        if isinstance(entries, dict):
            props = entries.setdefault("properties", {})
            for plugin_id, state in sorted(self.states.items()):
                m = state.candidate.manifest
                if m is not None:
                    props[plugin_id] = {
                        "description": f"{m.name} {m.version}: {m.description}".strip(),
                        "type": "object", "additionalProperties": False,
                        "properties": {"enabled": {"type": ["boolean", "null"]}, "config": m.configSchema},
                    }
        return schema


def _describe(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return f"took longer than {LOAD_TIMEOUT_S:g} s"
    text = str(exc)
    if isinstance(exc, RuntimeError | ValueError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def plugin_access(scope: str) -> Access:
    """What a plugin's method acts on: the plugin itself, read or changed as its scope says (a plugin acting
    on sessions or people answers only what its caller may see, through the tool context it is given)."""
    return Access("plugin", "read" if scope == READ else "admin" if scope == ADMIN else "write")


def _method_handler(m: PluginMethod) -> Any:
    validator = SchemaValidator(m.params_schema) if m.params_schema else None

    async def handler(params: OpenParams, ctx: CallContext) -> Any:
        data = dict(params.model_extra or {})
        problem = validator.problem(data) if validator else None
        if problem:
            raise InvalidRequest(f"invalid {m.name} params: {problem}", details={"method": m.name})
        try:
            return await m.handler(data, ctx)
        except ToolFailed as exc:
            raise InvalidRequest(f"{m.name}: {exc}") from None

    return handler


def _tool_result(result: Any) -> dict[str, Any]:
    """A plugin tool's return value as ``{content: [...], details?}``: text and image items, the rest JSON."""
    if isinstance(result, str):
        return {"content": [{"type": "text", "text": result}]}
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        content = []
        for item in result["content"]:
            if isinstance(item, dict) and item.get("type") == "image" and isinstance(item.get("data"), str):
                content.append({"type": "image", "data": item["data"],
                                "mimeType": str(item.get("mimeType") or "image/png")})
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                content.append({"type": "text", "text": item["text"]})
            else:
                content.append({"type": "text", "text": orjson.dumps(item, default=str).decode()})
        out: dict[str, Any] = {"content": content}
        if "details" in result:
            out["details"] = result["details"]
        return out
    text = orjson.dumps(result, default=str, option=orjson.OPT_INDENT_2).decode()
    return {"content": [{"type": "text", "text": text}], "details": result}


PLUGINS: Key[PluginManager] = Key("plugins")


async def start(host: CapabilityHost) -> None:
    """Capability entry: find and load the plugins; the agents see their tools as
    ``gateway.composition.ports.PLUGIN_TOOLS``."""
    manager = PluginManager(host.config_store, host.db, host.state_dir, host.hooks, host.sessions, host.call,
                            host.restart_reason)
    host.services.provide(PLUGINS, manager)
    host.services.provide(PLUGIN_TOOLS, manager)
    host.add_route(Mount("/plugins", app=PluginHttp(manager)))
    config_model.extra_checks.append(manager.config_problems)

    async def on_change(_old: Config, _new: Config, changed: frozenset[str]) -> None:
        if "plugins" in changed:
            await manager.reconcile()

    host.on_config_change(on_change)
    host.on_stop(manager.stop)
    try:
        await manager.reconcile()
    except Exception:  # discovery itself broke (a corrupt environment): run without plugins
        log.exception("plugins could not be loaded")
