"""MCP's Streamable HTTP transport at ``/mcp``: the agent tools for MCP clients that cannot spawn a shim.

- ``POST /mcp``: one JSON-RPC message. ``initialize`` opens a session (``Mcp-Session-Id`` in the
  answer); every later message names it. Requests are answered as JSON, or, for a ``tools/call`` from a
  client that accepts ``text/event-stream``, as an SSE stream that carries ``notifications/progress``
  while the call runs (when the client sent a ``progressToken``) and then the result. Notifications get
  202 and no body.
- ``GET /mcp``: the session's stream of server notifications (``tools/list_changed``), kept alive with
  SSE comments. Claude Code opens it while it initializes and hangs on a 405, so it is always served.
- ``DELETE /mcp``: ends the session.

MCP 2026-07-28 needs none of that: a request whose ``params._meta`` carries
``io.modelcontextprotocol/protocolVersion`` is served on its own, with no ``initialize`` and no
``Mcp-Session-Id`` (``mcp_shim.protocol`` checks its envelope and its ``MCP-Protocol-Version``,
``Mcp-Method`` and ``Mcp-Name`` headers). Such requests share one catalog and runner per token (the token
decides what they may do, not a connection), kept while they are used. ``server/discover`` answers them;
closing a ``tools/call``'s response stream cancels the call.

Every request needs ``Authorization: Bearer <token>`` (``remoteclaw mcp token create``); a missing,
unknown, revoked or expired token is 401 with a ``WWW-Authenticate`` header pointing at the RFC 9728
protected-resource metadata, served at ``/.well-known/oauth-protected-resource``. A browser page
cannot drive it: a request whose ``Origin`` is not the gateway's own (or listed in
``gateway.allowedOrigins``) is 403, which stops DNS-rebinding attacks on a local gateway. Bodies over
``gateway.mcp.maxRequestBytes`` are 413. The token never appears in a URL or a log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.access.http import mcp_token_caller
from gateway.composition.services import Key
from gateway.mcp_http import tokens
from gateway.mcp_http.session import McpSession
from gateway.server.origins import origin_allowed
from mcp_shim import protocol
from mcp_shim.protocol import Envelope, ProtocolError, error_message, initialize_result
from mcp_shim.runner import UnknownTool

if TYPE_CHECKING:
    from gateway.composition.callable_types import MethodCall
    from gateway.composition.hosts import CapabilityHost
    from gateway.config import ConfigStore
    from gateway.dispatch.callers import Caller
    from gateway.store import Database

__all__ = ["MCP_PATH", "McpHttp", "start"]

log = structlog.get_logger("gateway.mcp_http")

MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"
SESSION_HEADER = "mcp-session-id"
PROGRESS_EVERY_S = 1.0
"""How often a long ``tools/call`` streamed over SSE reports that it is still working."""
KEEPALIVE_S = 15.0
"""SSE comment interval on the GET stream, so proxies and clients see a live connection."""
MAX_SESSIONS = 1000
GRANT_CACHE_S = 1.0
SWEEP_EVERY_S = float(os.environ.get("REMOTECLAW_MCP_SWEEP_S", "30"))
"""How often idle sessions are looked for (tests shorten it)."""

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


def _json(message: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(message), status_code=status, media_type="application/json", headers=headers)


_LINE_BREAKS = {"\u0085".encode(): b"\\u0085", "\u2028".encode(): b"\\u2028", "\u2029".encode(): b"\\u2029"}
"""Characters JSON may carry raw that many line readers (Python's ``str.splitlines``, some SSE clients) take for a
line end: escaped, so one message is always one ``data:`` line."""


def _sse(message: dict[str, Any]) -> bytes:
    body = orjson.dumps(message)
    for raw, escaped in _LINE_BREAKS.items():
        body = body.replace(raw, escaped)
    return b"event: message\ndata: " + body + b"\n\n"


def _problem(status: int, text: str, headers: dict[str, str] | None = None) -> Response:
    """A plain HTTP refusal (no JSON-RPC id to answer): a JSON-RPC error object without an id."""
    return _json({"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": text}},
                 status, headers)



def _valid_id(value: object) -> bool:
    """JSON-RPC ids we answer to: a string or an integer (null, floats and containers are refused)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))

