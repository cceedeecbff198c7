"""Thousands of clients on one gateway (issue #28): connect time, ``health`` latency, event bytes, memory.

Run from the repo root (not part of the tests)::

    .venv/bin/python -m bench.clients_bench                       # 100, 1,000 and 5,000 clients; ~3 minutes
    .venv/bin/python -m bench.clients_bench --counts 100,1000 --scenarios reading

For each count a fresh gateway starts (SQLite, default config), five presence watchers connect first
(``client.mode`` ``webchat``, as OpenClaw's Control UI connects), then the crowd, in batches of 50 every
20 ms, each client with its own reader task and ``ping_interval=None``:

* ``reading``: CLI-mode clients (an agent run's MCP shim, a script) that read every frame, then each send
  one ``health`` at the same moment (p50/p99 of those).
  Then a real event fan-out: 20 ``hooks.tool.before`` calls (~1 KB each) from one watcher, each
  broadcast as ``hooks.tool`` to every client: time until every client has all 20, and the gateway's CPU
  time per delivered frame.
* ``stalled``: Control UI clients (``webchat`` mode: presence watchers) that stop reading right after
  ``hello-ok``: what a stuck tab or a paused phone does. ``health`` is timed from the five watchers
  meanwhile (20 calls each).

Measured: clients connected and refused, seconds until all are in, ``health`` p50/p99, event bytes per
connect (the crowd's own events, and what each watcher received per client that joined), and the
gateway's RSS before the crowd, with it, and 3 s after it left. Results go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Origin

from bench import report
from bench.gateway_bench import _launch
from bench.procs import stop_tree, tree_rss_mb
from bench.targets import OpenClawTarget, RemoteClawTarget, Target

SCOPES = ["operator.admin", "operator.read", "operator.write", "operator.approvals", "operator.pairing"]
BATCH, BATCH_PAUSE_S = 50, 0.02
T = TypeVar("T")
WATCHERS = 5
UI_CLIENT = {"id": "openclaw-control-ui", "mode": "webchat"}
"""How the watchers and stalled clients present themselves (OpenClaw's: ``test``; see ``main``)."""


@dataclass
class _Target(RemoteClawTarget):
    malloc: bool = False

    def env(self) -> dict[str, str]:
        env = super().env()
        if self.malloc:
            env["PYTHONMALLOC"] = "malloc"
        return env


class Client:
    """One WebSocket: logs in, then reads every frame (or stops reading) while counting event bytes."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.event_bytes = 0
        self.presence_bytes = 0
        self.fanout_seen = 0
        self.fanout_want = 0
        self.fanout_done = asyncio.Event()
        self.pending: dict[str, asyncio.Future[float]] = {}
        self.reader: asyncio.Task[None] | None = None

    @classmethod
    async def join(cls, url: str, token: str, mode: str, *, read: bool = True) -> Client:
        # max_queue=1: a client that stops reading stops the TCP stream soon after (backpressure).
        # A browser page served by the gateway itself sends its own origin (OpenClaw requires one of a UI).
        origin = url.replace("ws://", "http://").rstrip("/")
        ws = await connect(url, max_size=None, compression=None, ping_interval=None, open_timeout=120,
                           max_queue=None if read else 1, origin=Origin(origin) if mode != "cli" else None)
        await asyncio.wait_for(ws.recv(), 120)
        params = {"minProtocol": 3, "maxProtocol": 4, "role": "operator", "scopes": SCOPES, "auth": {"token": token},
                  "client": {"version": "bench", "platform": "linux",
                             **({"id": "cli", "mode": "cli"} if mode == "cli" else UI_CLIENT)}}
        await ws.send(orjson.dumps({"type": "req", "id": "c", "method": "connect", "params": params}).decode())
        while True:
            frame = orjson.loads(await asyncio.wait_for(ws.recv(), 120))
            if frame.get("type") == "res":
                break
        if not frame.get("ok"):
            await ws.close()
            raise ConnectionError(str(frame.get("error")))
        client = cls(ws)
        if read:
            client.reader = asyncio.create_task(client._read())
        return client

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                text = message if isinstance(message, str) else message.decode()
                if text.startswith('{"type":"event"'):
                    self._on_event(text)
                else:
                    self._on_response(orjson.loads(text))
        except Exception:
            pass

    def _on_event(self, text: str) -> None:
        """Count an event frame (matched on its text: decoding every one would cost the client too much)."""
        self.event_bytes += len(text)
        if text.startswith('{"type":"event","event":"presence"'):
            self.presence_bytes += len(text)
        elif text.startswith('{"type":"event","event":"hooks.tool"'):
            self.fanout_seen += 1
            if self.fanout_seen >= self.fanout_want:
                self.fanout_done.set()

    def _on_response(self, frame: dict[str, Any]) -> None:
        fut = self.pending.pop(str(frame.get("id")), None)
        if fut is not None and not fut.done():
            fut.set_result(time.perf_counter())

    async def health_ms(self, rid: str) -> float:
        return await self.call_ms(rid, "health")

    async def call_ms(self, rid: str, method: str, params: Any = None) -> float:
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        started = time.perf_counter()
        frame: dict[str, Any] = {"type": "req", "id": rid, "method": method}
        if params is not None:
            frame["params"] = params
        await self.ws.send(orjson.dumps(frame).decode())
        return (await asyncio.wait_for(fut, 120) - started) * 1000

    async def close(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
        try:
            await asyncio.wait_for(self.ws.close(), 5)
        except Exception:
            self.ws.transport.abort()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1) if ordered else float("nan")


async def _crowd(url: str, token: str, n: int, mode: str, read: bool, *, cls: type[Client] = Client
                 ) -> tuple[list[Client], list[str], float]:
    return await paced_joins(n, lambda: cls.join(url, token, mode, read=read), cls)


async def paced_joins(n: int, join: Callable[[], Awaitable[T]], kind: type[T]
                      ) -> tuple[list[T], list[str], float]:
    """``n`` clients joining in batches of 50 every 20 ms: those that got in (of type ``kind``), why the others
    did not, and the seconds it all took."""
    started = time.perf_counter()
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(join()))
        if (i + 1) % BATCH == 0:
            await asyncio.sleep(BATCH_PAUSE_S)
    results = await asyncio.gather(*tasks, return_exceptions=True)
    elapsed = time.perf_counter() - started
    clients = [r for r in results if isinstance(r, kind)]
    errors = [f"{type(r).__name__}: {r}"[:120] for r in results if not isinstance(r, kind)]
    return clients, errors, elapsed


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _fanout(sender: Client, readers: list[Client], pid: int, events: int = 20) -> dict[str, float]:
    """A real event to every reader: ``hooks.tool.before`` (what the MCP shim sends for each tool call) is
    broadcast as ``hooks.tool`` to every operator with write scope. ~1 KB of params, like a chat delta."""
    params = {"toolName": "message_send", "params": {"text": "x" * 1000}}
    for r in readers:
        r.fanout_want = r.fanout_seen + events
    cpu0, t0 = _cpu_s(pid), time.perf_counter()
    for i in range(events):
        await sender.call_ms(f"f{i}", "hooks.tool.before", params)
    await asyncio.wait_for(asyncio.gather(*(r.fanout_done.wait() for r in readers)), 120)
    elapsed, cpu = time.perf_counter() - t0, _cpu_s(pid) - cpu0
    frames = events * len(readers)
    return {"fanout_all_delivered_ms": round(elapsed * 1000), "fanout_frames": frames,
            "fanout_gateway_cpu_us_per_frame": round(cpu * 1e6 / max(1, frames), 1)}


async def _probe(client: Client, count: int = 100) -> list[float]:
    """``health`` one call at a time from one client: how responsive the gateway is with the crowd on it."""
    return [await client.health_ms(f"p{i}") for i in range(count)]


async def measure(n: int, scenario: str, workdir: Path, *, root: Path | None = None,
                  malloc: bool = False, openclaw: bool = False) -> dict[str, Any]:
    target: Target
    if openclaw:
        target = OpenClawTarget(name="openclaw", state=workdir / f"oc-{n}-{scenario}")
    else:
        target = _Target(name="remoteclaw", state=workdir / f"gw-{n}-{scenario}", malloc=malloc)
        if root is not None:
            target.root = root
    target.prepare()
    proc, _ = await _launch(target, workdir / f"gw-{n}-{scenario}.log")
    try:
        await asyncio.sleep(1.0)
        rss_before = tree_rss_mb(proc.pid)
        watchers = [await Client.join(target.url, target.token, "webchat") for _ in range(WATCHERS)]
        await asyncio.sleep(0.2)
        watched_before = sum(w.presence_bytes for w in watchers)
        read = scenario == "reading"
        crowd, errors, elapsed = await _crowd(target.url, target.token, n, "cli" if read else "webchat", read)
        await asyncio.sleep(1.0)  # the last presence deltas are out
        rss_with = tree_rss_mb(proc.pid)
        probe = await _probe(watchers[0])
        if read:
            latencies = list(await asyncio.gather(*(c.health_ms(f"h{i}") for i, c in enumerate(crowd))))
        else:
            latencies = []
            for i in range(20):
                latencies += await asyncio.gather(*(w.health_ms(f"h{i}") for w in watchers))
        crowd_events = sum(c.event_bytes for c in crowd) if read else None  # before the fan-out's own events
        # OpenClaw has no hooks.tool.* methods: the fan-out is ours only.
        fanout = await _fanout(watchers[0], crowd, proc.pid) if read and not openclaw else {}
        rss_peak = max(rss_with, tree_rss_mb(proc.pid))
        per_watcher = (sum(w.presence_bytes for w in watchers) - watched_before) / WATCHERS
        await asyncio.gather(*(c.close() for c in crowd))
        await asyncio.gather(*(w.close() for w in watchers))
        await asyncio.sleep(3.0)
        rss_after = tree_rss_mb(proc.pid)
        return {
            "gateway": target.name, "clients": n, "scenario": scenario, "connected": len(crowd), "refused": len(errors),
            "errors": sorted(set(errors))[:3], "connect_all_s": round(elapsed, 2),
            "health_p50_ms": _pct(latencies, 0.5), "health_p99_ms": _pct(latencies, 0.99),
            "probe_p50_ms": _pct(probe, 0.5), "probe_p99_ms": _pct(probe, 0.99),
            "crowd_event_bytes_per_client": (round(crowd_events / max(1, len(crowd)))
                                             if crowd_events is not None else None),
            "watcher_presence_bytes_per_connect": round(per_watcher / max(1, len(crowd)), 1),
            "rss_before_mb": round(rss_before), "rss_with_mb": round(rss_with), "rss_peak_mb": round(rss_peak),
            "rss_after_mb": round(rss_after), **fanout,
        }
    finally:
        stop_tree(proc)


def _table(rows: list[dict[str, Any]]) -> str:
    head = ("| clients | scenario | connected | all in | `health` p50 / p99 (one at a time) "
            "| `health` p50 / p99 (all at once) | crowd event bytes / client "
            "| watcher presence bytes / connect | RSS before → with → after |\n|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        crowd = "—" if r["crowd_event_bytes_per_client"] is None else f"{r['crowd_event_bytes_per_client']} B"
        lines.append(f"| {r['clients']:,} | {r['scenario']} | {r['connected']:,} ({r['refused']} refused) "
                     f"| {r['connect_all_s']} s | {r['probe_p50_ms']} / {r['probe_p99_ms']} ms "
                     f"| {r['health_p50_ms']} / {r['health_p99_ms']} ms | {crowd} "
                     f"| {r['watcher_presence_bytes_per_connect']} B "
                     f"| {r['rss_before_mb']} → {r['rss_with_mb']} → {r['rss_after_mb']} MB |")
    fan = [r for r in rows if r.get("fanout_frames")]
    if fan:
        lines += ["", "| clients | fan-out: 20 events to all, delivered in | gateway CPU per delivered frame |",
                  "|---|---|---|"]
        lines += [f"| {r['clients']:,} | {r['fanout_all_delivered_ms']} ms | "
                  f"{r['fanout_gateway_cpu_us_per_frame']} µs |" for r in fan]
    return "\n".join(lines)


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--counts", default="100,1000,5000")
    parser.add_argument("--scenarios", default="reading,stalled")
    parser.add_argument("--out", "--json", type=Path, default=None, help="also write the rows as JSON here")
    parser.add_argument("--root", type=Path, default=None,
                        help="run the gateway from another source tree (e.g. `git archive` of an older commit)")
    parser.add_argument("--openclaw", action="store_true",
                        help="measure OpenClaw's gateway instead (after scripts/install-openclaw)")
    parser.add_argument("--malloc", action="store_true",
                        help="run the gateway with PYTHONMALLOC=malloc (freed memory can go back to the system)")
    report.options(parser, {"counts": "100"}, json_flag=False)
    args = report.parse(parser, argv)
    # Each client is a socket here and one in the gateway (which inherits this limit).
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.openclaw:
        # OpenClaw wants a signed device identity from a Control UI; its presence goes to every client anyway.
        UI_CLIENT.update(id="test", mode="test")
    await run_grid(args, lambda n, scenario, tmp: measure(n, scenario, tmp, root=args.root, malloc=args.malloc,
                                                           openclaw=args.openclaw), _table, "clients-bench-")


async def run_grid(args: argparse.Namespace, measure_one: Callable[[int, str, Path], Awaitable[dict[str, Any]]],
                   table: Callable[[list[dict[str, Any]]], str], prefix: str) -> None:
    """Every count in ``args.counts`` with every scenario in ``args.scenarios``: each row printed as JSON as it
    comes, then the table (and the rows to ``args.out``)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        for n in (int(c) for c in args.counts.split(",")):
            for scenario in args.scenarios.split(","):
                row = await measure_one(n, scenario, Path(tmp))
                print(orjson.dumps(row).decode(), file=sys.stderr, flush=True)
                rows.append(row)
    print(table(rows))
    if args.out is not None:
        args.out.write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    asyncio.run(main())
