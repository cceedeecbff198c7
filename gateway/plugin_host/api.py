"""What a plugin's ``register(api)`` gets: one object to add tools, methods, routes, hooks, services and
channels, and the few gateway facts a plugin needs (its config, a data folder, the database, a logger).

Everything a plugin adds is collected first and committed only when ``register`` returns, so a plugin
whose registration fails leaves nothing half-installed; unloading removes all of it again.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

# jsonschema is imported only by gateway.plugin_host.schemas, when a check runs (none for the bundled plugins).
import structlog

from gateway.dispatch.dispatcher import ADMIN, NODE, READ, WRITE
from gateway.hooks.runner import HOOKS
from gateway.plugin_host.schemas import SchemaValidator, schema_error

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from gateway.config import Config, ConfigStore
    from gateway.dispatch.callers import Caller
    from gateway.plugin_host.manifest import PluginManifest
    from gateway.store import Database

__all__ = ["Loader", "PluginApi", "PluginMethod", "PluginService", "PluginTool", "Registration", "ToolContext", "image",
           "text", "whose_for"]

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
METHOD_NAME = re.compile(r"^[a-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$")
SCOPES = frozenset({READ, WRITE, ADMIN})

ToolHandler = Callable[[dict[str, Any], "ToolContext"], Awaitable[Any]]
MethodHandler = Callable[[dict[str, Any], Any], Awaitable[Any]]


def text(value: str) -> dict[str, Any]:
    """A text content item for a tool result."""
    return {"type": "text", "text": value}


def image(data: bytes, mime_type: str = "image/png") -> dict[str, Any]:
    """An image content item for a tool result (the agent sees the picture itself)."""
    return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime_type}


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who a plugin tool runs for: the run's session and agent, whether the owner is behind it, and whose state
    the call acts on (``whose_for``), so a plugin keeps each person's things apart on an agent they share."""

    session_key: str | None
    agent_id: str
    is_owner: bool
    whose: str | None = None


def whose_for(caller: Caller, session_key: str | None) -> str | None:
    """Whom a plugin call acts for: None for the owner (a caller held to no methods and no sessions),
    ``person:<id>`` for a person on record (their runs, their sign-in), ``session:<key>`` for the run of a
    conversation nobody on record owns (a paired stranger's, a group's): it has only itself."""
    scope = caller.confined_to
    if caller.methods is None and scope is None:
        return None
    person = (scope.person_id if scope is not None else None) or caller.person_id
    if person is not None:
        return f"person:{person}"
    return f"session:{(scope.session_key if scope is not None else None) or session_key or ''}"


@dataclass(slots=True)
class PluginTool:
    plugin_id: str
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: ToolHandler
    annotations: dict[str, Any]
    owner_only: bool = False
    agents: frozenset[str] | None = None
    timeout_s: float = 60.0
    validator: SchemaValidator | None = None
    output_schema: dict[str, Any] | None = None

    def listing(self) -> dict[str, Any]:
        """The entry in ``plugin.tools.list`` (and the executor's manifest for the shim)."""
        entry: dict[str, Any] = {"name": self.name, "description": self.description, "inputSchema": self.input_schema,
                 "annotations": self.annotations}
        if self.output_schema is not None:
            entry["outputSchema"] = self.output_schema
        if self.owner_only:
            entry["owner"] = True
        return entry


@dataclass(slots=True)
class PluginMethod:
    name: str
    handler: MethodHandler
    scope: str
    params_schema: dict[str, Any] | None
    description: str


@dataclass(slots=True)
class PluginService:
    name: str
    start: Callable[[], Awaitable[Any]]
    stop: Callable[[], Awaitable[Any]] | None


@dataclass(slots=True)
class Registration:
    """What one plugin added (committed together, removed together)."""

    tools: list[PluginTool] = field(default_factory=list)
    methods: list[PluginMethod] = field(default_factory=list)
    routes: list[BaseRoute] = field(default_factory=list)
    hooks: list[tuple[str, Callable[[dict[str, Any]], Any], int, float | None]] = field(default_factory=list)
    services: list[PluginService] = field(default_factory=list)
    channels: dict[str, Any] = field(default_factory=dict)


class Loader(Protocol):
    """What a plugin's API uses of the manager that loaded it (``manager.PluginManager``): the live config, the
    database, the state folder, and calling a method as that plugin. A protocol, so this module (the API plugins
    import) does not import the manager that builds it."""

    @property
    def config_store(self) -> ConfigStore: ...
    @property
    def db(self) -> Database: ...
    @property
    def state_dir(self) -> Path: ...
    async def call_as_plugin(self, plugin_id: str, method: str, params: dict[str, Any] | None) -> Any: ...


