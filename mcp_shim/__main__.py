"""``remoteclaw-mcp`` (also ``remoteclaw mcp``, ``python -m mcp_shim``): the per-run stdio MCP server."""

from __future__ import annotations

import os
import sys

__all__ = ["main"]


def main() -> int:
    """Serve MCP on stdin/stdout until EOF or a signal. Exits 1 if the run's context is incomplete."""
    # The protocol owns the real stdout; anything else that prints (a library, a stray debug line)
    # lands on stderr instead of corrupting the JSON-RPC stream.
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    from mcp_shim.catalog import Catalog
    from mcp_shim.context import Context, ContextError
    from mcp_shim.server import StdioServer, Writer, stop_on_signals

    try:
        ctx = Context.from_env()
    except ContextError as exc:
        print(f"remoteclaw-mcp: {exc}", file=sys.stderr)
        return 1
    server = StdioServer(Catalog(ctx), Writer(proto_fd))
    stop_on_signals()
    grace = 1.0  # on EOF, let running calls finish and hooks go out
    try:
        server.serve(sys.stdin.buffer)
    except (KeyboardInterrupt, SystemExit):
        grace = 0.05  # a signal means now: Claude Code follows SIGINT with SIGTERM 100 ms later
    finally:
        server.close(grace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
