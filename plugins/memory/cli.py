"""``remoteclaw memory``: the owner reads and edits agents' memories on a running gateway.

    remoteclaw memory search QUERY [--agent ID] [--max N]
    remoteclaw memory list [--agent ID] [--tier core|stable|notes] [--limit N]
    remoteclaw memory forget ID [--agent ID]
    remoteclaw memory stats [--agent ID]

Without ``--agent``, the default agent's memories. ``--json`` prints the gateway's answer as it is.
"""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli import call_gateway, client_options, print_json

__all__ = ["register"]


def register(subparsers: Any) -> None:
    memory = subparsers.add_parser("memory", help="agents' long-term memories: search, list, forget, stats")
    sub = memory.add_subparsers(dest="memory_command", metavar="ACTION")
    sub.required = True
    search = sub.add_parser("search", help="search memories")
    search.add_argument("query")
    search.add_argument("--max", type=int, default=10, help="most results (default 10)")
    search.set_defaults(func=_search)
    listing = sub.add_parser("list", help="memories, newest first")
    listing.add_argument("--tier", choices=["core", "stable", "notes"])
    listing.add_argument("--limit", type=int, default=50)
    listing.set_defaults(func=_list)
    forget = sub.add_parser("forget", help="delete one memory by id")
    forget.add_argument("id")
    forget.set_defaults(func=_forget)
    stats = sub.add_parser("stats", help="counts per tier, index, embeddings")
    stats.set_defaults(func=_stats)
    client_options(search, listing, forget, stats)
    for p in (search, listing, forget, stats):
        p.add_argument("--agent", help="agent id (default: the default agent)")


def _call(args: argparse.Namespace, method: str, params: dict[str, Any]) -> Any:
    if args.agent:
        params["agentId"] = args.agent
    return call_gateway(args.url, args.token, method, params)


def _one_line(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _search(args: argparse.Namespace) -> int:
    found = _call(args, "memory.search", {"query": args.query, "max_results": args.max, "min_score": 0})
    if args.json:
        print_json(found)
        return 0
    if not found["results"]:
        print("no memory matches")
    for hit in found["results"]:
        print(f"{hit['id']}  {hit['score']:.2f}  {hit['tier']:6}  {_one_line(hit['snippet'])}")
    return 0


def _list(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"limit": args.limit}
    if args.tier:
        params["tier"] = args.tier
    listed = _call(args, "memory.list", params)
    if args.json:
        print_json(listed)
        return 0
    if not listed["memories"]:
        print(f"no memories for agent {listed['agentId']}")
    for m in listed["memories"]:
        print(f"{m['id']}  {m['tier']:6}  {m['createdAt']}  {_one_line(m['content'])}")
    return 0


def _forget(args: argparse.Namespace) -> int:
    done = _call(args, "memory.forget", {"id": args.id})
    if args.json:
        print_json(done)
    else:
        print(f"forgot {done['forgotten']} memory: {', '.join(done['ids'])}")
    return 0


def _stats(args: argparse.Namespace) -> int:
    stats = _call(args, "memory.stats", {})
    if args.json:
        print_json(stats)
        return 0
    tiers = ", ".join(f"{k} {v}" for k, v in stats["byTier"].items())
    print(f"agent {stats['agentId']}: {stats['total']} memories ({tiers}); search {stats['search']} "
          f"({stats['index']}); {stats['withEmbeddings']} with embeddings")
    return 0
