"""Running tool calls: validation, the hook wrapper, the gateway connection, result shaping.

Both front doors use this one path: the stdio MCP server (``mcp_shim.server``) and
``remoteclaw call``. One ``GatewayClient`` (one WebSocket) serves every call of the process; it
connects on first use and reconnects after a gateway restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from gateway import __version__
from gateway.protocol import RpcError
from mcp_shim.catalog import Catalog
from mcp_shim.schema import validate
from mcp_shim.side_effects import SideEffects
from mcp_shim.tools import Call, Content, Tool, ToolError

__all__ = ["CALL_TIMEOUT_S", "Request", "Runner", "UnknownTool", "error_result", "text_result"]

CALL_TIMEOUT_S = 30.0
HOOK_TIMEOUT_S = 5.0
BLOCKING_HOOK_TIMEOUT_S = 15.0
"""How long a call waits for plugins' ``before_tool_call`` hooks (each is cut off after 5 s in the gateway)."""


class UnknownTool(LookupError):
    """No tool by that name exists at all (a protocol error, not a tool failure)."""


def text_result(payload: Any) -> dict[str, Any]:
    """A tool's JSON payload as an MCP result: the text copy every client reads and, for an object, the same
    value as ``structuredContent`` (MCP 2025-06-18 and later; validated by clients against the tool's
    ``outputSchema`` where it declares one). The text copy stays: older clients and many agent CLIs show
    the model only ``content``."""
    text = orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode()
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if isinstance(payload, dict):  # structuredContent must be an object before 2026-07-28
        result["structuredContent"] = payload
    return result


