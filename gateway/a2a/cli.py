"""``remoteclaw a2a``: talk to an A2A agent from the command line, with the SDK's client (``gateway.a2a.client``).

``remoteclaw a2a card URL`` prints the agent's card (JSON). ``remoteclaw a2a send URL TEXT`` sends a message and
prints the reply as it streams, then the task's state and ids on stderr (``--json``: the whole answer as JSON on
stdout instead). The credential is ``--credential``, else ``$REMOTECLAW_A2A_TOKEN``; ``--context`` continues a
conversation. Exit 0 when the task completed, 1 when it failed or was canceled or the call did not go through.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    a2a = subparsers.add_parser("a2a", help="talk to an A2A (Agent2Agent) agent: its card, a message",
                                description="A2A 1.0 client (docs/a2a.md).")
    sub = a2a.add_subparsers(dest="a2a_command", metavar="ACTION")
    sub.required = True
    card = sub.add_parser("card", help="print an agent's Agent Card")
    card.add_argument("url", help="the agent's base URL (its card is at URL/.well-known/agent-card.json)")
    card.set_defaults(func=_cmd_card)
    send = sub.add_parser("send", help="send a message and print the reply as it streams")
    send.add_argument("url", help="the agent's base URL")
    send.add_argument("text", help="the message")
    send.add_argument("--context", help="continue this contextId")
    send.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    send.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the reply (default 300)")
    send.set_defaults(func=_cmd_send)
    for parser in (card, send):
        parser.add_argument("--credential", help="bearer token for the agent (default: $REMOTECLAW_A2A_TOKEN)")


def _credential(args: argparse.Namespace) -> str | None:
    return args.credential or os.environ.get("REMOTECLAW_A2A_TOKEN") or None


def _cmd_card(args: argparse.Namespace) -> int:
    from gateway.cli import print_json
    from gateway.extras import require

    require("a2a", "remoteclaw a2a")
    from gateway.a2a.client import A2aCallFailed, card

    try:
        print_json(asyncio.run(card(args.url, credential=_credential(args))))
    except A2aCallFailed as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    return 0


def _cmd_send(args: argparse.Namespace) -> int:
    from gateway.cli import print_json
    from gateway.extras import require

    require("a2a", "remoteclaw a2a")
    from gateway.a2a.client import A2aCallFailed, send

    def show(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    streamed: list[str] = []

    def on_text(piece: str) -> None:
        streamed.append(piece)
        if not args.json:
            show(piece)

    try:
        out = asyncio.run(send(args.url, args.text, credential=_credential(args), context_id=args.context,
                               timeout_s=args.timeout, on_text=on_text))
    except A2aCallFailed as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    if args.json:
        print_json(out)
    else:
        said = "".join(streamed)
        rest = out["reply"][len(said):] if out["reply"].startswith(said) else ("\n" + out["reply"] if said else
                                                                                out["reply"])
        show(rest + "\n")
        print(f"[{out['state']}] task {out['taskId']} context {out['contextId']}", file=sys.stderr)
    return 0 if out["state"] == "completed" else 1
