"""Remote MCP: the agent tools over authenticated Streamable HTTP at ``/mcp``.

- ``transport``: the endpoint (POST/GET/DELETE, sessions, SSE, Origin and size checks, RFC 9728 metadata);
- ``session``: one MCP session, running the shim's own catalog and runner against the dispatcher in process;
- ``tokens``: bearer tokens, stored hashed, each deciding tier, profile and session;
- ``methods``: ``mcp.tokens.create|list|revoke``; ``cli``: ``remoteclaw mcp token ...``;
- ``config``: the ``gateway.mcp`` section.
"""

from gateway.composition.capabilities import Capability

CAPABILITY = Capability(
    "mcp_http",
    start="gateway.mcp_http.transport:start",
    methods=("gateway.mcp_http.methods",),
)
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
