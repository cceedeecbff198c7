"""``remoteclaw plugins``: see and switch plugins on a running gateway.

    remoteclaw plugins list
    remoteclaw plugins enable ID
    remoteclaw plugins disable ID

A switch is written to the config and applied at once (no restart). ``--json`` prints the answer.
"""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli import call_gateway, client_options, print_json

__all__ = ["register"]


def register(subparsers: Any) -> None:
    plugins = subparsers.add_parser("plugins", help="plugins: list, enable, disable")
    sub = plugins.add_subparsers(dest="plugins_command", metavar="ACTION")
    sub.required = True
    listing = sub.add_parser("list", help="every plugin found, loaded or not (with errors)")
    listing.set_defaults(func=_list)
    enable = sub.add_parser("enable", help="switch a plugin on")
    enable.add_argument("id")
    enable.set_defaults(func=_set, enabled=True)
    disable = sub.add_parser("disable", help="switch a plugin off")
    disable.add_argument("id")
    disable.set_defaults(func=_set, enabled=False)
    client_options(listing, enable, disable)


def _line(p: dict[str, Any]) -> str:
    adds = ", ".join(f"{len(p[k])} {k}" for k in ("tools", "methods", "hooks") if p.get(k))
    tail = f"  error: {p['error']}" if p.get("error") else (f"  ({adds})" if adds else "")
    return f"{p['id']:16} {p['status']:9} {p.get('version') or '-':10} {p['source']}{tail}"


def _list(args: argparse.Namespace) -> int:
    listed = call_gateway(args.url, args.token, "plugins.list", {})
    if args.json:
        print_json(listed)
        return 0
    if not listed["plugins"]:
        print("no plugins found")
    for plugin in listed["diagnostics"]:  # our detailed rows (plugins[] is OpenClaw's shape)
        print(_line(plugin))
    return 0


def _set(args: argparse.Namespace) -> int:
    done = call_gateway(args.url, args.token, "plugins.setEnabled", {"pluginId": args.id, "enabled": args.enabled})
    listed = call_gateway(args.url, args.token, "plugins.list", {})
    row = next((r for r in listed["diagnostics"] if r["id"] == args.id), None)
    if args.json:
        print_json(done)
    elif row is not None:
        print(_line(row))
    return 0 if done["plugin"]["enabled"] == args.enabled else 1
