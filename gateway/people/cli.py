"""``remoteclaw people``: the people on this gateway, their roles, chats and web sign-ins.

    remoteclaw people list
    remoteclaw people add ID [--name NAME] [--role owner|admin|member|guest] [--one-conversation]
                             [--max-cost-per-day USD] [--agent AGENT]
    remoteclaw people set ID [--name NAME] [--role ROLE] [--one-conversation | --separate-conversations]
                             [--max-cost-per-day USD | --no-budget] [--agent AGENT | --default-agent]
    remoteclaw people link ID CHANNEL SENDER_ID        (and: unlink CHANNEL SENDER_ID)
    remoteclaw people code ID                          a code the person sends as "/link CODE" from a chat
    remoteclaw people login ID                         a one-time web sign-in link for the person
    remoteclaw people signins [ID]                     web sign-ins (everyone's without ID)
    remoteclaw people revoke SIGNIN_ID
    remoteclaw people rm ID

Every command prints a short answer, or JSON with ``--json``. See docs/people.md.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from gateway.cli import client_options, print_json

__all__ = ["register"]

ROLES = ("owner", "admin", "member", "guest")


def register(subparsers: Any) -> None:
    people = subparsers.add_parser("people", help="people on this gateway: roles, linked chats, web sign-ins")
    sub = people.add_subparsers(dest="people_command", metavar="ACTION")
    sub.required = True

    listing = sub.add_parser("list", help="everyone, with role and linked chats")
    listing.set_defaults(func=_cmd_list)

    add = sub.add_parser("add", help="add a person")
    add.add_argument("id", help="a short id: lower-case letters, digits, - and _")
    add.add_argument("--name")
    add.add_argument("--role", choices=ROLES, default="member")
    add.add_argument("--one-conversation", action="store_true",
                     help="their direct chats on every channel and their web chat are one conversation")
    add.add_argument("--max-cost-per-day", type=float, metavar="USD")
    add.add_argument("--agent", help="the agent that answers them (default: the default agent)")
    add.set_defaults(func=_cmd_add)

    change = sub.add_parser("set", help="change a person's name, role, conversations or budget")
    change.add_argument("id")
    change.add_argument("--name")
    change.add_argument("--role", choices=ROLES)
    one = change.add_mutually_exclusive_group()
    one.add_argument("--one-conversation", dest="one", action="store_const", const=True)
    one.add_argument("--separate-conversations", dest="one", action="store_const", const=False)
    budget = change.add_mutually_exclusive_group()
    budget.add_argument("--max-cost-per-day", type=float, metavar="USD")
    budget.add_argument("--no-budget", action="store_true", help="remove their daily budget")
    agent = change.add_mutually_exclusive_group()
    agent.add_argument("--agent", help="the agent that answers them")
    agent.add_argument("--default-agent", action="store_true", help="the default agent answers them")
    change.set_defaults(func=_cmd_set)

    link = sub.add_parser("link", help="make a chat sender one of a person's identities")
    link.add_argument("id")
    link.add_argument("channel", help="telegram, discord, slack, matrix, whatsapp …")
    link.add_argument("sender_id", help="their id there (they can ask the bot: /whoami)")
    link.set_defaults(func=_cmd_link)

    unlink = sub.add_parser("unlink", help="forget one chat identity")
    unlink.add_argument("channel")
    unlink.add_argument("sender_id")
    unlink.set_defaults(func=_cmd_unlink)

    code = sub.add_parser("code", help="a link code the person sends from their chat (/link CODE)")
    code.add_argument("id")
    code.set_defaults(func=_cmd_code)

    login = sub.add_parser("login", help="a one-time web sign-in link for the person")
    login.add_argument("id")
    login.set_defaults(func=_cmd_login)

    signins = sub.add_parser("signins", help="web sign-ins (everyone's, or one person's)")
    signins.add_argument("id", nargs="?")
    signins.add_argument("--all", action="store_true", help="revoked ones too")
    signins.set_defaults(func=_cmd_signins)

    revoke = sub.add_parser("revoke", help="revoke a web sign-in (its open pages are closed)")
    revoke.add_argument("signin_id")
    revoke.set_defaults(func=_cmd_revoke)

    rm = sub.add_parser("rm", help="remove a person (their sessions stay, for the owner)")
    rm.add_argument("id")
    rm.set_defaults(func=_cmd_rm)

    client_options(listing, add, change, link, unlink, code, login, signins, revoke, rm)


def _call(args: argparse.Namespace, method: str, params: dict[str, Any]) -> Any:
    from gateway.cli import call_gateway

    return call_gateway(args.url, args.token, method, params)


def _line(person: dict[str, Any]) -> str:
    chats = ", ".join(f"{i['channel']}:{i['senderId']}" for i in person.get("identities") or []) or "no chats linked"
    extras = []
    if person.get("oneConversation"):
        extras.append("one conversation")
    if person.get("maxCostPerDay") is not None:
        extras.append(f"${person['maxCostPerDay']:.2f}/day")
    if person.get("agentId"):
        extras.append(f"agent {person['agentId']}")
    tail = f" ({'; '.join(extras)})" if extras else ""
    return f"{person['id']:<16} {person['role']:<7} {person['name']}{tail} — {chats}"


def _show(args: argparse.Namespace, result: Any, text: str) -> int:
    if args.json:
        print_json(result)
    else:
        print(text)
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    got = _call(args, "people.list", {})
    return _show(args, got, "\n".join(_line(p) for p in got["people"]) or "nobody on record yet (people add …)")


def _cmd_add(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"id": args.id, "role": args.role, "oneConversation": args.one_conversation}
    if args.name:
        params["name"] = args.name
    if args.max_cost_per_day is not None:
        params["maxCostPerDay"] = args.max_cost_per_day
    if args.agent:
        params["agentId"] = args.agent
    got = _call(args, "people.create", params)
    return _show(args, got, _line(got["person"]))


def _cmd_set(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"id": args.id}
    for key, value in (("name", args.name), ("role", args.role), ("oneConversation", args.one),
                       ("maxCostPerDay", args.max_cost_per_day), ("agentId", args.agent)):
        if value is not None:
            params[key] = value
    if args.no_budget:
        params["maxCostPerDay"] = None
    if args.default_agent:
        params["agentId"] = None
    got = _call(args, "people.update", params)
    return _show(args, got, _line(got["person"]))


def _cmd_link(args: argparse.Namespace) -> int:
    got = _call(args, "people.link", {"id": args.id, "channel": args.channel, "senderId": args.sender_id})
    return _show(args, got, _line(got["person"]))


def _cmd_unlink(args: argparse.Namespace) -> int:
    got = _call(args, "people.unlink", {"channel": args.channel, "senderId": args.sender_id})
    return _show(args, got, f"{args.channel}:{args.sender_id} is nobody's now")


def _cmd_code(args: argparse.Namespace) -> int:
    got = _call(args, "people.linkCode", {"id": args.id})
    return _show(args, got, f"ask {args.id} to send this to the bot from the chat to link (10 minutes): "
                            f"{got['send']}")


def _cmd_login(args: argparse.Namespace) -> int:
    got = _call(args, "people.loginLink", {"id": args.id})
    return _show(args, got, f"one-time sign-in link for {args.id} (10 minutes): {got['url']}")


def _when(ms: int | None) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M") if ms else "never"


def _cmd_signins(args: argparse.Namespace) -> int:
    got = _call(args, "people.signins.list", {"id": args.id or "*", "includeRevoked": args.all})
    lines = [f"{s['id']}  {s['personId']:<16} made {_when(s['createdAt'])}, last used {_when(s['lastUsedAt'])}"
             f"{', revoked' if s.get('revokedAt') else ''}  {s['label']}" for s in got["signins"]]
    return _show(args, got, "\n".join(lines) or "no web sign-ins")


def _cmd_revoke(args: argparse.Namespace) -> int:
    got = _call(args, "people.signins.revoke", {"signinId": args.signin_id})
    return _show(args, got, f"revoked; {got['closedConnections']} open page(s) closed")


def _cmd_rm(args: argparse.Namespace) -> int:
    got = _call(args, "people.remove", {"id": args.id})
    return _show(args, got, f"{args.id} removed; their sessions stay")
