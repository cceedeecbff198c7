"""``remoteclaw acp``: serve ACP on stdin/stdout for an editor, backed by the gateway (``--url``, the token)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, cast

__all__ = ["register"]


def register(subparsers: Any) -> None:
    acp = subparsers.add_parser(
        "acp", help="serve the gateway's sessions to an editor over the Agent Client Protocol (stdio)",
        description="An ACP agent on stdin/stdout (started by an editor such as Zed): each ACP session is a gateway "
                    "session, prompts are turns, approvals and questions are asked in the editor too.")
    acp.add_argument("--url", help="the gateway's WebSocket URL (default: REMOTECLAW_GATEWAY_URL, else the local "
                                   "gateway)")
    acp.add_argument("--token", help="the gateway token (default: REMOTECLAW_GATEWAY_TOKEN, else the state dir's)")
    acp.add_argument("--session", metavar="KEY", help="attach every new ACP session to this gateway session "
                                                      "(the same conversation as on the phone)")
    acp.add_argument("--agent", default="main", help="the agent of new sessions (default main)")
    acp.set_defaults(func=_cmd_acp)


def _cmd_acp(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from gateway.cli import resolve_token, resolve_url

    # stdout is the protocol's: anything else goes to stderr
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

    async def serve() -> None:
        from acp import Agent, run_agent

        from gateway.acp.server import GatewayAgent

        agent = GatewayAgent(resolve_url(args.url), resolve_token(args.token), session_key=args.session,
                             agent_id=args.agent)
        try:
            await run_agent(cast("Agent", agent))
        finally:
            await agent.gateway.close()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        return 130
    return 0
