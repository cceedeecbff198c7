"""``remoteclaw nodes``: see, pair, rename and invoke the nodes of a running gateway.

    remoteclaw nodes list                      every node: paired, pending, rejected; connected or not
    remoteclaw nodes pending                   pairing requests waiting for the owner
    remoteclaw nodes approve REQUEST_ID        let the node in (it gets its own token)
    remoteclaw nodes reject REQUEST_ID         refuse it (and disconnect it)
    remoteclaw nodes remove NODE               forget it; it must ask again
    remoteclaw nodes rename NODE NAME
    remoteclaw nodes describe NODE
    remoteclaw nodes invoke NODE COMMAND [--params JSON] [--timeout-ms N]
    remoteclaw nodes agents                    which agents run where, and why a turn cannot be placed now

NODE is a node id, an id prefix of 8+ characters, or its display name. ``--json`` prints JSON.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import Any

from gateway.cli import client_options, print_json

__all__ = ["register"]


def register(subparsers: Any) -> None:
    nodes = subparsers.add_parser("nodes", help="paired nodes: list, pending, approve, reject, rename, invoke")
    sub = nodes.add_subparsers(dest="nodes_command", metavar="ACTION")
    sub.required = True
    listing = sub.add_parser("list", help="every node and whether it is connected")
    listing.set_defaults(func=_cmd_list)
    pending = sub.add_parser("pending", help="pairing requests waiting for approval")
    pending.set_defaults(func=_cmd_pending)
    approve = sub.add_parser("approve", help="approve a pairing request")
    approve.add_argument("request_id")
    approve.set_defaults(func=_cmd_resolve, method="node.pair.approve")
    reject = sub.add_parser("reject", help="reject a pairing request (or unpair a node)")
    reject.add_argument("request_id")
    reject.set_defaults(func=_cmd_resolve, method="node.pair.reject")
    remove = sub.add_parser("remove", help="forget a node (it must ask again)")
    remove.add_argument("node")
    remove.set_defaults(func=_cmd_remove)
    rename = sub.add_parser("rename", help="give a node your own name for it")
    rename.add_argument("node")
    rename.add_argument("name")
    rename.set_defaults(func=_cmd_rename)
    describe = sub.add_parser("describe", help="one node in full")
    describe.add_argument("node")
    describe.set_defaults(func=_cmd_describe)
    invoke = sub.add_parser("invoke", help="run a command on a node, e.g. system.which --params '{\"bins\":[\"git\"]}'")
    invoke.add_argument("node")
    invoke.add_argument("command")
    invoke.add_argument("--params", help="the command's params as JSON")
    invoke.add_argument("--timeout-ms", type=int, help="how long the node may take")
    invoke.set_defaults(func=_cmd_invoke)
    agents = sub.add_parser("agents", help="which agents run where (the gateway or a node), and why not")
    agents.set_defaults(func=_cmd_agents)
    client_options(listing, pending, approve, reject, remove, rename, describe, invoke, agents)


def _call(args: argparse.Namespace, method: str, params: dict[str, Any], timeout: float = 30.0) -> Any:
    from gateway.cli import call_gateway

    return call_gateway(args.url, args.token, method, params, timeout=timeout)


def _lends(node: dict[str, Any]) -> str:
    """What a node lends for agent turns, as it declared at connect (``agent-cli:…``, ``agent-folder:…`` caps)."""
    caps = node.get("caps") or []
    clis = [c.split(":", 1)[1] for c in caps if c.startswith("agent-cli:")]
    folders = [c.split(":", 1)[1] for c in caps if c.startswith("agent-folder:")]
    if not clis:
        return ""
    return f"  lends agents: {', '.join(clis)} in {', '.join(folders) or 'private folders'}"


def _line(node: dict[str, Any]) -> str:
    state = "connected" if node.get("connected") else "offline"
    return (f"{node['nodeId'][:12]}  {node['displayName']:<24} {node['status']:<9} {state:<9} "
            f"{node.get('platform') or '-':<8} {', '.join(node.get('allowedCommands') or []) or '-'}{_lends(node)}")


def _cmd_list(args: argparse.Namespace) -> int:
    result = _call(args, "node.list", {})
    if args.json:
        print_json(result)
        return 0
    nodes = result["nodes"]
    if not nodes:
        print("no nodes yet: start one with `remoteclaw node run --host H --port P` and approve its request")
    for node in nodes:
        print(_line(node))
    return 0


def _cmd_pending(args: argparse.Namespace) -> int:
    result = _call(args, "node.pair.list", {})
    if args.json:
        print_json(result["pending"])
        return 0
    if not result["pending"]:
        print("no pending pairing requests")
    for req in result["pending"]:
        print(f"{req['requestId']}  {req['displayName']:<24} {req.get('platform') or '-':<8} from "
              f"{req.get('remoteIp') or '?'}  commands: {', '.join(req.get('commands') or []) or '-'}{_lends(req)}")
    return 0


def _cmd_resolve(args: argparse.Namespace) -> int:
    result = _call(args, args.method, {"requestId": args.request_id})
    if args.json:
        print_json(result)
    else:
        print(f"{result['decision']}: {result['node']['displayName']} ({result['node']['nodeId'][:12]})")
    return 0


def _cmd_remove(args: argparse.Namespace) -> int:
    result = _call(args, "node.pair.remove", {"nodeId": args.node})
    print_json(result) if args.json else print(f"removed {result['nodeId'][:12]}")
    return 0


def _cmd_rename(args: argparse.Namespace) -> int:
    result = _call(args, "node.rename", {"nodeId": args.node, "displayName": args.name})
    print_json(result) if args.json else print(f"renamed {result['nodeId'][:12]} to {result['displayName']}")
    return 0


def _cmd_describe(args: argparse.Namespace) -> int:
    print_json(_call(args, "node.describe", {"nodeId": args.node}))
    return 0


def _cmd_agents(args: argparse.Namespace) -> int:
    result = _call(args, "node.agents", {})
    if args.json:
        print_json(result)
        return 0
    for agent in result["agents"]:
        if agent["runsOn"] == "gateway":
            print(f"{agent['agentId']:<16} on the gateway")
        elif agent.get("placeable"):
            print(f"{agent['agentId']:<16} on node {agent['nodeName']} ({agent['runtime']}, "
                  f"{agent.get('workspace') or 'a private folder per session'}; credentials: "
                  f"{agent.get('credentials')}, sandbox: {agent.get('sandbox')})")
            for project in agent.get("projectsNotLent") or []:
                print(f"{'':<16} project {project['name']}: {project['path']} is not in a folder the node lends "
                      "(on the node: remoteclaw node agents set folders ...)")
        else:
            waits = " (messages wait for it)" if agent.get("waits") else ""
            print(f"{agent['agentId']:<16} on node {agent['node']}: cannot be placed now: {agent['why']}{waits}")
    for node, count in (result.get("waiting") or {}).items():
        print(f"{count} message(s) wait for node {node}")
    return 0


def _cmd_invoke(args: argparse.Namespace) -> int:
    from gateway.cli import CliError, _parse_json

    params: dict[str, Any] = {"nodeId": args.node, "command": args.command, "idempotencyKey": str(uuid.uuid4())}
    if args.params:
        params["params"] = _parse_json(args.params, "--params")
    if args.timeout_ms:
        params["timeoutMs"] = args.timeout_ms
    wait = max(30.0, (args.timeout_ms or 0) / 1000 + 5)
    result = _call(args, "node.invoke", params, timeout=wait)
    payload = result.get("payload")
    if args.json or not isinstance(payload, dict) or "stdout" not in payload:
        print_json(payload if not args.json else result)
        return 0
    sys.stdout.write(payload.get("stdout") or "")
    sys.stderr.write(payload.get("stderr") or "")
    if payload.get("timedOut"):
        raise CliError("the command timed out on the node")
    return int(payload.get("exitCode") or 0)
