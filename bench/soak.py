"""Load and soak (issue #34): one real gateway under a mixed load for a bounded time, on loopback.

Run from the repo root (not part of the tests; ``tests/bench/test_soak.py`` runs a CI-sized one)::

    .venv/bin/python -m bench.soak --quick          # 1 minute, 100 clients: a smoke run
    .venv/bin/python -m bench.soak                  # 10 minutes, 1,000 clients, 100 agent runs
    .venv/bin/python -m bench.soak --minutes 60     # the 1-hour soak
    .venv/bin/python -m bench.soak --quick --peer   # also OpenClaw's gateway, same client load

At once, on one ``remoteclaw gateway run`` process (SQLite):

* ``--clients`` WebSocket clients (``cli`` mode, every scope, reading every frame; the crowd of
  ``bench/clients_bench.py``);
* a probe event every second: ``hooks.tool.before`` from an admin client, which the gateway broadcasts as
  ``hooks.tool`` to every writer; its params carry the send time and a sequence number, so each client
  measures fan-out latency and the run checks that every client got every probe (``delivered`` in the
  answer says how many sockets the gateway sent it to);
* ``--runs`` agent runs of the stand-in CLI (``tests/support/fake_cli.py``, ``sleep:1``), started in
  waves spread over the run, each on its own session, each awaited with ``agent.wait``;
* a cron job every ``--cron-every`` seconds (an agent turn of the stand-in); afterwards every firing must be
  in ``cron.runs``, finished, and its lateness (``startedAtMs - scheduledForMs``) is reported;
* a paired node host (``python -m nodes run``) invoked with ``system.which`` every 2 s;
* ``health`` and ``sessions.list`` timed from a separate client every second;
* the gateway's RSS (its own process: the stand-in CLIs it runs come and go) sampled every minute (every 10 s in
  ``--quick``); the verdict is "flat" when the samples after warm-up (the first third of the run) stay within
  10 % of each other. OpenClaw's (``--peer``) is its process tree: it runs no agent there.

Any error answer, any missed probe, any unfinished run or firing is counted and makes the run fail (exit 1).
With ``--peer`` and the OpenClaw install (``scripts/install-openclaw``), the same crowd and the same
``health``/``sessions.list`` probe run against OpenClaw's gateway for the same time (OpenClaw has no
``hooks.tool`` broadcast or stand-in CLI, so only connections, RSS and latency compare).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.clients_bench import Client, _crowd, _pct  # noqa: E402
from bench.gateway_bench import _launch  # noqa: E402
from bench.node_bench import pair  # noqa: E402
from bench.procs import rss_mb, stop_tree, tree_rss_mb  # noqa: E402
from bench.targets import OpenClawTarget, find_openclaw  # noqa: E402
from tests.support import FAKE_CLI  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.node_host import NodeHostProcess  # noqa: E402
from tests.support.ws import RawClient, operator  # noqa: E402

PROBE_TOOL = "soak_probe"
CRON_LATE_LIMIT_MS = 10_000
"""A firing later than this is a problem (a job that "does not fire" to its user)."""
RESULTS = ROOT / "bench" / ".results"


class SoakClient(Client):
    """A crowd client that also times each probe event and counts error answers."""

    def __init__(self, ws: Any) -> None:
        super().__init__(ws)
        self.probes: dict[int, float] = {}
        """Probe sequence number -> fan-out latency in ms (receive time minus the send time it carries)."""
        self.error_frames = 0

    def _on_event(self, text: str) -> None:
        super()._on_event(text)
        if PROBE_TOOL in text and text.startswith('{"type":"event","event":"hooks.tool"'):
            now = time.time()
            params = orjson.loads(text)["payload"]["params"]
            self.probes[int(params["seq"])] = (now - float(params["sentAt"])) * 1000

    def _on_response(self, frame: dict[str, Any]) -> None:
        if frame.get("type") == "res" and not frame.get("ok"):
            self.error_frames += 1
        super()._on_response(frame)


async def _soak_crowd(url: str, token: str, n: int) -> tuple[list[SoakClient], list[str], float]:
    """``clients_bench``'s crowd (batches of 50, each client reading every frame), made of ``SoakClient``s."""
    clients, refused, took = await _crowd(url, token, n, "cli", True, cls=SoakClient)
    return [c for c in clients if isinstance(c, SoakClient)], refused, took


