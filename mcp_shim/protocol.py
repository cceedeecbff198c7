"""MCP protocol revisions, negotiation and result shapes, shared by the stdio shim and the gateway's ``/mcp``.

Two eras of MCP meet here:

- the handshake revisions (2024-11-05 … 2025-11-25): the client sends ``initialize`` once, and the
  version agreed there holds for the connection (or the HTTP session);
- the stateless revision 2026-07-28: no handshake; every request carries its protocol version and the
  client's capabilities in ``params._meta`` (``io.modelcontextprotocol/protocolVersion``,
  ``io.modelcontextprotocol/clientCapabilities``, optionally ``…/clientInfo``), the server answers
  ``server/discover``, and every result says ``resultType``.

We decide per request, never per connection: a request whose ``_meta`` carries the protocol-version key
is a 2026-07-28 request and is checked as one (the reserved ``io.modelcontextprotocol/`` prefix never
appears in older traffic); anything else is served as the handshake era always was. So an old client, a
new client and a client that probes ``server/discover`` first and falls back to ``initialize`` on -32601
all work against the same process. Error codes and result shapes follow the 2026-07-28 schema as the
``mcp`` 2.3 SDK ships it (``mcp_types._v2026_07_28``); see docs/mcp-shim.md for the sources.

Stdlib only, and nothing imported at module level: the shim answers its first request from this module
within milliseconds of starting.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "HANDSHAKE_VERSIONS",
    "HEADER_MISMATCH",
    "HTTP_STATUS",
    "INSTRUCTIONS",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MODERN_VERSIONS",
    "PARSE_ERROR",
    "PROTOCOL_VERSION_KEY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Envelope",
    "ProtocolError",
    "discover_result",
    "error_message",
    "finish",
    "initialize_result",
    "modern_envelope",
    "progress_notification",
    "progress_token",
    "tools_list_result",
]

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Revisions negotiated with ``initialize``, newest first."""
MODERN_VERSIONS = ("2026-07-28",)
"""Stateless revisions: each request names its version in ``_meta``; ``server/discover`` lists these."""

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
HEADER_MISMATCH = -32020
"""2026-07-28: an HTTP header (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``) disagrees with the body."""
UNSUPPORTED_PROTOCOL_VERSION = -32022
"""2026-07-28: the request's version is not one we serve; ``data`` is ``{supported, requested}``."""

TOOLS_LIST_TTL_MS = 60_000
"""How long a 2026-07-28 client may cache ``tools/list``. The list changes only when the gateway's plugin
tools do, and a 2026 client has no standing stream for ``list_changed`` here (we do not serve
``subscriptions/listen``), so a minute bounds how stale it can get."""

INSTRUCTIONS = ("RemoteClaw tools act on the gateway this agent runs under: sessions, chat messages, and "
                "(for the owner) cron, config, nodes, canvas, browser and speech.")