def error_result(tool: str, message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": f"Tool error ({tool}): {message}"}], "isError": True}


Request = Callable[..., Awaitable[Any]]
"""``await request(method, params, timeout=...)``: how a runner reaches the gateway."""


class Runner:
    """Executes tools for one run (one shim process), or for one remote MCP session in the gateway.

    Args:
        catalog: the tools this run may see and call.
        request: how to reach the gateway; by default one WebSocket connection, opened on first use. The
            gateway's own HTTP transport passes its in-process dispatcher here, so both front doors share
            this one call path (validation, hooks, side effects, result shaping).
    """

    def __init__(self, catalog: Catalog, request: Request | None = None) -> None:
        self.catalog = catalog
        self.ctx = catalog.ctx
        self.side_effects = SideEffects(self.ctx.side_effects_file)
        self._request = request
        self._client: Any = None
        self._hooks: set[asyncio.Task[None]] = set()

    # -- gateway ---------------------------------------------------------------------------------

    async def gateway(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None = None) -> Any:
        """Call a gateway method on the shared connection (opened on first use)."""
        if self._request is not None:
            return await self._request(method, params, timeout=timeout)
        return await self._gateway_client().request(method, params, timeout=timeout)

    def _gateway_client(self) -> Any:
        if self._client is None:
            from mcp_shim.client import GatewayClient

            self._client = GatewayClient(
                self.ctx.gateway_url, self.ctx.gateway_token, client_id="remoteclaw-mcp", mode="backend",
                version=__version__, scopes=self.catalog.scopes(), timeout=CALL_TIMEOUT_S,
                unix_socket=self.ctx.gateway_socket,
            )
        return self._client

    async def warm(self) -> None:
        """Open the gateway connection before the first call needs it.

        The model thinks for a while between ``tools/list`` and its first call; connecting in that gap
        (importing websockets, the handshake) takes the connection off the first call's path. A failure
        here is not reported: the first call connects again and says what went wrong.
        """
        if self._request is not None:
            return
        with contextlib.suppress(Exception):
            await self._gateway_client().connect()

    async def fetch_plugins(self, *, patient: bool) -> Any:
        """Standalone runs: the gateway's ``plugin.tools.list``, or None when it cannot be had.

        ``patient=False`` tries one connection and gives up at once when nobody listens (the first
        ``tools/list`` waits on this); ``patient=True`` keeps retrying while a restarting gateway comes back.
        """
        try:
            if not patient and self._request is None:
                await self._gateway_client().connect(open_timeout=5)
            listed = await self.gateway("plugin.tools.list", {}, timeout=10)
            if self.ctx.sender_is_owner and isinstance(listed, dict):  # the desktop nodes' tools, owner runs only
                from mcp_shim.tools.desktop import listing  # owner runs only: not imported for the others

                with contextlib.suppress(RpcError):
                    listed = {**listed, "desktop": await listing(self.gateway)}
            return listed
        except Exception as exc:
            if patient:
                print(f"remoteclaw-mcp: plugin tools unavailable: {exc}", file=sys.stderr)
            return None

    async def refresh_plugins(self) -> bool:
        """Ask the gateway for plugin tools again; returns whether the tool list changed."""
        listed = await self.fetch_plugins(patient=True)
        return listed is not None and self.catalog.set_plugins(listed)

    # -- hooks -----------------------------------------------------------------------------------

    def _fire(self, method: str, params: dict[str, Any],
              after: asyncio.Future[None] | None = None) -> asyncio.Future[None]:
        """Send a hook without waiting; a hook that fails is only worth a line on stderr. ``after``: sent once that
        one is answered (the gateway runs a connection's requests side by side, so an after-hook sent while its
        before-hook is still being decided could reach the operators first)."""

        async def send() -> None:
            if after is not None:
                await asyncio.wait([after])
            try:
                await self.gateway(method, params, timeout=HOOK_TIMEOUT_S)
            except Exception as exc:
                print(f"remoteclaw-mcp: {method} failed: {exc}", file=sys.stderr)

        task = asyncio.ensure_future(send())
        self._hooks.add(task)
        task.add_done_callback(self._hooks.discard)
        return task

    async def _before(self, params: dict[str, Any]) -> dict[str, Any]:
        """The before-hook, awaited: a plugin may block the call or rewrite its params. A gateway that does
        not answer in time does not stop the call (hooks never take tools down with them)."""
        try:
            answer = await self.gateway("hooks.tool.before", params, timeout=BLOCKING_HOOK_TIMEOUT_S)
        except Exception as exc:
            print(f"remoteclaw-mcp: hooks.tool.before failed: {exc}", file=sys.stderr)
            return {}
        return answer if isinstance(answer, dict) else {}

    # -- calls -----------------------------------------------------------------------------------

    async def call(self, name: str, arguments: Any) -> dict[str, Any]:
        """Run one tool; returns an MCP ``CallToolResult``. Raises only ``UnknownTool``."""
        tool = self.catalog.tools.get(name)
        if tool is None:
            raise UnknownTool(name)
        refusal = self.catalog.refusal(tool)
        if refusal:
            return error_result(name, refusal)
        args = {} if arguments is None else arguments
        hook_params = {"toolName": name, "params": args if isinstance(args, dict) else {},
                       "sessionKey": self.ctx.session_key}
        fired: asyncio.Future[None] | None = None  # the before-hook sent without waiting, if it was
        if self.catalog.await_before:
            decided = await self._before(hook_params)
            if decided.get("block"):
                return error_result(name, f"blocked by plugin {decided.get('plugin') or '?'}: "
                                          f"{decided.get('reason') or 'no reason given'}")
            if isinstance(decided.get("params"), dict):
                args = decided["params"]
        else:
            fired = self._fire("hooks.tool.before", hook_params)
            await asyncio.sleep(0)  # let the before-hook go out ahead of the call itself
        started = time.perf_counter()
        error: str | None = None
        try:
            result = await self._run(tool, args)
            if result.get("isError"):
                error = result["content"][0]["text"]
        except asyncio.CancelledError:
            error = "cancelled"
            raise
        finally:
            after = {**hook_params, "durationMs": round((time.perf_counter() - started) * 1000, 3)}
            if error is not None:
                after["error"] = error
            self._fire("hooks.tool.after", after, fired)
        return result

    async def _run(self, tool: Tool, args: Any) -> dict[str, Any]:
        problem = validate(tool.input_schema, args) if isinstance(args, dict) else "at root: must be object"
        if problem:
            return error_result(tool.name, f"invalid arguments: {problem}")
        call = Call(tool.name, self.ctx, self.gateway, self.side_effects)
        try:
            payload = await tool.handler(call, args)
        except ToolError as exc:
            return error_result(tool.name, str(exc))
        except RpcError as exc:
            return error_result(tool.name, f"{exc.code}: {exc.message}")
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            return error_result(tool.name, f"internal error: {type(exc).__name__}: {exc}")
        if isinstance(payload, Content):
            out: dict[str, Any] = {"content": list(payload)}
            if payload.structured is not None:
                out["structuredContent"] = payload.structured
            return out
        return text_result(payload)

    async def close(self, grace: float = 0.5) -> None:
        """Let pending hooks go out (up to ``grace`` seconds), then close the connection."""
        if self._hooks:
            await asyncio.wait(set(self._hooks), timeout=grace)
        for task in list(self._hooks):
            task.cancel()
        if self._client is not None:
            await self._client.close()
