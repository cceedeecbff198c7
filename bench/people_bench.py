"""People benchmark (issue #44): what the per-person checks cost, and many members' turns at once.

Starts a real gateway (temporary state dir, loopback port) whose agent CLI is the stand-in of
``runs_bench``: it stamps its start time and session, prints a Claude-style result and exits. Every call
goes over a real WebSocket, every person signs in as a browser does (``people.loginLink`` then
``POST /people/signin``) and connects with their own ``rcp_…`` credential.

1. The data: ``--people`` people; the first ``--rich`` own ``--sessions-each`` conversations each
   (``agent:main:person:<them>`` and ``…:s1``, ``…:s2`` …), the others their own conversation only; every
   conversation gets ``--turns-each`` stand-in turns, sent by its person.
2. With the people on record, timed one call at a time (``--calls`` after ``--warmup``), from the gateway
   token (the owner) and from a member signed in with her own credential, in turns (owner, member, member,
   owner …, so a change in the machine's load falls on both alike): ``sessions.list {}``,
   ``sessions.list`` with what the web chat's page asks (``limit: 100``, titles, previews), ``chat.history``
   of one of her conversations, and a turn's start (``agent`` sent -> the stand-in's first instruction,
   ``--turns`` samples) in her own conversation.
3. Every person at once: each on their own socket sends one turn to their own conversation; turns per
   second (wall time until all finished) and start latency (send -> stand-in stamp). Then the same number
   of turns from the owner's one socket across the same conversations.
4. Everyone removed (``people.remove``: nobody on record, the conversations stay, nobody's): the owner's
   calls and turns of 2. and the owner's burst of 3. again, the "before" of a single-owner gateway on the
   same data.

Usage: .venv/bin/python bench/people_bench.py [--people 200] [--rich 50] [--sessions-each 4] [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.ws import RawClient, operator  # noqa: E402

STAND_IN = """#!/bin/sh
echo "$(date +%s%N) $REMOTECLAW_SESSION_KEY" >> "$BENCH_STAMPS"
cat > /dev/null
echo '{"type":"system","subtype":"init","session_id":"bench-session"}'
echo '{"type":"result","subtype":"success","is_error":false,"session_id":"bench-session","result":"ok",\
"usage":{"input_tokens":1,"output_tokens":1}}'
"""
PAGE_LIST = {"limit": 100, "includeDerivedTitles": True, "includeLastMessage": True}
"""What the web chat's page asks ``sessions.list`` for (gateway/webchat/static/app.js)."""
WAIT_S = 300.0


def pid(n: int) -> str:
    return f"p{n:03d}"


def own(person: str) -> str:
    return f"agent:main:person:{person}"


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 2)


def summary(samples: list[float], **extra: Any) -> dict[str, Any]:
    return {
        "p50_ms": pct(samples, 0.5),
        "p90_ms": pct(samples, 0.9),
        "p99_ms": pct(samples, 0.99),
        "n": len(samples),
        **extra,
    }


