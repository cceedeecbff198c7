"""``remoteclaw pairing``: see and answer channel pairing requests from a shell.

Talks to the running gateway like any client (``channels.pairing.*`` methods, pairing scope).
"""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli import client_options, print_json

__all__ = ["register"]

_SCOPES = ["operator.pairing", "operator.read"]


def _call(args: argparse.Namespace, method: str, params: dict[str, Any]) -> Any:
    from gateway.cli import call_gateway as call

    return call(args.url, args.token, method, params, scopes=_SCOPES)


def cmd_list(args: argparse.Namespace) -> int:
    result = _call(args, "channels.pairing.list", {"channel": args.channel} if args.channel else {})
    if args.json:
        print_json(result)
        return 0
    if not result["requests"]:
        print("no pending pairing requests")
        return 0
    for r in result["requests"]:
        who = f"{r['senderLabel']} ({r['senderId']})" if r["senderLabel"] != r["senderId"] else r["senderId"]
        print(f"{r['channel']:10} {r['requestId']}  {who}")
    return 0


def _resolve(args: argparse.Namespace, verb: str) -> int:
    # The approval answer names the sender by id only (OpenClaw's shape): look their name up first.
    pending = _call(args, "channels.pairing.list", {"channel": args.channel})["requests"]
    code = args.code.strip().upper().replace("-", "")
    label = next((r["senderLabel"] for r in pending if r["requestId"] == code), None)
    result = _call(args, f"channels.pairing.{verb}", {"channel": args.channel, "code": args.code})
    if args.json:
        print_json(result)
        return 0
    if verb == "approve":
        told = "" if result["notification"] == "sent" else " (could not tell them; they can just write again)"
        print(f"approved {label or result['senderId']} on {args.channel}{told}")
    else:
        req = result["rejected"]
        print(f"rejected {req.get('senderName') or req['senderId']} on {req['channel']}")
    return 0


def cmd_approve(args: argparse.Namespace) -> int:
    return _resolve(args, "approve")


def cmd_reject(args: argparse.Namespace) -> int:
    return _resolve(args, "reject")


def register(subparsers: Any) -> None:
    """Add ``remoteclaw pairing list|approve|reject``."""
    pairing = subparsers.add_parser("pairing", help="approve people who asked to talk to the agent")
    sub = pairing.add_subparsers(dest="pairing_command", metavar="SUBCOMMAND")
    sub.required = True
    lst = sub.add_parser("list", help="pending pairing requests")
    lst.add_argument("channel", nargs="?", help="only this channel, e.g. telegram")
    client_options(lst)
    lst.set_defaults(func=cmd_list)
    for verb, fn, text in (("approve", cmd_approve, "let this sender talk to the agent"),
                           ("reject", cmd_reject, "refuse this pairing request")):
        p = sub.add_parser(verb, help=text)
        p.add_argument("channel", help="channel the code came from, e.g. telegram")
        p.add_argument("code", help="the code the sender received")
        client_options(p)
        p.set_defaults(func=fn)
