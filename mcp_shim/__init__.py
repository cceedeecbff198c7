"""The per-run stdio MCP server that CLI agents launch (``remoteclaw-mcp``)."""
