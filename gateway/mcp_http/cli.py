"""``remoteclaw mcp``: run the stdio MCP server (no sub-command), or manage remote MCP tokens.

``remoteclaw mcp token create --name N [--owner] [--profile P] [--session KEY] [--person ID] [--expires 30d]`` prints
what the token allows and then the token itself, once, alone on the last line (so a script can take it
with ``tail -n 1``). ``list`` and ``revoke`` never show a token. ``remoteclaw tokens …`` is the same command.
"""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli import client_options, print_json

__all__ = ["register", "register_tokens"]


def register(subparsers: Any) -> None:
    mcp = subparsers.add_parser(
        "mcp", help="run the stdio MCP server for one agent run, or manage remote MCP tokens",
        description="Without a sub-command: the stdio MCP server for one agent run (reads REMOTECLAW_* env).")
    mcp.set_defaults(func=_cmd_serve)
    sub = mcp.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND")
    token = sub.add_parser("token", help="tokens for the tools over HTTP at /mcp (docs/mcp-remote.md)")
    _token_actions(token)


def register_tokens(subparsers: Any) -> None:
    """``remoteclaw tokens``: the same tokens by the name the HTTP doors' docs use (a peer's credential at
    ``/v1`` and ``/a2a`` is a person's token, docs/openai-api.md and docs/a2a.md)."""
    tokens = subparsers.add_parser(
        "tokens", help="tokens for the HTTP doors: /mcp, and a peer's at /v1 and /a2a (with --person)",
        description="The same tokens as `remoteclaw mcp token`: a person's token (--person ID) is that person's "
                    "credential at every HTTP door, reaching their own conversations only.")
    _token_actions(tokens)


def _token_actions(token: argparse.ArgumentParser) -> None:
    tsub = token.add_subparsers(dest="token_command", metavar="ACTION")
    tsub.required = True

    create = tsub.add_parser("create", help="create a token and print it once")
    create.add_argument("--name", required=True, help="what the token is for, e.g. laptop-claude")
    create.add_argument("--owner", action="store_true", help="owner tier: every tool (default: baseline tools)")
    create.add_argument("--profile", choices=["minimal", "messaging", "coding", "full"], default="full")
    create.add_argument("--session", help="session key the tools act for (default: the main session; with --person: "
                                          "their own conversation)")
    create.add_argument("--person", metavar="ID", help="a person's own token (docs/people.md): baseline tools, their "
                                                       "conversations only, listed and revoked by them too")
    create.add_argument("--expires", help="lifetime, e.g. 30d, 12h, 90m (default: no expiry)")
    create.set_defaults(func=_cmd_create)
    listing = tsub.add_parser("list", help="list tokens (never the tokens themselves)")
    listing.set_defaults(func=_cmd_list)
    revoke = tsub.add_parser("revoke", help="revoke a token by id or name")
    revoke.add_argument("id", help="the token's id or name")
    revoke.set_defaults(func=_cmd_revoke)
    client_options(create, listing, revoke)


def _cmd_serve(_args: argparse.Namespace) -> int:
    from mcp_shim.__main__ import main

    return main()


def _call(args: argparse.Namespace, method: str, params: dict[str, Any]) -> Any:
    from gateway.cli import call_gateway

    return call_gateway(args.url, args.token, method, params)


def _cmd_create(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"name": args.name, "owner": args.owner, "profile": args.profile}
    if args.session:
        params["sessionKey"] = args.session
    if args.person:
        params["personId"] = args.person
    if args.expires:
        params["expires"] = args.expires
    made = _call(args, "mcp.tokens.create", params)
    token = made.pop("token")
    if args.json:
        print_json(made)
    else:
        tier = "owner" if made["owner"] else "baseline"
        expires = "never" if not made["expiresAt"] else f"at {made['expiresAt']} (epoch ms)"
        whose = f", {made['personId']}'s, in {made['sessionKey']}" if made.get("personId") else ""
        print(f"created MCP token {made['name']} (id {made['id']}): {tier} tier{whose}, profile {made['profile']}, "
              f"expires {expires}")
        print("Keep it now: it is shown only this once. Send it as 'Authorization: Bearer <token>' to /mcp.")
    print(token)
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    listed = _call(args, "mcp.tokens.list", {})
    if args.json:
        print_json(listed)
        return 0
    if not listed["tokens"]:
        print("no MCP tokens (create one: remoteclaw mcp token create --name NAME)")
    for t in listed["tokens"]:
        tier = "owner" if t["owner"] else "baseline"
        whose = f"  {t['personId']}" if t.get("personId") else ""
        print(f"{t['id']}  {t['name']:24} {tier:8} {t['profile']:9} {t['state']}{whose}")
    return 0


def _cmd_revoke(args: argparse.Namespace) -> int:
    result = _call(args, "mcp.tokens.revoke", {"id": args.id})
    if args.json:
        print_json(result)
    else:
        print(f"revoked {result['revoked']} token(s)")
    return 0
