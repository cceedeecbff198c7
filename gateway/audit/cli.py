"""``remoteclaw audit``: who did what to the config, pairing, devices, approvals and tokens, from a running gateway.

    remoteclaw audit [--since 7d] [--until TIME] [--action config.] [--actor cli] [--target T] [--limit N]
                     [--before CURSOR] [--json]

One line per event, newest first: when (UTC), the action, who, the target, and the details in short. A page
that is not the last ends with the ``--before`` to pass for the next one. ``--json`` prints ``audit.log.list``'s
answer as it is.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

import orjson

from gateway.cli import client_options, print_json

__all__ = ["register"]

DETAILS_WIDTH = 100


def register(subparsers: Any) -> None:
    audit = subparsers.add_parser(
        "audit", help="who did what: config, pairing, devices, approvals, tokens (the audit log)",
        description="The audit log of the running gateway, newest first (docs/audit.md).")
    audit.add_argument("--since", help="only events since: an age (7d, 12h, 30m), an ISO time or ms since the epoch")
    audit.add_argument("--until", help="only events before this (same forms as --since)")
    audit.add_argument("--action", help="an action or its prefix, e.g. config. or pairing.approve")
    audit.add_argument("--actor", help="an actor or its prefix, e.g. cli, device:, agent-run:")
    audit.add_argument("--target", help="exactly this target, e.g. telegram:4242")
    audit.add_argument("--limit", type=int, default=50, help="at most this many events (1-1000, default 50)")
    audit.add_argument("--before", help="the cursor a previous page ended with")
    client_options(audit)
    audit.set_defaults(func=_cmd_audit)


def _params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {"limit": args.limit}
    for name in ("since", "until", "action", "actor", "target", "before"):
        value = getattr(args, name)
        if value is not None:
            params[name] = int(value) if name in ("since", "until") and value.isdigit() else value
    return params


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _short(details: Any) -> str:
    if not details:
        return ""
    text = orjson.dumps(details).decode()
    return text if len(text) <= DETAILS_WIDTH else text[: DETAILS_WIDTH - 1] + "…"


def line(event: dict[str, Any]) -> str:
    """One event as the command prints it."""
    return (f"{_when(event['at'])}  {event['action']:20} {event['actor']:28} {event.get('target') or '-'}"
            f"  {_short(event.get('details'))}").rstrip()


def _cmd_audit(args: argparse.Namespace) -> int:
    from gateway.cli import call_gateway

    listed = call_gateway(args.url, args.token, "audit.log.list", _params(args))
    if args.json:
        print_json(listed)
        return 0
    if not listed["events"]:
        print(f"no audit events match (kept {listed['retentionDays']} days)")
        return 0
    for event in listed["events"]:
        print(line(event))
    if listed.get("nextBefore"):
        print(f"… more: --before {listed['nextBefore']}")
    return 0