@dataclass
class Tally:
    """What the load produced, to compare with what it should have."""

    probes_sent: int = 0
    probe_delivered: list[int] = field(default_factory=list)
    runs_started: int = 0
    runs_ok: int = 0
    runs_bad: list[str] = field(default_factory=list)
    node_ms: list[float] = field(default_factory=list)
    node_errors: list[str] = field(default_factory=list)
    health_ms: list[float] = field(default_factory=list)
    sessions_ms: list[float] = field(default_factory=list)
    call_errors: list[str] = field(default_factory=list)
    rss: list[tuple[float, float]] = field(default_factory=list)


async def _until(deadline: float, period: float, step: Any) -> None:
    """Call ``step()`` every ``period`` seconds until the monotonic ``deadline``."""
    loop = asyncio.get_running_loop()
    next_at = loop.time()
    while loop.time() < deadline:
        await step()
        next_at += period
        await asyncio.sleep(max(0.0, next_at - loop.time()))


async def _timed(client: RawClient, method: str, params: Any, into: list[float], errors: list[str]) -> Any:
    started = time.perf_counter()
    frame = await client.req(method, params, timeout=60)
    into.append((time.perf_counter() - started) * 1000)
    if not frame.get("ok"):
        errors.append(f"{method}: {frame.get('error')}"[:200])
        return None
    return frame.get("payload")


async def _drain(client: RawClient) -> None:
    """Read and drop the admin clients' events (their queue would otherwise grow for the whole run)."""
    while True:
        await client.events.get()


def _logged_errors(log: Path) -> list[str]:
    """The gateway's own error lines (level error or critical) during the run: each is a problem."""
    found = []
    for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if entry.get("level") in ("error", "critical"):
            found.append(f"{entry.get('logger')}: {entry.get('event')} {entry.get('method') or ''}".strip())
    return found


def _stalls(log: Path) -> dict[str, Any]:
    """The gateway's ``loop.stalled`` warnings (``gateway/server/loop_watch.py``): how many, the worst, where."""
    stalls: list[dict[str, Any]] = []
    for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
        if "loop.stalled" in line:
            with contextlib.suppress(orjson.JSONDecodeError):
                stalls.append(orjson.loads(line))
    places: Counter[str] = Counter(place.rsplit(" (", 1)[0] for s in stalls for place in s.get("seen_at", [])[:1])
    return {"loop_stalls": len(stalls), "loop_stall_worst_ms": max((s.get("blocked_ms", 0) for s in stalls), default=0),
            "loop_stall_ms_total": sum(s.get("blocked_ms", 0) for s in stalls),
            "loop_stall_cpu_ms_total": sum(s.get("cpu_ms", 0) for s in stalls),
            "loop_stall_places": places.most_common(5)}


def _rss_verdict(samples: list[tuple[float, float]], run_s: float) -> dict[str, Any]:
    """Flat when the samples after warm-up (the first third of the run) stay within 10 % of their minimum."""
    settled = [mb for t, mb in samples if t >= run_s / 3] or [mb for _, mb in samples]
    if not settled:
        return {"rss_growth_pct": None, "rss_flat": None}
    growth = (max(settled) - min(settled)) / min(settled) * 100
    return {"rss_growth_pct": round(growth, 1), "rss_flat": growth <= 10.0}


def _config(work: Path, runs_in_flight: int) -> dict[str, Any]:
    return {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}],
                       "maxConcurrentRuns": runs_in_flight},
            # Every firing stays in cron.runs for the count (the default keeps the last 200 per job).
            "cron": {"maxConcurrentRuns": 8, "keepRunsPerJob": 100_000},
            "logging": {"level": "warning", "consoleLevel": "warning"}}