class Stamps:
    """The stand-in's start stamps: one line ``<ns> <session key>`` per process started."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[tuple[int, str]]:
        out = []
        for line in self.path.read_text().splitlines():
            ns, _, key = line.partition(" ")
            out.append((int(ns), key))
        return out


async def ok(c: RawClient, method: str, params: Any, timeout: float = 30.0) -> Any:
    frame = await c.req(method, params, timeout=timeout)
    if not frame["ok"]:
        raise RuntimeError(f"{method} {params}: {frame.get('error')}")
    return frame.get("payload")


async def turn(c: RawClient, key: str) -> str:
    """One turn in ``key``, to its end; its status."""
    acc = await ok(c, "agent", {"message": "go", "sessionKey": key, "idempotencyKey": uuid.uuid4().hex})
    res = await ok(c, "agent.wait", {"runId": acc["runId"], "timeoutMs": int(WAIT_S * 1000)}, timeout=WAIT_S + 10)
    return str(res["status"])


def redeem(http: str, url: str) -> str:
    """A sign-in link opened by a browser: ``POST /people/signin`` trades its code for a credential."""
    code = url.split("#signin=", 1)[1]
    req = urllib.request.Request(
        http + "/people/signin",
        data=json.dumps({"code": code}).encode(),
        headers={"content-type": "application/json", "user-agent": "people-bench"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return str(json.loads(resp.read())["token"])


async def interleaved(
    fns: dict[str, Callable[[], Awaitable[Any]]], samples: int, warmup: int
) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Time each caller's ``fn`` in turns (a, b, a, b …, who goes first alternating), so a change in the machine's
    load falls on every caller alike; milliseconds after ``warmup`` rounds, and each one's last answer."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    last: dict[str, Any] = {}
    names = list(fns)
    for i in range(warmup + samples):
        for name in names if i % 2 == 0 else names[::-1]:
            t0 = time.perf_counter()
            last[name] = await fns[name]()
            if i >= warmup:
                times[name].append((time.perf_counter() - t0) * 1000)
    return times, last


async def calls_of(
    url: str, tokens: dict[str, str], me: str, args: argparse.Namespace, stamps: Stamps
) -> dict[str, dict[str, Any]]:
    """The timed calls of each caller (the owner's token, a member's credential), each on a socket of its own,
    interleaved call by call."""
    clients = {name: await operator(url, token) for name, token in tokens.items()}
    try:
        history_key = f"{own(me)}:s1" if args.sessions_each > 1 else own(me)
        out: dict[str, dict[str, Any]] = {name: {} for name in clients}

        def each(method: str, params: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
            return {name: functools.partial(ok, c, method, params) for name, c in clients.items()}

        for label, method, params in (
            ("sessions_list", "sessions.list", {}),
            ("sessions_list_page", "sessions.list", PAGE_LIST),
            ("chat_history", "chat.history", {"sessionKey": history_key}),
        ):
            times, last = await interleaved(each(method, params), args.calls, args.warmup)
            for name in clients:
                extra = {"count": last[name]["count"]} if "count" in last[name] else {}
                extra |= {"messages": len(last[name]["messages"])} if "messages" in last[name] else {}
                out[name][label] = summary(times[name], **extra)

        def start(c: RawClient) -> Callable[[], Awaitable[float]]:
            async def one() -> float:  # send -> the stand-in's first instruction, in ms
                before = len(stamps.lines())
                t0 = time.time_ns()
                if await turn(c, own(me)) != "ok":
                    raise RuntimeError(f"a turn in {own(me)} failed")
                ns, key = stamps.lines()[before]
                assert key == own(me), key
                return (ns - t0) / 1e6

            return one

        starts: dict[str, list[float]] = {name: [] for name in clients}
        names = list(clients)
        for i in range(args.turns + 3):
            for name in names if i % 2 == 0 else names[::-1]:
                ms = await start(clients[name])()
                if i >= 3:  # warm-up
                    starts[name].append(ms)
        for name in clients:
            out[name]["turn_start"] = summary(starts[name])
        return out
    finally:
        await close_all(list(clients.values()))


async def burst(clients: list[tuple[RawClient, str]], stamps: Stamps) -> dict[str, Any]:
    """One turn per (socket, conversation), all sent at once; turns/s over the wall time and start latencies."""
    before = len(stamps.lines())
    sent: dict[str, int] = {}

    async def one(c: RawClient, key: str) -> str:
        sent[key] = time.time_ns()
        return await turn(c, key)

    t0 = time.perf_counter()
    statuses = await asyncio.gather(*(one(c, key) for c, key in clients))
    wall = time.perf_counter() - t0
    started: dict[str, int] = {}
    for ns, key in stamps.lines()[before:]:
        started.setdefault(key, ns)
    latency = [(started[key] - sent[key]) / 1e6 for key in sent if key in started]
    n = len(clients)
    return {
        "turns": n,
        "ok": statuses.count("ok"),
        "wall_s": round(wall, 2),
        "turns_per_s": round(n / wall, 1),
        "start_p50_ms": pct(latency, 0.5),
        "start_p99_ms": pct(latency, 0.99),
        "start_max_ms": pct(latency, 1.0),
    }


async def connect_all(url: str, tokens: list[str]) -> tuple[list[RawClient], float]:
    t0 = time.perf_counter()
    clients = await asyncio.gather(*(operator(url, t) for t in tokens))
    return list(clients), round(time.perf_counter() - t0, 2)


async def close_all(clients: list[RawClient]) -> None:
    await asyncio.gather(*(c.close() for c in clients))


async def measure(gw: GatewayProcess, args: argparse.Namespace, stamps: Stamps) -> dict[str, Any]:
    url, token = gw.url, gw.token or ""
    people = [pid(n) for n in range(args.people)]
    rich = people[: args.rich]
    owner = await operator(url, token)
    try:
        # -- the people and their sign-ins
        creds: dict[str, str] = {}
        for p in people:
            await ok(owner, "people.create", {"id": p, "name": f"Person {p}", "role": "member"})
            link = (await ok(owner, "people.loginLink", {"id": p}))["url"]
            creds[p] = await asyncio.to_thread(redeem, gw.http, link)
        # -- their conversations, each made by its person's own turns (they are theirs: sessions.person_id)
        t0 = time.perf_counter()

        async def seed(p: str) -> int:
            keys = [own(p)] + ([f"{own(p)}:s{k}" for k in range(1, args.sessions_each)] if p in rich else [])
            c = await operator(url, creds[p])
            try:
                bad = 0
                for key in keys:
                    for _ in range(args.turns_each):
                        bad += await turn(c, key) != "ok"
                return bad
            finally:
                await c.close()

        failed = 0
        for i in range(0, len(people), 50):  # 50 sockets at a time
            failed += sum(await asyncio.gather(*(seed(p) for p in people[i : i + 50])))
        if failed:
            raise RuntimeError(f"{failed} seeding turns failed")
        listed = (await ok(owner, "sessions.list", {}))["sessions"]
        owned = sum(1 for s in listed if s.get("personId"))
        print(f"seeded {len(listed)} sessions ({owned} owned) in {time.perf_counter() - t0:.1f} s", flush=True)
        me = rich[0] if rich else people[0]
        # -- 2. with people on record: the owner, then a member
        after = await calls_of(url, {"owner": token, "member": creds[me]}, me, args, stamps)
        print("after:", json.dumps(after), flush=True)
        # -- 3. every member at once, each on their own socket; then the owner's one socket
        members, connect_s = await connect_all(url, [creds[p] for p in people])
        try:
            burst_members = await burst(list(zip(members, [own(p) for p in people], strict=True)), stamps)
        finally:
            await close_all(members)
        burst_members["connect_all_s"] = connect_s
        c = await operator(url, token)
        try:
            burst_owner_after = await burst([(c, own(p)) for p in people], stamps)
        finally:
            await c.close()
        print("burst members:", burst_members, "owner (people on record):", burst_owner_after, flush=True)
        # -- 4. nobody on record: the same data, the owner alone
        for p in people:
            await ok(owner, "people.remove", {"id": p})
        assert (await ok(owner, "people.list", {}))["people"] == []
        before = await calls_of(url, {"owner": token}, me, args, stamps)
        connected, connect_owner_s = await connect_all(url, [token] * len(people))
        await close_all(connected)
        c = await operator(url, token)
        try:
            burst_owner_before = await burst([(c, own(p)) for p in people], stamps)
        finally:
            await c.close()
        burst_owner_before["connect_all_s"] = connect_owner_s
        print("before:", json.dumps(before), "burst owner:", burst_owner_before, flush=True)
        return {
            "sessions": len(listed),
            "sessions_owned": owned,
            "people": len(people),
            "rich": len(rich),
            "after": after,
            "before": before,
            "burst": {"members": burst_members, "owner_after": burst_owner_after, "owner_before": burst_owner_before},
        }
    finally:
        await owner.close()


def table(fig: dict[str, Any]) -> str:
    rows = [
        ("sessions.list {}", "sessions_list"),
        ("sessions.list (page)", "sessions_list_page"),
        ("chat.history", "chat_history"),
        ("turn start", "turn_start"),
    ]
    cols = [
        ("before, owner", fig["before"]["owner"]),
        ("after, owner", fig["after"]["owner"]),
        ("after, member", fig["after"]["member"]),
    ]
    out = ["call".ljust(22) + "".join(name.rjust(24) for name, _ in cols)]
    for label, key in rows:
        out.append(
            label.ljust(22) + "".join(f"{c[key]['p50_ms']:.2f} / {c[key]['p90_ms']:.2f} ms".rjust(24) for _, c in cols)
        )
    out.append("(p50 / p90)")
    for name, b in fig["burst"].items():
        out.append(
            f"burst {name}: {b['ok']}/{b['turns']} ok in {b['wall_s']} s = {b['turns_per_s']} turns/s, "
            f"start p50 {b['start_p50_ms']} ms, p99 {b['start_p99_ms']} ms"
            + (f", all connected in {b['connect_all_s']} s" if "connect_all_s" in b else "")
        )
    return "\n".join(out)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--people", type=int, default=200, help="people, each on their own socket in the burst")
    ap.add_argument("--rich", type=int, default=50, help="how many of them own --sessions-each conversations")
    ap.add_argument("--sessions-each", type=int, default=4)
    ap.add_argument("--turns-each", type=int, default=2, help="stand-in turns seeded into each conversation")
    ap.add_argument("--calls", type=int, default=200, help="timed calls of each method")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--turns", type=int, default=200, help="timed turn starts of each caller")
    ap.add_argument("--cap", type=int, default=4, help="agents.maxConcurrentRuns (the gateway's default: 4)")
    ap.add_argument("--sandbox", choices=("all", "off"), default="all", help="agent runs' sandbox mode")
    report.options(ap, {"people": 12, "rich": 4, "calls": 20, "warmup": 3, "turns": 10})
    args = report.parse(ap)
    d = Path(tempfile.mkdtemp(prefix="people-bench-"))
    cli = d / "stand-in.sh"
    cli.write_text(STAND_IN)
    cli.chmod(0o755)
    stamps = d / "stamps"
    stamps.touch()
    sandbox = {"mode": args.sandbox, "binds": [{"path": str(stamps), "writable": True}]}
    cfg = {
        "agents": {
            "list": [{"id": "main", "command": [str(cli)]}],
            "maxConcurrentRuns": args.cap,
            "defaults": {"sandbox": sandbox},
        },
        "logging": {"level": "warning", "consoleLevel": "warning"},
    }
    load = os.getloadavg()
    with GatewayProcess(d / "gw", config=cfg, env={"BENCH_STAMPS": str(stamps)}) as gw:
        fig = await measure(gw, args, Stamps(stamps))
    fig.update(
        {
            "cap": args.cap,
            "sandbox": args.sandbox,
            "calls": args.calls,
            "turn_samples": args.turns,
            "loadavg_start": [round(x, 2) for x in load],
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        }
    )
    print(
        f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}; cap {args.cap}, sandbox {args.sandbox};"
        f" load {fig['loadavg_start']} -> {fig['loadavg_end']}"
    )
    print(f"{fig['sessions']} sessions ({fig['sessions_owned']} owned by {fig['people']} people)")
    print(table(fig))
    report.write(args.json, fig)


if __name__ == "__main__":
    asyncio.run(main())
