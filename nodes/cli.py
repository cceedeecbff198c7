"""``remoteclaw node``: run this machine as a node, and edit what it lets the gateway execute.

    remoteclaw node run --host H --port P [--tls] [--display-name N] [--token T]
    remoteclaw node approvals list
    remoteclaw node approvals add PATTERN      e.g. git, python3*, /usr/local/bin/*
    remoteclaw node approvals remove PATTERN
    remoteclaw node browser show
    remoteclaw node browser set KEY VALUE      evaluateEnabled, allowPrivateNetwork, allowedHosts, downloadsDir
    remoteclaw node agents show                what agent CLIs and folders this node lends the gateway
    remoteclaw node agents set KEY VALUE       enabled, clis, folders, credentials (gateway|own), sandbox (bwrap|off)
    remoteclaw node desktop show               Cua Driver, the display, the accessibility bus, the tools offered
    remoteclaw node desktop set KEY VALUE      enabled, telemetry, updateChecks, recordVideo, driverPath, denyTools

``remoteclaw-node`` is the same without the ``node`` word, for a machine with only the node host installed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sys
from typing import Any

__all__ = ["main", "register"]


def register(subparsers: Any) -> None:
    node = subparsers.add_parser("node", help="run this machine as a node: run, approvals")
    _build(node)


def _build(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="node_command", metavar="ACTION")
    sub.required = True
    run = sub.add_parser("run", help="pair with a gateway and serve its commands")
    run.add_argument("--host", default="127.0.0.1", help="the gateway's host")
    run.add_argument("--port", type=int, default=18789, help="the gateway's port")
    run.add_argument("--tls", action="store_true", help="connect with wss:// (the gateway is behind TLS)")
    run.add_argument("--path", default="/", help="the gateway's WebSocket path (behind a proxy)")
    run.add_argument("--display-name", default=socket.gethostname(), help="how the node is listed")
    run.add_argument("--token", help="gateway token for the first pairing (default: $REMOTECLAW_GATEWAY_TOKEN)")
    run.add_argument("--no-browser", action="store_true",
                     help="do not offer the canvas and browser commands even where Chromium is installed")
    run.add_argument("--no-desktop", action="store_true",
                     help="do not offer the desktop commands even where Cua Driver and a display are present")
    run.add_argument("--agents", action="store_true", default=None,
                     help="offer agent turns (agent.run) with the CLIs and folders lent in `node agents set`")
    run.set_defaults(func=_cmd_run)
    approvals = sub.add_parser("approvals", help="what system.run may execute on this machine")
    asub = approvals.add_subparsers(dest="approvals_command", metavar="ACTION")
    asub.required = True
    asub.add_parser("list", help="the allowed patterns").set_defaults(func=_cmd_approvals_list)
    add = asub.add_parser("add", help="allow a program: a name (git), a glob (python3*) or a path glob")
    add.add_argument("pattern")
    add.set_defaults(func=_cmd_approvals_add)
    remove = asub.add_parser("remove", help="stop allowing a pattern")
    remove.add_argument("pattern")
    remove.set_defaults(func=_cmd_approvals_remove)
    browser = sub.add_parser("browser", help="what this node's browser may do (evaluate, private addresses)")
    bsub = browser.add_subparsers(dest="browser_command", metavar="ACTION")
    bsub.required = True
    bsub.add_parser("show", help="the browser settings and whether Chromium was found").set_defaults(
        func=_cmd_browser_show)
    bset = bsub.add_parser("set", help="set evaluateEnabled, allowPrivateNetwork (true|false), allowedHosts "
                                       "(comma-separated) or downloadsDir")
    bset.add_argument("key")
    bset.add_argument("value")
    bset.set_defaults(func=_cmd_browser_set)
    agents = sub.add_parser("agents", help="which agent CLIs and folders this node lends the gateway")
    gsub = agents.add_subparsers(dest="agents_command", metavar="ACTION")
    gsub.required = True
    gsub.add_parser("show", help="what is lent, and which CLIs were found").set_defaults(func=_cmd_agents_show)
    gset = gsub.add_parser("set", help="set enabled (true|false), clis (claude=claude,codex=/opt/codex), folders "
                                       "(comma-separated absolute paths), credentials (gateway|own) or sandbox "
                                       "(bwrap|off); applies to the next turn (clis and enabled: the next start)")
    gset.add_argument("key")
    gset.add_argument("value")
    gset.set_defaults(func=_cmd_agents_set)
    desktop = sub.add_parser("desktop", help="this node's desktop (Cua Driver): what was found, what it may do")
    dsub = desktop.add_subparsers(dest="desktop_command", metavar="ACTION")
    dsub.required = True
    dsub.add_parser("show", help="whether Cua Driver, a display and the accessibility bus were found, and the "
                                 "tools offered").set_defaults(func=_cmd_desktop_show)
    dset = dsub.add_parser("set", help="set enabled, telemetry, updateChecks, recordVideo (true|false), driverPath "
                                       "or denyTools (comma-separated tool names); applies at the next node start")
    dset.add_argument("key")
    dset.add_argument("value")
    dset.set_defaults(func=_cmd_desktop_set)


def _approvals() -> Any:
    from nodes.approvals import ExecApprovals
    from nodes.state import state_dir

    return ExecApprovals(state_dir() / "exec-approvals.json")


def _cmd_approvals_list(_args: argparse.Namespace) -> int:
    print(json.dumps(_approvals().describe(), indent=2))
    return 0


def _cmd_approvals_add(args: argparse.Namespace) -> int:
    added = _approvals().add(args.pattern)
    print(f"allowed {args.pattern}" if added else f"{args.pattern} was already allowed")
    return 0


def _cmd_approvals_remove(args: argparse.Namespace) -> int:
    removed = _approvals().remove(args.pattern)
    print(f"removed {args.pattern}" if removed else f"{args.pattern} was not in the list")
    return 0 if removed else 1


def _cmd_browser_show(_args: argparse.Namespace) -> int:
    from nodes.browser.chromium import find
    from nodes.browser.settings import BrowserSettings
    from nodes.state import state_dir

    settings = BrowserSettings.load(state_dir())
    executable, reason = find()
    print(json.dumps({"chromium": executable, "unavailableBecause": reason,
                      "evaluateEnabled": settings.evaluate_enabled,
                      "allowPrivateNetwork": settings.allow_private_network,
                      "allowedHosts": settings.allowed_hosts, "downloadsDir": str(settings.downloads_dir)}, indent=2))
    return 0


def _cmd_browser_set(args: argparse.Namespace) -> int:
    from nodes.browser.settings import BrowserSettings
    from nodes.state import state_dir

    value: Any = args.value
    if args.key in ("evaluateEnabled", "allowPrivateNetwork"):
        if args.value.lower() not in ("true", "false"):
            print(f"{args.key} takes true or false", file=sys.stderr)
            return 2
        value = args.value.lower() == "true"
    elif args.key == "allowedHosts":
        value = [h.strip().lower() for h in args.value.split(",") if h.strip()]
    try:
        BrowserSettings.update(state_dir(), args.key, value)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(f"{args.key} = {json.dumps(value)} (applies to the next request; no restart needed)")
    return 0


def _cmd_agents_show(_args: argparse.Namespace) -> int:
    from nodes.agents.settings import AgentHostSettings
    from nodes.state import state_dir

    print(json.dumps(AgentHostSettings.load(state_dir()).describe(), indent=2))
    return 0


def _cmd_agents_set(args: argparse.Namespace) -> int:
    from nodes.agents.settings import AgentHostSettings
    from nodes.state import state_dir

    try:
        settings = AgentHostSettings.update(state_dir(), args.key, args.value)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(json.dumps(settings.describe(), indent=2))
    return 0


def _cmd_desktop_show(_args: argparse.Namespace) -> int:
    from nodes.desktop.service import DesktopCommands
    from nodes.desktop.settings import DesktopSettings
    from nodes.state import state_dir

    async def look() -> dict[str, Any]:
        desktop, found = await DesktopCommands.create(state_dir())
        out: dict[str, Any] = {**found.describe()}
        try:
            out["settings"] = DesktopSettings.load(state_dir()).describe()
        except ValueError as exc:
            out["settings"] = {"error": str(exc)}
        if desktop is not None:
            try:
                out["tools"] = sorted(desktop.offered)
                out["withheld"] = desktop.withheld
            finally:
                await desktop.close()
        return out

    out = asyncio.run(look())
    print(json.dumps(out, indent=2))
    return 0 if out["available"] else 1


def _cmd_desktop_set(args: argparse.Namespace) -> int:
    from nodes.desktop.settings import BOOLEAN_KEYS, DesktopSettings
    from nodes.state import state_dir

    value: Any = args.value
    if args.key in BOOLEAN_KEYS:
        if args.value.lower() not in ("true", "false"):
            print(f"{args.key} takes true or false", file=sys.stderr)
            return 2
        value = args.value.lower() == "true"
    elif args.key == "denyTools":
        value = [t.strip() for t in args.value.split(",") if t.strip()]
    elif args.key == "driverPath":
        value = args.value or None
    try:
        DesktopSettings.update(state_dir(), args.key, value)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(f"{args.key} = {json.dumps(value)} (applies when the node starts next)")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from nodes.host import NodeHost
    from nodes.state import state_dir

    host = f"[{args.host}]" if ":" in args.host and not args.host.startswith("[") else args.host
    path = args.path if args.path.startswith("/") else "/" + args.path
    url = f"{'wss' if args.tls else 'ws'}://{host}:{args.port}{path}"
    token = args.token or os.environ.get("REMOTECLAW_GATEWAY_TOKEN") or None

    async def go() -> int:
        node = NodeHost(url, gateway_token=token, display_name=args.display_name, state=state_dir(),
                        browser=not args.no_browser, desktop=not args.no_desktop, agents=args.agents)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, node.stop)
        return await node.run()

    try:
        return asyncio.run(go())
    except ValueError as exc:  # a corrupt state file: say which
        print(f"node-host: {exc}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    """``remoteclaw-node``: the node host's own entry point (imports nothing of the gateway server)."""
    parser = argparse.ArgumentParser(prog="remoteclaw-node", description="remoteclaw node host")
    _build(parser)
    args = parser.parse_args(argv)
    return int(args.func(args))