async def _runs(admin: RawClient, tally: Tally, total: int, waves: int, deadline: float) -> None:
    """``total`` stand-in runs in ``waves`` bursts spread over the run; each awaited to its end."""
    loop = asyncio.get_running_loop()
    span = max(1.0, deadline - loop.time() - 15)  # the last wave has time to finish
    per_wave = [total // waves + (1 if i < total % waves else 0) for i in range(waves)]
    waiting: list[asyncio.Task[None]] = []

    async def one(key: str) -> None:
        tally.runs_started += 1
        sent = await admin.req("chat.send", {"sessionKey": key, "message": "sleep:1 soak",
                                             "idempotencyKey": uuid.uuid4().hex}, timeout=60)
        if not sent.get("ok"):
            tally.runs_bad.append(f"chat.send: {sent.get('error')}"[:200])
            tally.call_errors.append(f"chat.send: {sent.get('error')}"[:200])
            return
        waited = await admin.req("agent.wait", {"runId": sent["payload"]["runId"], "timeoutMs": 120_000},
                                 timeout=130)
        status = (waited.get("payload") or {}).get("status")
        if not waited.get("ok"):
            tally.call_errors.append(f"agent.wait: {waited.get('error')}"[:200])
        if waited.get("ok") and status == "ok":
            tally.runs_ok += 1
        else:
            tally.runs_bad.append(f"{key}: {status or waited.get('error')}"[:200])

    n = 0
    for i, count in enumerate(per_wave):
        for _ in range(count):
            waiting.append(asyncio.create_task(one(f"agent:main:soak-{n}")))
            n += 1
        if i < waves - 1:
            await asyncio.sleep(span / waves)
    await asyncio.gather(*waiting)


async def _cron_report(admin: RawClient, job_id: str, every_ms: int, started_ms: int, ended_ms: int
                       ) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    while True:  # every page of the job's history
        page = await admin.call("cron.runs", {"id": job_id, "limit": 1000, "offset": len(entries)})
        entries += page["entries"]
        if not page["entries"] or len(entries) >= page["total"]:
            break
    fired = (await admin.call("cron.status", {}))["firedSinceStart"]
    finished = [e for e in entries if e.get("status") != "running"]
    late = [e["startedAtMs"] - e["scheduledForMs"] for e in finished]
    slots = (ended_ms - started_ms) // every_ms  # full periods the job was enabled for
    # A firing later than the period makes the next slot coalesce into it (by design, gateway/cron/service.py):
    # slots not fired are reported, not lost; a stalled job shows as lateness and as too few firings.
    return {"cron_every_s": every_ms / 1000, "cron_slots": slots, "cron_coalesced": max(0, slots - len(entries)),
            "cron_fired": fired,
            "cron_recorded": len(entries),
            "cron_finished": len(finished), "cron_failed": sum(1 for e in finished if e.get("status") != "ok"),
            "cron_late_p50_ms": _pct(late, 0.5), "cron_late_p99_ms": _pct(late, 0.99),
            "cron_late_max_ms": max(late) if late else None}


async def soak_remoteclaw(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The full mixed load on our gateway; returns the figures and the list of problems found."""
    gw = GatewayProcess(work / "gw", config=_config(work, args.runs))
    gw.start(60)
    assert gw.proc is not None
    pid, token, loop = gw.proc.pid, gw.token or "", asyncio.get_running_loop()
    node = NodeHostProcess(work / "node", gw.port, token=token, name="soak-node")
    tally = Tally()
    clients: list[SoakClient] = []
    try:
        admin = await operator(gw.url, token)
        probe = await operator(gw.url, token)
        drains = [asyncio.create_task(_drain(c)) for c in (admin, probe)]
        node.start()
        node_id = await pair(admin, "soak-node")
        rss_idle = rss_mb(pid)
        clients, refused, connect_s = await _soak_crowd(gw.url, token, args.clients)
        started = loop.time()
        deadline = started + args.minutes * 60
        started_ms = int(time.time() * 1000)
        job = await admin.call("cron.add", {"name": "soak tick", "schedule": {"kind": "every",
                                                                             "everyMs": args.cron_every * 1000},
                                            "payload": {"kind": "agentTurn", "message": "cron soak"},
                                            "delivery": {"mode": "none"}})

        async def fanout() -> None:
            seq = tally.probes_sent
            tally.probes_sent += 1
            answer = await admin.call("hooks.tool.before", {"toolName": PROBE_TOOL,
                                                            "params": {"seq": seq, "sentAt": time.time()}})
            tally.probe_delivered.append(int(answer["delivered"]))

        async def invoke() -> None:
            payload = await _timed(admin, "node.invoke", {"nodeId": node_id, "command": "system.which",
                                                          "params": {"bins": ["sh"]},
                                                          "idempotencyKey": uuid.uuid4().hex},
                                   tally.node_ms, tally.node_errors)
            if payload is not None and not payload.get("ok", True):
                tally.node_errors.append(str(payload)[:200])

        async def latency() -> None:
            await _timed(probe, "health", None, tally.health_ms, tally.call_errors)
            await _timed(probe, "sessions.list", {"limit": 50}, tally.sessions_ms, tally.call_errors)

        async def rss() -> None:
            # The gateway alone: the stand-in CLIs of a wave of runs are its children for a few seconds, and once
            # added 270 MiB to one sample and 15 MiB to two more, which read as growth (CI, 2026-11-29).
            tally.rss.append((loop.time() - started, rss_mb(pid)))

        await asyncio.gather(
            _until(deadline, 1.0, fanout), _until(deadline, 2.0, invoke), _until(deadline, 1.0, latency),
            _until(deadline + 0.5, args.sample, rss),
            _runs(admin, tally, args.runs, args.waves, deadline))
        run_s = loop.time() - started
        await admin.call("cron.update", {"id": job["id"], "patch": {"enabled": False}})
        ended_ms = int(time.time() * 1000)
        await asyncio.sleep(3)  # the last probes and the last firing's run are out
        for _ in range(60):
            if (await admin.call("cron.status", {}))["running"] == 0:
                break
            await asyncio.sleep(1)
        cron = await _cron_report(admin, job["id"], args.cron_every * 1000, started_ms, ended_ms)
        tally.rss.append((loop.time() - started, rss_mb(pid)))
        lat = [ms for c in clients for ms in c.probes.values()]
        missed = sum(tally.probes_sent - len(c.probes) for c in clients)
        short = sum(1 for d in tally.probe_delivered if d < len(clients))
        errors = sum(c.error_frames for c in clients)
        for task in drains:
            task.cancel()
        log_errors = _logged_errors(gw.state_dir / "logs" / "gateway.log")
        stalls = _stalls(gw.state_dir / "logs" / "gateway.log")
        result = {
            "gateway": "remoteclaw", "minutes": args.minutes, "clients": args.clients,
            "connected": len(clients), "refused": len(refused), "refusals": sorted(set(refused))[:3],
            "connect_all_s": round(connect_s, 1), "run_s": round(run_s),
            "probes_sent": tally.probes_sent, "probe_frames_expected": tally.probes_sent * len(clients),
            "probe_frames_missed": missed, "probes_delivered_short": short,
            "fanout_p50_ms": _pct(lat, 0.5), "fanout_p99_ms": _pct(lat, 0.99),
            "runs": args.runs, "runs_ok": tally.runs_ok, "runs_bad": tally.runs_bad[:5],
            "node_invokes": len(tally.node_ms), "node_p50_ms": _pct(tally.node_ms, 0.5),
            "node_p99_ms": _pct(tally.node_ms, 0.99), "node_errors": tally.node_errors[:5],
            "health_p50_ms": _pct(tally.health_ms, 0.5), "health_p99_ms": _pct(tally.health_ms, 0.99),
            "sessions_list_p50_ms": _pct(tally.sessions_ms, 0.5),
            "sessions_list_p99_ms": _pct(tally.sessions_ms, 0.99),
            "error_frames": errors + len(tally.call_errors), "call_errors": tally.call_errors[:5],
            "log_errors": log_errors[:20], **stalls, **cron,
            "rss_idle_mb": round(rss_idle), "rss_samples_mb": [[round(t), round(mb, 1)] for t, mb in tally.rss],
            **_rss_verdict(tally.rss, run_s),
        }
        await asyncio.gather(admin.close(), probe.close())
        return result
    finally:
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
        node.stop()
        gw.stop(timeout=30)


async def soak_openclaw(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The comparable part against OpenClaw's gateway: the same crowd, RSS, ``health``/``sessions.list``."""
    target = OpenClawTarget(name="openclaw", state=work / "openclaw")
    target.prepare()
    proc, _ = await _launch(target, work / "openclaw.log")
    loop = asyncio.get_running_loop()
    tally = Tally()
    clients: list[SoakClient] = []
    try:
        rss_idle = tree_rss_mb(proc.pid)
        clients, refused, connect_s = await _soak_crowd(target.url, target.token, args.clients)
        probe = await SoakClient.join(target.url, target.token, "cli")
        assert isinstance(probe, SoakClient)
        started = loop.time()
        deadline = started + args.minutes * 60

        async def latency() -> None:
            for method, params, into in (("health", None, tally.health_ms),
                                         ("sessions.list", {"limit": 50}, tally.sessions_ms)):
                into.append(await probe.call_ms(uuid.uuid4().hex, method, params))

        async def rss() -> None:
            tally.rss.append((loop.time() - started, tree_rss_mb(proc.pid)))

        await asyncio.gather(_until(deadline, 1.0, latency), _until(deadline + 0.5, args.sample, rss))
        run_s = loop.time() - started
        alive = sum(1 for c in clients if c.ws.close_code is None)
        result = {
            "gateway": "openclaw", "minutes": args.minutes, "clients": args.clients, "connected": len(clients),
            "refused": len(refused), "refusals": sorted(set(refused))[:3], "connect_all_s": round(connect_s, 1),
            "still_connected": alive,
            "health_p50_ms": _pct(tally.health_ms, 0.5), "health_p99_ms": _pct(tally.health_ms, 0.99),
            "sessions_list_p50_ms": _pct(tally.sessions_ms, 0.5),
            "sessions_list_p99_ms": _pct(tally.sessions_ms, 0.99),
            "error_frames": sum(c.error_frames for c in clients) + probe.error_frames,
            "rss_idle_mb": round(rss_idle), "rss_samples_mb": [[round(t), round(mb, 1)] for t, mb in tally.rss],
            **_rss_verdict(tally.rss, run_s),
        }
        await probe.close()
        return result
    finally:
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
        stop_tree(proc)


def problems(result: dict[str, Any]) -> list[str]:
    """What a soak must not show: anything lost, any error answer, a firing missing, memory not flat."""
    found = []
    if result["refused"]:
        found.append(f"{result['refused']} clients refused")
    if result.get("probe_frames_missed"):
        found.append(f"{result['probe_frames_missed']} probe events lost")
    if result.get("probes_delivered_short"):
        found.append(f"{result['probes_delivered_short']} probes delivered to fewer sockets than connected")
    if result.get("error_frames"):
        found.append(f"{result['error_frames']} error frames: {result.get('call_errors')}")
    if "runs_ok" in result and result["runs_ok"] != result["runs"]:
        found.append(f"runs finished ok {result['runs_ok']} of {result['runs']}: {result['runs_bad']}")
    if result.get("log_errors"):
        found.append(f"{len(result['log_errors'])} error lines in the gateway's log: {result['log_errors'][:3]}")
    if result.get("node_errors"):
        found.append(f"node.invoke errors: {result['node_errors']}")
    if "cron_recorded" in result:
        if result["cron_recorded"] != result["cron_fired"]:
            found.append(f"cron fired {result['cron_fired']} times but cron.runs has {result['cron_recorded']}")
        if result["cron_recorded"] < result["cron_slots"] // 2:
            found.append(f"cron fired {result['cron_recorded']} times in {result['cron_slots']} periods")
        if (result["cron_late_max_ms"] or 0) > CRON_LATE_LIMIT_MS:
            found.append(f"a cron firing started {result['cron_late_max_ms'] / 1000:.1f} s late")
        if result["cron_finished"] != result["cron_recorded"] or result["cron_failed"]:
            found.append(f"cron runs unfinished or failed: {result['cron_recorded'] - result['cron_finished']} "
                         f"unfinished, {result['cron_failed']} failed")
    if result.get("rss_flat") is False:
        found.append(f"RSS grew {result['rss_growth_pct']} % after warm-up")
    return found


def summary(results: list[dict[str, Any]]) -> str:
    lines = []
    for r in results:
        samples = ", ".join(f"{mb:.0f}" for _, mb in r["rss_samples_mb"])
        lines.append(f"== {r['gateway']}: {r['minutes']} min, {r['connected']}/{r['clients']} clients "
                     f"(all in after {r['connect_all_s']} s)")
        if "fanout_p50_ms" in r:
            lines.append(f"   probe events: {r['probes_sent']} x {r['connected']} clients, "
                         f"{r['probe_frames_missed']} lost; fan-out p50 {r['fanout_p50_ms']} ms, "
                         f"p99 {r['fanout_p99_ms']} ms")
            lines.append(f"   agent runs: {r['runs_ok']}/{r['runs']} ok; node.invoke {r['node_invokes']} calls "
                         f"p50 {r['node_p50_ms']} ms, p99 {r['node_p99_ms']} ms, {len(r['node_errors'])} errors")
            lines.append(f"   cron every {r['cron_every_s']:g} s: {r['cron_recorded']} firings recorded "
                         f"({r['cron_fired']} fired, {r['cron_slots']} periods, {r['cron_coalesced']} coalesced), "
                         f"{r['cron_finished']} finished, lateness p50 {r['cron_late_p50_ms']} ms, "
                         f"p99 {r['cron_late_p99_ms']} ms, max {r['cron_late_max_ms']} ms")
        lines.append(f"   health p50 {r['health_p50_ms']} ms, p99 {r['health_p99_ms']} ms; sessions.list "
                     f"p50 {r['sessions_list_p50_ms']} ms, p99 {r['sessions_list_p99_ms']} ms; "
                     f"error frames {r['error_frames']}")
        if "loop_stalls" in r:
            lines.append(f"   event loop held > 0.5 s: {r['loop_stalls']} times, worst {r['loop_stall_worst_ms']} ms, "
                         f"{r['loop_stall_cpu_ms_total']} ms CPU in {r['loop_stall_ms_total']} ms held; "
                         f"seen at: {r['loop_stall_places']}")
        lines.append(f"   RSS MiB: idle {r['rss_idle_mb']}, then {samples}; after warm-up "
                     f"{r['rss_growth_pct']} % ({'flat' if r['rss_flat'] else 'NOT flat'})")
        for problem in problems(r) if r["gateway"] == "remoteclaw" else []:
            lines.append(f"   PROBLEM: {problem}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="length of the loaded phase (10)")
    p.add_argument("--clients", type=int, default=1000, help="WebSocket clients reading events (1000)")
    p.add_argument("--runs", type=int, default=100, help="stand-in agent runs over the run (100)")
    p.add_argument("--waves", type=int, default=5, help="bursts the runs are started in (5)")
    p.add_argument("--cron-every", type=int, default=3, help="seconds between cron firings (3)")
    p.add_argument("--sample", type=float, default=60.0, help="seconds between RSS samples (60)")
    p.add_argument("--quick", action="store_true", help="1 minute, 100 clients, 20 runs, RSS every 10 s")
    p.add_argument("--peer", action="store_true", help="also OpenClaw's gateway (needs scripts/install-openclaw)")
    p.add_argument("--json", type=Path, default=None, help="result file (default bench/.results/soak-<time>.json)")
    args = p.parse_args(argv)
    if args.quick:  # smaller defaults; an option given explicitly still wins
        given = set(argv if argv is not None else sys.argv[1:])
        for option, value in (("--minutes", 1.0), ("--clients", 100), ("--runs", 20), ("--sample", 10.0)):
            if option not in given:
                setattr(args, option[2:], value)
    return args


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="rc-soak-") as tmp:
        results = [await soak_remoteclaw(args, Path(tmp))]
        if args.peer:
            try:
                find_openclaw()
            except (FileNotFoundError, RuntimeError) as exc:
                print(f"peer skipped: {exc} (scripts/install-openclaw)", file=sys.stderr)
            else:
                results.append(await soak_openclaw(args, Path(tmp)))
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = asyncio.run(main_async(args))
    machine = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
               "python": platform.python_version(), "date": datetime.now(UTC).isoformat(timespec="seconds")}
    out = args.json or RESULTS / f"soak-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(orjson.dumps({"machine": machine, "args": vars(args) | {"json": str(out)}, "results": results,
                                  "problems": problems(results[0])}, option=orjson.OPT_INDENT_2))
    print(summary(results))
    print(f"results: {out}")
    return 1 if problems(results[0]) else 0


if __name__ == "__main__":
    sys.exit(main())