class McpHttp:
    """The ``/mcp`` endpoint of one gateway and the sessions opened on it."""

    def __init__(self, config: ConfigStore, db: Database, call: MethodCall) -> None:
        self._config = config
        self._db = db
        self._call_method = call
        self.sessions: dict[str, McpSession] = {}
        self.stateless: dict[str, McpSession] = {}
        """2026-07-28 requests' catalog and runner, one per token id (they carry no session id)."""
        self._grants: dict[str, tuple[float, tokens.TokenGrant | None]] = {}
        self._sweeper: asyncio.Task[None] | None = None

    # -- routes ----------------------------------------------------------------------------------

    async def http_caller(self, given: str, conn_id: str, remote: str) -> Caller | None:
        """A ``/mcp`` token presented at another HTTP route (a web chat file): its MCP session's caller, so the
        access model decides it as it decides the token's tool calls."""
        grant = await tokens.verify(self._db, given)
        if grant is None or grant.expired():
            return None
        return mcp_token_caller(owner=grant.owner and grant.person_id is None, person_id=grant.person_id,
                                person_role=grant.person_role,
                                session_key=grant.session_key or f"agent:{self._config.config.agents.default}:main",
                                conn_id=conn_id, remote=remote)

    def routes(self) -> list[Route]:
        return [
            Route(MCP_PATH, self.endpoint, methods=["GET", "POST", "DELETE"]),
            Route(METADATA_PATH, self.metadata, methods=["GET"]),
            Route(METADATA_PATH + MCP_PATH, self.metadata, methods=["GET"]),
        ]

    def _base_url(self, request: Request) -> str:
        public = self._config.config.gateway.publicUrl
        if public:
            return public.rstrip("/")
        return f"{request.url.scheme}://{request.url.netloc}"

    async def metadata(self, request: Request) -> Response:
        """RFC 9728 protected-resource metadata: what the resource is and that it takes bearer tokens."""
        base = self._base_url(request)
        return JSONResponse({
            "resource": base + MCP_PATH,
            "authorization_servers": [],
            "bearer_methods_supported": ["header"],
            "resource_name": "remoteclaw gateway tools",
            "resource_documentation": "https://github.com/remoteclaw/remoteclaw/blob/main/docs/mcp-remote.md",
        })

    # -- checks ----------------------------------------------------------------------------------

    def _origin_refused(self, request: Request) -> bool:
        """A browser page from another origin must not drive the tools (the app front refuses it already;
        this keeps the endpoint safe wherever it is mounted)."""
        return not origin_allowed(request.headers.get("origin"), request.headers.get("host"),
                                  self._config.config.gateway.allowedOrigins)

    async def _grant(self, request: Request) -> tokens.TokenGrant | None:
        """The grant of the request's bearer token, looked up at most once a ``GRANT_CACHE_S`` per token.

        Why the cache: a database read per request doubled the round trip of a ``tools/call``. A
        revocation on this replica clears it at once (``forget_grants``); one made on another replica
        takes effect here within ``GRANT_CACHE_S``.
        """
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        token = value.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        now = time.monotonic()
        cached = self._grants.get(token)
        if cached is not None and now - cached[0] < GRANT_CACHE_S:
            grant = cached[1]
        else:
            grant = await tokens.verify(self._db, token)
            if len(self._grants) > 10_000:  # bound memory under a spray of made-up tokens
                self._grants.clear()
            self._grants[token] = (now, grant)
        return None if grant is None or grant.expired() else grant

    def forget_grants(self) -> None:
        """Drop cached token lookups (a token was revoked, or a person removed or given another role)."""
        self._grants.clear()

    async def person_removed(self, person_id: str) -> None:
        """A person was removed: their own tokens are revoked, here at once (elsewhere within ``GRANT_CACHE_S``)."""
        revoked = await tokens.revoke_person(self._db, person_id)
        self.forget_grants()
        if revoked:
            log.info("mcp tokens of a removed person revoked", person=person_id, revoked=revoked)

    def _unauthorized(self, request: Request, why: str) -> Response:
        meta = self._base_url(request) + METADATA_PATH + MCP_PATH
        return _problem(401, why, {"www-authenticate": f'Bearer resource_metadata="{meta}"'})

    def _session(self, request: Request, grant: tokens.TokenGrant) -> McpSession | Response:
        sid = request.headers.get(SESSION_HEADER)
        if not sid:
            return _problem(400, "Bad Request: Mcp-Session-Id header is required (send initialize first, "
                                 "or use MCP 2026-07-28 requests, which need no session)")
        session = self.sessions.get(sid)
        # Another token's session is as unknown to this caller as one that never existed; so is one opened when the
        # token allowed something else (its person's role changed since): the client initializes again.
        if session is None or session.grant != grant:
            return _problem(404, "Session not found: it expired or was ended; initialize a new one")
        session.touch()
        return session

    # -- the endpoint ----------------------------------------------------------------------------

    async def endpoint(self, request: Request) -> Response:
        if self._origin_refused(request):
            return _problem(403, "Forbidden: cross-origin requests are not accepted (gateway.allowedOrigins)")
        grant = await self._grant(request)
        if grant is None:
            return self._unauthorized(request, "Unauthorized: a valid bearer token is required")
        if request.method == "GET":
            return await self._stream(request, grant)
        if request.method == "DELETE":
            found = self._session(request, grant)
            if isinstance(found, Response):
                return found
            await self._end(found)
            return Response(status_code=204)
        return await self._post(request, grant)

    async def _read(self, request: Request) -> bytes | Response:
        limit = self._config.config.gateway.mcp.maxRequestBytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return _problem(413, f"Payload Too Large: at most {limit} bytes")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                return _problem(413, f"Payload Too Large: at most {limit} bytes")
        return bytes(body)

    async def _post(self, request: Request, grant: tokens.TokenGrant) -> Response:
        body = await self._read(request)
        if isinstance(body, Response):
            return body
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return _json(error_message(None, PARSE_ERROR, "Parse error: not JSON"), 400)
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _json(error_message(None, INVALID_REQUEST, "Invalid request: expected one JSON-RPC 2.0 object"),
                         400)
        method = message.get("method")
        if not isinstance(method, str):
            return Response(status_code=202)  # a response to a request we never sent: nothing to do
        if "id" in message and not _valid_id(message["id"]):
            return _json(error_message(None, INVALID_REQUEST, "Invalid request: id must be a string or an integer"),
                         400)
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            return _json(error_message(message.get("id"), INVALID_PARAMS, "Invalid params: must be an object"), 400)
        params = params or {}
        if method == "initialize" and "id" in message:
            return await self._initialize(request, grant, message["id"], params)
        if "id" not in message and request.headers.get("mcp-protocol-version") in protocol.MODERN_VERSIONS:
            return Response(status_code=202)  # 2026-07-28 defines no client notification over HTTP
        try:
            envelope = protocol.modern_envelope(params, method, dict(request.headers))
        except ProtocolError as exc:
            return _json(error_message(message.get("id"), exc.code, exc.message, exc.data),
                         protocol.HTTP_STATUS.get(exc.code, 200))
        if envelope is not None and "id" in message:
            return await self._modern(request, grant, message["id"], method, params, envelope)
        found = self._session(request, grant)
        if isinstance(found, Response):
            return found
        session = found
        if "id" not in message:
            if method == "notifications/cancelled":
                target = params.get("requestId")
                task = session.calls.get(target) if _valid_id(target) else None
                if task is not None:
                    task.cancel()
            return Response(status_code=202)
        req_id = message["id"]
        if method == "tools/call":
            return await self._call(request, session, req_id, params)
        if method == "tools/list":
            return _json({"jsonrpc": "2.0", "id": req_id, "result": {"tools": session.catalog.listing()}})
        if method == "ping":
            return _json({"jsonrpc": "2.0", "id": req_id, "result": {}})
        return _json(error_message(req_id, METHOD_NOT_FOUND, f"Method not found: {method}"))

    async def _modern(self, request: Request, grant: tokens.TokenGrant, req_id: Any, method: str,
                      params: dict[str, Any], envelope: Envelope) -> Response:
        """One self-contained 2026-07-28 request."""
        if method == "server/discover":
            return _json({"jsonrpc": "2.0", "id": req_id, "result": protocol.discover_result()})
        if method not in ("tools/list", "tools/call"):
            return _json(error_message(req_id, METHOD_NOT_FOUND, f"Method not found: {method}"), 404)
        session = self.stateless.get(grant.id)
        if session is None or session.grant != grant:
            stale = session  # opened when the token allowed something else (its person's role changed)
            session = self._new_session(request, grant, envelope.version)
            self.stateless[grant.id] = session
            if stale is not None:
                await stale.close()
            await session.refresh_plugins()
            log.info("mcp stateless runner ready", token=grant.name, owner=grant.owner, profile=grant.profile,
                     protocol=envelope.version)
        session.touch()
        if method == "tools/list":
            result = protocol.tools_list_result(session.catalog.listing(), envelope)
            return _json({"jsonrpc": "2.0", "id": req_id, "result": result})
        return await self._call(request, session, req_id, params, envelope)

    def _new_session(self, request: Request, grant: tokens.TokenGrant, protocol: str) -> McpSession:
        client = request.client
        return McpSession(self._call_method, self._config.config.agents.default, grant,
                          remote=client.host if client else "unknown", protocol=protocol)

    async def _initialize(self, request: Request, grant: tokens.TokenGrant, req_id: Any,
                          params: dict[str, Any]) -> Response:
        await self._sweep()
        if len(self.sessions) >= MAX_SESSIONS:
            return _problem(503, "Service Unavailable: too many MCP sessions; end unused ones (DELETE /mcp)")
        result = initialize_result(params)
        session = self._new_session(request, grant, result["protocolVersion"])
        self.sessions[session.id] = session
        await session.refresh_plugins()
        log.info("mcp session opened", session=session.id[:8], token=grant.name, owner=grant.owner,
                 profile=grant.profile, protocol=session.protocol)
        return _json({"jsonrpc": "2.0", "id": req_id, "result": result}, headers={"mcp-session-id": session.id})

    async def _call(self, request: Request, session: McpSession, req_id: Any, params: dict[str, Any],
                    envelope: Envelope | None = None) -> Response:
        name = params.get("name")
        if not isinstance(name, str):
            return _json(error_message(req_id, INVALID_PARAMS, "Invalid params: 'name' must be a string"),
                         400 if envelope else 200)
        task = asyncio.create_task(session.runner.call(name, params.get("arguments")))
        # 2026-07-28 requests share a runner and cancel by closing the stream, not by id: key them apart.
        key: Any = req_id if envelope is None else object()
        session.calls[key] = task
        task.add_done_callback(lambda _t: session.calls.pop(key, None))
        token = protocol.progress_token(params)
        if "text/event-stream" not in request.headers.get("accept", ""):
            outcome = await self._outcome(task, req_id, name, envelope)
            error = outcome.get("error")
            status = protocol.HTTP_STATUS.get(error["code"], 200) if error and envelope else 200
            return _json(outcome, status)
        return StreamingResponse(self._call_stream(task, req_id, name, token, envelope),
                                 media_type="text/event-stream", headers={"cache-control": "no-store"})

    @staticmethod
    async def _outcome(task: asyncio.Task[Any], req_id: Any, name: str, envelope: Envelope | None) -> dict[str, Any]:
        try:
            result = await asyncio.shield(task)
        except UnknownTool:
            return error_message(req_id, INVALID_PARAMS, f"Unknown tool: {name}")
        except asyncio.CancelledError:
            if not task.cancelled():
                if envelope is not None:
                    task.cancel()  # 2026-07-28: closing the response stream is how a client cancels
                raise  # a handshake-era client went away: the call keeps running to its end
            return error_message(req_id, INVALID_REQUEST, "Request cancelled")
        return {"jsonrpc": "2.0", "id": req_id, "result": protocol.finish(result, envelope)}

    async def _call_stream(self, task: asyncio.Task[Any], req_id: Any, name: str, progress_token: Any,
                           envelope: Envelope | None) -> AsyncIterator[bytes]:
        started = time.monotonic()
        step = 0
        try:
            while not task.done():
                done, _ = await asyncio.wait({task}, timeout=PROGRESS_EVERY_S)
                if done:
                    break
                step += 1
                if progress_token is not None:
                    yield _sse(protocol.progress_notification(
                        progress_token, step, f"{name}: still running ({time.monotonic() - started:.0f} s)"))
                else:
                    yield b": still running\n\n"
            yield _sse(await self._outcome(task, req_id, name, envelope))
        finally:
            if envelope is not None and not task.done():
                task.cancel()

    async def _stream(self, request: Request, grant: tokens.TokenGrant) -> Response:
        if "text/event-stream" not in request.headers.get("accept", "text/event-stream"):
            return _problem(406, "Not Acceptable: the GET stream is text/event-stream")
        found = self._session(request, grant)
        if isinstance(found, Response):
            return found
        session = found

        async def events() -> AsyncIterator[bytes]:
            yield b": stream open\n\n"
            while not session.closed.is_set():
                try:  # asyncio.timeout: a cancellation is never lost (3.11's wait_for can lose one)
                    async with asyncio.timeout(KEEPALIVE_S):
                        message = await session.notifications.get()
                except TimeoutError:
                    session.touch()  # an open stream is a session in use
                    yield b": keepalive\n\n"
                    continue
                yield _sse(message)

        return StreamingResponse(events(), media_type="text/event-stream", headers={"cache-control": "no-store"})

    # -- lifetime --------------------------------------------------------------------------------

    async def _end(self, session: McpSession) -> None:
        if self.sessions.pop(session.id, None) is not None:
            log.info("mcp session ended", session=session.id[:8], token=session.grant.name)
            await session.close()

    async def _sweep(self) -> None:
        """End sessions (and 2026-07-28 runners) idle past ``gateway.mcp.sessionIdleMinutes``."""
        idle_s = self._config.config.gateway.mcp.sessionIdleMinutes * 60
        for session in [s for s in self.sessions.values() if s.idle_for() > idle_s and not s.calls]:
            await self._end(session)
        for grant_id, runner in list(self.stateless.items()):
            if runner.idle_for() > idle_s and not runner.calls:
                self.stateless.pop(grant_id, None)
                await runner.close()

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_EVERY_S)
            await self._sweep()

    def start(self) -> None:
        self._sweeper = asyncio.create_task(self._sweep_forever(), name="mcp-http-sweeper")

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        for session in list(self.sessions.values()):
            await self._end(session)
        for session in list(self.stateless.values()):
            await session.close()
        self.stateless.clear()


MCP_HTTP: Key[McpHttp] = Key("remote MCP")


async def start(host: CapabilityHost) -> None:
    """Capability entry: serve ``/mcp`` (unless ``gateway.mcp.enabled`` is false)."""
    if not host.config.gateway.mcp.enabled:
        return
    mcp = McpHttp(host.config_store, host.db, host.call)
    host.people.on_remove(mcp.person_removed)
    host.http_credentials.add_verifier(mcp.http_caller)
    host.services.provide(MCP_HTTP, mcp)
    for route in mcp.routes():
        host.add_route(route)
    mcp.start()
    host.on_stop(mcp.stop)
