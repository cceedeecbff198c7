"""The ``gateway.mcp`` config section: remote MCP at ``/mcp`` (read by ``gateway.config.model``)."""

from __future__ import annotations

from pydantic import Field

from gateway.config.sections import Section

__all__ = ["McpHttpConfig"]


class McpHttpConfig(Section):
    """Remote MCP over Streamable HTTP at ``/mcp`` (see docs/mcp-remote.md)."""

    enabled: bool = True
    sessionIdleMinutes: float = Field(30, gt=0, description="An MCP session unused this long is ended.")
    maxRequestBytes: int = Field(4 * 1024 * 1024, ge=1024, description="Largest request body accepted.")