class ProtocolError(Exception):
    """A request the protocol layer refuses: a JSON-RPC error ``code``, ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class Envelope:
    """The per-request fields of a 2026-07-28 request."""

    __slots__ = ("capabilities", "client_info", "version")

    def __init__(self, version: str, capabilities: dict[str, Any], client_info: Any) -> None:
        self.version = version
        self.capabilities = capabilities
        self.client_info = client_info


def modern_envelope(params: dict[str, Any], method: str | None = None,
                    headers: dict[str, str] | None = None) -> Envelope | None:
    """The request's 2026-07-28 envelope, or ``None`` for a handshake-era request.

    The checks run in the order the 2026-07-28 transport spec and the ``mcp`` SDK's inbound ladder use, so
    a client hears about its first mistake: the envelope's keys, then (over HTTP, when ``headers`` are
    given with lower-case names) the ``MCP-Protocol-Version``/``Mcp-Method``/``Mcp-Name`` headers against
    the body, then whether we serve the version.

    Raises:
        ProtocolError: -32602 naming the missing or malformed ``_meta`` key, -32020 naming the header that
            disagrees with the body, or -32022 with ``{supported, requested}`` for a version we do not serve.
    """
    meta = params.get("_meta")
    header_version = headers.get("mcp-protocol-version") if headers is not None else None
    if not isinstance(meta, dict) or PROTOCOL_VERSION_KEY not in meta:
        if header_version in MODERN_VERSIONS:  # the header says 2026-07-28, the body lacks its envelope
            raise ProtocolError(INVALID_PARAMS, f"params._meta must carry {PROTOCOL_VERSION_KEY!r} and "
                                                f"{CLIENT_CAPABILITIES_KEY!r} at {header_version}")
        return None
    missing = [k for k in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if k not in meta]
    if missing:
        raise ProtocolError(INVALID_PARAMS, f"params._meta is missing the required key(s): {', '.join(missing)}")
    version = meta[PROTOCOL_VERSION_KEY]
    if headers is not None:
        if header_version != version:
            raise ProtocolError(HEADER_MISMATCH, "MCP-Protocol-Version header does not match "
                                                 f"params._meta[{PROTOCOL_VERSION_KEY!r}]")
        if headers.get("mcp-method") != method:
            raise ProtocolError(HEADER_MISMATCH, "Mcp-Method header does not match the request's method")
        name = params.get("name")
        if method == "tools/call" and isinstance(name, str) and headers.get("mcp-name") != name:
            raise ProtocolError(HEADER_MISMATCH, "Mcp-Name header does not match params.name")
    if not isinstance(version, str):
        raise ProtocolError(INVALID_PARAMS, f"params._meta[{PROTOCOL_VERSION_KEY!r}] must be a string")
    capabilities = meta[CLIENT_CAPABILITIES_KEY]
    if not isinstance(capabilities, dict):
        raise ProtocolError(INVALID_PARAMS, f"params._meta[{CLIENT_CAPABILITIES_KEY!r}] must be an object")
    if version not in MODERN_VERSIONS:
        raise ProtocolError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                            {"supported": list(MODERN_VERSIONS), "requested": version})
    return Envelope(version, capabilities, meta.get(CLIENT_INFO_KEY))


HTTP_STATUS = {PARSE_ERROR: 400, INVALID_REQUEST: 400, INVALID_PARAMS: 400, HEADER_MISMATCH: 400,
               UNSUPPORTED_PROTOCOL_VERSION: 400, METHOD_NOT_FOUND: 404}
"""The HTTP status of a 2026-07-28 error answer over Streamable HTTP (others: 200)."""


def progress_token(params: dict[str, Any]) -> Any:
    """The request's ``_meta.progressToken`` (a string or an integer), or ``None`` if it asked for none."""
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool)):
        return token
    return None


def server_info() -> dict[str, Any]:
    from gateway import __version__

    return {"name": "remoteclaw", "title": "RemoteClaw", "version": __version__}


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    """The ``initialize`` answer: the client's protocol version when we speak it, else our newest handshake one.

    A client that asks ``initialize`` for a stateless revision gets the newest handshake revision back (the
    handshake does not exist at 2026-07-28); it may continue with that or switch to per-request envelopes.
    """
    asked = params.get("protocolVersion")
    version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    }


def discover_result() -> dict[str, Any]:
    """The ``server/discover`` answer (2026-07-28 ``DiscoverResult``).

    ``tools`` without ``listChanged``: at 2026-07-28 that notification rides ``subscriptions/listen``,
    which we do not serve. ``cacheScope`` is private because what a caller may see depends on its token.
    """
    return {
        "resultType": "complete",
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": {"tools": {}},
        "instructions": INSTRUCTIONS,
        "ttlMs": TOOLS_LIST_TTL_MS,
        "cacheScope": "private",
        "_meta": {SERVER_INFO_KEY: server_info()},
    }


def tools_list_result(tools: list[dict[str, Any]], envelope: Envelope | None) -> dict[str, Any]:
    """``tools/list``: the listing, plus the cache hints a 2026-07-28 ``ListToolsResult`` requires."""
    if envelope is None:
        return {"tools": tools}
    return {"resultType": "complete", "tools": tools, "ttlMs": TOOLS_LIST_TTL_MS, "cacheScope": "private"}


def finish(result: dict[str, Any], envelope: Envelope | None) -> dict[str, Any]:
    """A result as the request's revision wants it: 2026-07-28 results say ``resultType`` (MUST)."""
    if envelope is not None and "resultType" not in result:
        return {"resultType": "complete", **result}
    return result


def error_message(req_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": req_id, "error": error}


def progress_notification(token: Any, progress: float, message: str, total: float | None = None) -> dict[str, Any]:
    """``notifications/progress`` for a request that asked for progress with ``_meta.progressToken``."""
    params: dict[str, Any] = {"progressToken": token, "progress": progress, "message": message}
    if total is not None:
        params["total"] = total
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