class PluginApi:
    """The gateway as one plugin sees it (one instance per load of that plugin)."""

    def __init__(self, manager: Loader, manifest: PluginManifest, config: dict[str, Any], *,
                 bundled: bool = False) -> None:
        self._manager = manager
        self._bundled = bundled
        self.manifest = manifest
        self.id = manifest.id
        self.config = config
        """This plugin's settings (``plugins.entries.<id>.config``), already checked against its schema."""
        self.log = structlog.get_logger(f"plugin.{manifest.id}")
        self.registration = Registration()

    def _check_schema(self, schema: dict[str, Any], what: str) -> None:
        """Refuse a schema that is not valid JSON Schema (a bundled plugin's are checked by the test suite)."""
        if self._bundled:
            return
        problem = schema_error(schema)
        if problem is not None:
            raise ValueError(f"{what} is not a valid JSON Schema: {problem}")

    # -- facts -----------------------------------------------------------------------------------

    @property
    def gateway_config(self) -> Config:
        """The whole gateway config (read per use: it changes live)."""
        return self._manager.config_store.config

    @property
    def db(self) -> Database:
        """The gateway's database (SQLite or PostgreSQL): ``db.session()``, ``db.engine``, ``db.is_sqlite``.
        A plugin keeps its own tables, named after its id."""
        return self._manager.db

    @property
    def data_dir(self) -> Path:
        """A folder for this plugin's files (``<state dir>/plugins/<id>``), created on first use."""
        path = self._manager.state_dir / "plugins" / self.id
        path.mkdir(parents=True, exist_ok=True)
        return path

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Call a gateway method in process, with the owner's rights (e.g. ``message.send``)."""
        return await self._manager.call_as_plugin(self.id, method, params)

    # -- what a plugin adds ----------------------------------------------------------------------

    def tool(self, name: str, description: str, input_schema: dict[str, Any] | None = None,
             handler: ToolHandler | None = None, *, annotations: dict[str, Any] | None = None,
             owner: bool = False, agents: list[str] | None = None, timeout_s: float = 60.0,
             output_schema: dict[str, Any] | None = None) -> Any:
        """Offer an MCP tool to agent runs (every run, or only owner runs with ``owner=True``; only the
        ``agents`` listed, when given). ``handler(params, ctx)`` returns a string, JSON data, or
        ``{"content": [text(...), image(...)], "details": {...}}``. Usable as a decorator.

        A JSON object the tool returns reaches MCP clients as ``structuredContent`` beside the text; so does its
        ``details`` object when the tool declares ``output_schema`` (a JSON Schema of type object: that
        object's shape, in the tool's listing). A tool that declares one must always return an object matching
        it (clients check).
        """
        if not TOOL_NAME.match(name):
            raise ValueError(f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'")
        schema = input_schema or {"type": "object", "properties": {}}
        if schema.get("type") != "object":
            raise ValueError(f"tool {name}: inputSchema must be a JSON Schema of type object")
        self._check_schema(schema, f"tool {name}: inputSchema")
        if output_schema is not None:
            if output_schema.get("type") != "object":
                raise ValueError(f"tool {name}: output_schema must be a JSON Schema of type object")
            self._check_schema(output_schema, f"tool {name}: output_schema")
        hints = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
        hints.update(annotations or {})

        def add(fn: ToolHandler) -> ToolHandler:
            self.registration.tools.append(PluginTool(
                self.id, name, description, schema, fn, hints, owner, frozenset(agents) if agents else None,
                timeout_s, SchemaValidator(schema), output_schema))
            return fn

        return add(handler) if handler is not None else add

    def method(self, name: str, handler: MethodHandler | None = None, *, scope: str = WRITE,
               params_schema: dict[str, Any] | None = None, description: str = "") -> Any:
        """Add a gateway RPC method ``name`` (``<something>.<verb>``), callable by operators holding
        ``scope``. ``handler(params, ctx)`` gets the params checked against ``params_schema``."""
        if not METHOD_NAME.match(name):
            raise ValueError(f"method name {name!r} must look like 'prefix.verb'")
        if scope not in SCOPES or scope == NODE:
            raise ValueError(f"method {name}: scope must be one of {', '.join(sorted(SCOPES))}")
        if params_schema is not None:
            self._check_schema(params_schema, f"method {name}: params_schema")

        def add(fn: MethodHandler) -> MethodHandler:
            doc = description or (fn.__doc__ or "").strip().split("\n")[0]
            self.registration.methods.append(PluginMethod(name, fn, scope, params_schema, doc))
            return fn

        return add(handler) if handler is not None else add

    def route(self, route: BaseRoute) -> None:
        """Serve a Starlette route under ``/plugins/<id>`` on the gateway's port."""
        self.registration.routes.append(route)

    def on(self, hook: str, handler: Callable[[dict[str, Any]], Any] | None = None, *, priority: int = 0,
           timeout_s: float | None = None) -> Any:
        """Handle a hook (``gateway.hooks.HOOKS``); higher ``priority`` runs first. Usable as a
        decorator."""
        if hook not in HOOKS:
            raise ValueError(f"unknown hook {hook!r} (known: {', '.join(HOOKS)})")

        def add(fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
            self.registration.hooks.append((hook, fn, priority, timeout_s))
            return fn

        return add(handler) if handler is not None else add

    def service(self, name: str, start: Callable[[], Awaitable[Any]],
                stop: Callable[[], Awaitable[Any]] | None = None) -> None:
        """Background work: ``start()`` is awaited when the plugin loads (start tasks there), ``stop()`` when
        it unloads or the gateway stops."""
        self.registration.services.append(PluginService(name, start, stop))

    def channel(self, name: str, channel_type: Any) -> None:
        """Add a chat channel type: a class with the same interface as the Telegram and Discord channels
        (``channels.base.Channel``), configured under ``channels.<name>``."""
        if not re.match(r"^[a-z][a-z0-9_-]{0,31}$", name):
            raise ValueError(f"channel name {name!r} must be lower-case letters, digits, '_' or '-'")
        self.registration.channels[name] = channel_type
