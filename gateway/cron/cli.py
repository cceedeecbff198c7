"""``remoteclaw cron``: list, add, edit, run, inspect and remove scheduled jobs on a running gateway.

    remoteclaw cron list [--all] [--query TEXT]
    remoteclaw cron add --name NAME (--cron EXPR [--tz ZONE] | --every 30m | --at ISO) \\
        (--message TEXT | --system-event TEXT) [--session isolated|main|session:KEY] \\
        [--announce CHANNEL:TO | --webhook URL [--webhook-token T]] [--agent ID] [--disabled]
    remoteclaw cron edit ID [--name ...] [--cron ... | --every ... | --at ...] [--message ...] [--enable|--disable]
    remoteclaw cron run ID [--due]
    remoteclaw cron runs ID [--limit N] [--status ok|error|skipped|interrupted]
    remoteclaw cron rm ID

Every command prints a short human answer, or JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from gateway.cli import client_options, print_json

__all__ = ["register"]


def register(subparsers: Any) -> None:
    cron = subparsers.add_parser("cron", help="scheduled agent turns: list, add, edit, run, runs, rm")
    sub = cron.add_subparsers(dest="cron_command", metavar="ACTION")
    sub.required = True

    listing = sub.add_parser("list", help="jobs, soonest first")
    listing.add_argument("--all", action="store_true", help="include disabled jobs")
    listing.add_argument("--query", help="only jobs whose name, description or message contains this")
    listing.set_defaults(func=_cmd_list)

    add = sub.add_parser("add", help="create a job")
    add.add_argument("--name", required=True)
    _definition_args(add)
    add.add_argument("--disabled", action="store_true", help="create it switched off")
    add.set_defaults(func=_cmd_add)

    edit = sub.add_parser("edit", help="change a job")
    edit.add_argument("id")
    edit.add_argument("--name")
    _definition_args(edit)
    toggle = edit.add_mutually_exclusive_group()
    toggle.add_argument("--enable", dest="enabled", action="store_const", const=True)
    toggle.add_argument("--disable", dest="enabled", action="store_const", const=False)
    edit.set_defaults(func=_cmd_edit)

    run = sub.add_parser("run", help="run a job now")
    run.add_argument("id")
    run.add_argument("--due", action="store_true", help="only if it is due")
    run.set_defaults(func=_cmd_run)

    runs = sub.add_parser("runs", help="a job's run history, newest first")
    runs.add_argument("id")
    runs.add_argument("--limit", type=int, default=20)
    runs.add_argument("--status", choices=["ok", "error", "skipped", "interrupted", "running"])
    runs.set_defaults(func=_cmd_runs)

    rm = sub.add_parser("rm", help="remove a job and its history")
    rm.add_argument("id")
    rm.set_defaults(func=_cmd_rm)

    client_options(listing, add, edit, run, runs, rm)


def _definition_args(p: argparse.ArgumentParser) -> None:
    when = p.add_mutually_exclusive_group()
    when.add_argument("--cron", metavar="EXPR", help="cron expression, e.g. '0 9 * * 1-5' or @daily")
    when.add_argument("--every", metavar="DURATION", help="interval, e.g. 30m, 2h, 1d")
    when.add_argument("--at", metavar="TIME", help="once, at an ISO time (UTC unless it has an offset)")
    p.add_argument("--tz", help="IANA time zone for --cron, e.g. Europe/Berlin")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--message", help="run an agent turn with this message")
    what.add_argument("--system-event", help="put this text into the agent's main session as a turn")
    p.add_argument("--session", help="isolated (default for --message), main, or session:<key>")
    p.add_argument("--agent", help="agent id (default: the default agent)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--announce", metavar="CHANNEL:TO", nargs="?", const="",
                       help="send the reply to a chat, e.g. telegram:123456 (bare: the session's last chat)")
    where.add_argument("--webhook", metavar="URL", help="POST the result as JSON to this URL")
    where.add_argument("--no-deliver", action="store_true", help="keep the result in the history only")
    p.add_argument("--webhook-token", help="bearer token for --webhook")
    p.add_argument("--description")


def _schedule(args: argparse.Namespace) -> dict[str, Any] | None:
    if args.cron:
        return {"kind": "cron", "expr": args.cron, **({"tz": args.tz} if args.tz else {})}
    if args.every:
        from gateway.cron.heartbeat import every_ms

        return {"kind": "every", "everyMs": every_ms(args.every)}
    if args.at:
        return {"kind": "at", "at": args.at}
    return None


def _fields(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    schedule = _schedule(args)
    if schedule:
        out["schedule"] = schedule
    if args.message:
        out["payload"] = {"kind": "agentTurn", "message": args.message}
    elif args.system_event:
        out["payload"] = {"kind": "systemEvent", "text": args.system_event}
        out["sessionTarget"] = "main"
    if args.session:
        out["sessionTarget"] = args.session
    if args.agent:
        out["agentId"] = args.agent
    if args.description:
        out["description"] = args.description
    if args.announce is not None:
        channel, _, to = args.announce.partition(":")
        out["delivery"] = {"mode": "announce", **({"channel": channel, "to": to} if to else {})}
    elif args.webhook:
        out["delivery"] = {"mode": "webhook", "to": args.webhook,
                           **({"token": args.webhook_token} if args.webhook_token else {})}
    elif args.no_deliver:
        out["delivery"] = {"mode": "none"}
    return out


def _call(args: argparse.Namespace, method: str, params: dict[str, Any]) -> Any:
    from gateway.cli import call_gateway

    return call_gateway(args.url, args.token, method, params)


def _when(ms: int | None) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _describe_schedule(s: dict[str, Any]) -> str:
    if s["kind"] == "cron":
        return f"cron {s['expr']}" + (f" ({s['tz']})" if s.get("tz") else "")
    if s["kind"] == "every":
        return f"every {s['everyMs'] // 1000}s"
    return f"at {s.get('at')}"


def _line(job: dict[str, Any]) -> str:
    state = job.get("state", {})
    flag = "on " if job["enabled"] else "off"
    last = state.get("lastStatus", "never run")
    return (f"{job['id']}  {flag}  {job['name'][:28]:28}  {_describe_schedule(job['schedule']):30}  "
            f"next {_when(state.get('nextRunAtMs'))}  last {last}")


def _cmd_list(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"includeDisabled": args.all}
    if args.query:
        params["query"] = args.query
    listed = _call(args, "cron.list", params)
    if args.json:
        print_json(listed)
        return 0
    if not listed["jobs"]:
        print("no cron jobs" + ("" if args.all else " enabled (--all shows disabled ones)"))
    for job in listed["jobs"]:
        print(_line(job))
    return 0


def _cmd_add(args: argparse.Namespace) -> int:
    params = {"name": args.name, **_fields(args)}
    if args.disabled:
        params["enabled"] = False
    if "schedule" not in params:
        print("remoteclaw cron add: give --cron, --every or --at", file=sys.stderr)
        return 2
    if "payload" not in params:
        print("remoteclaw cron add: give --message or --system-event", file=sys.stderr)
        return 2
    job = _call(args, "cron.add", params)
    if args.json:
        print_json(job)
    else:
        print(f"added {job['id']}: {job['name']}, next run {_when(job['state'].get('nextRunAtMs'))}")
    return 0


def _cmd_edit(args: argparse.Namespace) -> int:
    patch = _fields(args)
    if args.name:
        patch["name"] = args.name
    if args.enabled is not None:
        patch["enabled"] = args.enabled
    if not patch:
        print("remoteclaw cron edit: nothing to change", file=sys.stderr)
        return 2
    job = _call(args, "cron.update", {"id": args.id, "patch": patch})
    if args.json:
        print_json(job)
    else:
        print(f"updated {_line(job)}")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    result = _call(args, "cron.run", {"id": args.id, "mode": "due" if args.due else "force"})
    if args.json:
        print_json(result)
    else:
        print(f"started {args.id}" if result["ran"] else f"not started: {result.get('reason')}")
    return 0


def _cmd_runs(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"id": args.id, "limit": args.limit}
    if args.status:
        params["status"] = args.status
    runs = _call(args, "cron.runs", params)
    if args.json:
        print_json(runs)
        return 0
    if not runs["entries"]:
        print("no runs yet")
    for r in runs["entries"]:
        took = f"{r['durationMs'] / 1000:.1f}s" if "durationMs" in r else "-"
        detail = r.get("error") or (r.get("summary") or "")[:60].replace("\n", " ")
        print(f"{_when(r['startedAtMs'])}  {r['status']:11}  {took:>7}  {r.get('deliveryStatus', '-'):12}  {detail}")
    return 0


def _cmd_rm(args: argparse.Namespace) -> int:
    result = _call(args, "cron.remove", {"id": args.id})
    if args.json:
        print_json(result)
    else:
        print(f"removed {args.id}" if result["removed"] else f"no job {args.id}")
    return 0 if result["removed"] else 1
