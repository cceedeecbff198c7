"""One remote MCP session: a token's grant turned into the same catalog and runner an agent run's shim has.

The tools are the shim's own (``mcp_shim.catalog``, ``mcp_shim.runner``): one definition of every tool,
its tier, profile, validation, hooks and result shaping, for stdio and HTTP alike. The difference is how
a tool reaches the gateway: the shim opens a WebSocket; here the runner calls the gateway's dispatcher
in process, as a caller whose scopes and methods the token decides (a baseline token is held to the
methods behind the baseline tools, exactly like a non-owner agent run's token).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from typing import TYPE_CHECKING, Any

from gateway.dispatch.dispatcher import Caller, SessionScope, registry
from mcp_shim.catalog import Catalog
from mcp_shim.context import Context
from mcp_shim.runner import Runner

if TYPE_CHECKING:
    from gateway.composition.callable_types import MethodCall
    from gateway.mcp_http.tokens import TokenGrant

__all__ = ["McpSession"]


class McpSession:
    """The state behind one ``Mcp-Session-Id``: who it is for, its tools, its calls in flight."""

    def __init__(self, call: MethodCall, default_agent: str, grant: TokenGrant, *, remote: str, protocol: str) -> None:
        self.id = secrets.token_urlsafe(24)
        self.grant = grant
        self.protocol = protocol
        self.last_seen = time.monotonic()
        self.calls: dict[Any, asyncio.Task[Any]] = {}
        self.notifications: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=100)
        self.closed = asyncio.Event()
        owner = grant.owner and grant.person_id is None  # a person's own token is never the owner tier
        ctx = Context(
            gateway_url="inproc:", gateway_token="", side_effects_file=os.devnull,
            session_key=grant.session_key or f"agent:{default_agent}:main",
            sender_is_owner=owner, tool_profile=grant.profile,
            plugin_tools_file=None,
        )
        self.catalog = Catalog(ctx)
        # A person's own token reaches their conversations, as their runs do; a guest's, as a guest's run, only the
        # conversation it acts in (gateway.agents.executor: a guest's run token is not confined to the person).
        reach_person = grant.person_id if grant.person_role != "guest" else None
        self.caller = Caller(
            conn_id=f"mcp-{self.id[:12]}", role="operator", scopes=frozenset(self.catalog.scopes()),
            client_id="remoteclaw-mcp-http", client_mode="backend", remote=remote,
            display_name=f"mcp token {grant.name}",
            methods=None if owner else registry.baseline_names(),
            confined_to=None if owner else SessionScope(ctx.session_key, person_id=reach_person),
            person_id=grant.person_id,
        )
        self._call = call
        self.runner = Runner(self.catalog, self.request)

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None = None) -> Any:
        """The runner's way to the gateway: the dispatcher, in process, as this session's caller."""
        call = self._call(method, params or {}, self.caller, request_id=f"{self.caller.conn_id}")
        if timeout is None:
            return await call
        async with asyncio.timeout(timeout):
            return await call

    def touch(self) -> None:
        self.last_seen = time.monotonic()

    def idle_for(self) -> float:
        return time.monotonic() - self.last_seen

    def notify(self, message: dict[str, Any]) -> None:
        """Queue a server notification for the session's GET stream (dropped if nobody reads it)."""
        if self.notifications.full():
            self.notifications.get_nowait()
        self.notifications.put_nowait(message)

    async def refresh_plugins(self) -> None:
        """Ask the gateway for plugin tools; tell the client when the list changed."""
        if await self.runner.refresh_plugins():
            self.notify({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

    async def close(self) -> None:
        """End the session: cancel its calls, end its stream, let pending hooks go out."""
        self.closed.set()
        for task in list(self.calls.values()):
            task.cancel()
        await self.runner.close(grace=0.5)
