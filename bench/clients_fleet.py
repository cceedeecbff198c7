"""Ten thousand clients on one gateway (issue #45), from a load generator spread over several processes.

One Python process cannot hold 10,000 WebSocket clients that each read every frame and still time anything:
its own event loop becomes the bottleneck. Here the crowd is split over ``--procs`` worker processes, each with
its own loop, all driven in lock step by this one over pipes:

1. a fresh gateway starts (SQLite, default config);
2. every worker connects its share of the crowd (batches of 50, as ``bench/clients_bench.py`` does);
   ``watching`` clients present themselves as web chat pages (``client.mode: webchat``), so they watch
   presence; ``reading`` clients are CLI clients, with no presence;
3. every client sends ``health`` at the same moment (each worker starts at the same wall-clock instant); the
   burst's wall time, the gateway's CPU in it and the load generators' own CPU in it are kept beside the
   latencies (on one machine the crowd's clients compete with the gateway for the same cores);
4. ``watching`` only: one more page joins with a known display name, and each worker notes when every one of its
   clients has seen it in a ``presence`` event: the slowest worker's time is the presence change reaching all;
5. the gateway's RSS with the crowd on it, and what the crowd received in all.

The crowd's clients are ``bench.lean_ws`` sockets by default: a plain RFC 6455 client written to cost its load
generator little, because the generators share the gateway's cores and their CPU is inside every latency they
measure. ``--client websockets`` uses the websockets library's asyncio client instead (on one machine, 57-60 µs
of the load generator's CPU per call against 20 µs; 100-200 µs on a slower one).

Run from the repo root (not part of the tests)::

    .venv/bin/python -m bench.clients_fleet --counts 10000 --scenarios watching,reading --procs 4
    .venv/bin/python -m bench.clients_fleet --counts 1000 --openclaw     # OpenClaw's gateway, same clients
    .venv/bin/python -m bench.clients_fleet --counts 10000 --root /tmp/before   # a checkout from before a change

Results are printed as a table, and as JSON with ``--out``; docs/benchmarks.md has them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import uvloop

from bench.clients_bench import SCOPES, UI_CLIENT, Client, _cpu_s, _crowd, _pct, paced_joins, run_grid
from bench.gateway_bench import _launch
from bench.lean_ws import LeanSocket, open_socket
from bench.procs import stop_tree, tree_rss_mb
from bench.targets import OpenClawTarget, RemoteClawTarget, Target

WATCHER_IDS = {"webchat": "webchat-ui", "control-ui": "openclaw-control-ui"}
"""``--watchers``: the ``client.id`` the watching clients connect with (``client.mode`` is ``webchat`` for both)."""
PER_ADDRESS = 64
"""The gateway's default ``maxUnauthenticatedPerAddress``: the lean crowd keeps that many in their handshake."""
MARK = "fleet-probe-"
"""The display name the joining page of step 4 carries (its presence entry's ``host``), found in a frame's text."""


class FleetClient(Client):
    """A crowd client on the ``websockets`` library (``--client websockets``): counts every byte and notices the
    probe page's arrival in presence."""

    probe = ""
    """The display name to look for (set by the worker before step 4)."""

    def __init__(self, ws: Any) -> None:
        super().__init__(ws)
        self.saw_probe = asyncio.Event()

    def _on_event(self, text: str) -> None:
        super()._on_event(text)
        if self.probe and text.startswith('{"type":"event","event":"presence"') and self.probe in text:
            self.saw_probe.set()


class LeanClient:
    """A crowd client on ``bench.lean_ws`` (``--client lean``, the default): the same handshake, the same frames
    read and counted, at a small part of the load generator's CPU."""

    probe = b""
    """The display name to look for, as bytes (set by the worker before step 4)."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.sock: LeanSocket | None = None
        self.event_bytes = 0
        self.saw_probe = asyncio.Event()
        self.sent_at = 0.0
        self.answered_at = 0.0
        self.answer_ok = False
        self.on_answer: Callable[[], None] | None = None
        self._challenge: asyncio.Future[None] = loop.create_future()
        self._hello: asyncio.Future[dict[str, Any]] = loop.create_future()

    @classmethod
    async def join(cls, url: str, token: str, mode: str) -> LeanClient:
        client = cls()
        origin = url.replace("ws://", "http://").rstrip("/") if mode != "cli" else None
        client.sock = sock = await open_socket(url, client._on_text, origin=origin)

        async def answered(step: asyncio.Future[Any]) -> Any:
            await asyncio.wait([step, sock.closed], timeout=120, return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                raise ConnectionError(sock.why_closed() if sock.closed.done() else "no answer in 120 s")
            return step.result()

        await answered(client._challenge)
        params = {"minProtocol": 3, "maxProtocol": 4, "role": "operator", "scopes": SCOPES, "auth": {"token": token},
                  "client": {"version": "bench", "platform": "linux",
                             **({"id": "cli", "mode": "cli"} if mode == "cli" else UI_CLIENT)}}
        sock.send_text(orjson.dumps({"type": "req", "id": "c", "method": "connect", "params": params}))
        frame = await answered(client._hello)
        if not frame.get("ok"):
            sock.close()
            raise ConnectionError(str(frame.get("error")))
        return client

    def _on_text(self, data: bytes) -> None:
        if data.startswith(b'{"type":"event"'):
            if not self._challenge.done():  # connect.challenge, before anything else
                self._challenge.set_result(None)
                return
            self.event_bytes += len(data)
            if self.probe and data.startswith(b'{"type":"event","event":"presence"') and self.probe in data:
                self.saw_probe.set()
            return
        if not self._hello.done():
            self._hello.set_result(orjson.loads(data))
            return
        self.answered_at = time.perf_counter()  # the only call in flight: this is its answer
        self.answer_ok = orjson.loads(data).get("ok") is True
        if self.on_answer is not None:
            self.on_answer()

    def send(self, frame: bytes) -> None:
        assert self.sock is not None
        self.sent_at = time.perf_counter()
        self.sock.send_text(frame)

    async def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


async def _lean_crowd(url: str, token: str, n: int, mode: str, in_flight: int
                      ) -> tuple[list[LeanClient], list[str], float]:
    """``paced_joins``'s pace (batches of 50 every 20 ms), with lean clients, at most ``in_flight`` of them in their
    handshake at once.

    Why the cap: the whole crowd comes from one address, and the gateway lets 64 sockets from one address wait
    in their handshake (``gateway.maxUnauthenticatedPerAddress``); past that it drops the oldest that have been
    silent for 2 s. A load generator that falls behind its own crowd (it shares the gateway's cores) leaves
    challenges unanswered that long, and its clients were dropped as idle: the gateway defending itself
    against the benchmark's lag, not a limit of the gateway's.
    """
    gate = asyncio.Semaphore(in_flight)

    async def join() -> LeanClient:
        async with gate:
            return await LeanClient.join(url, token, mode)

    return await paced_joins(n, join, LeanClient)


async def _lean_burst(crowd: list[LeanClient]) -> list[float]:
    """Every client sends ``health`` (frames made beforehand); latencies in ms of those answered ``ok``."""
    frames = [orjson.dumps({"type": "req", "id": f"h{i}", "method": "health"}) for i in range(len(crowd))]
    left = len(crowd)
    done = asyncio.Event()

    def answered() -> None:
        nonlocal left
        left -= 1
        if left == 0:
            done.set()

    for client in crowd:
        client.answered_at, client.on_answer = 0.0, answered
    for client, frame in zip(crowd, frames, strict=True):
        client.send(frame)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), 120)
    return [(c.answered_at - c.sent_at) * 1000 for c in crowd if c.answered_at and c.answer_ok]


async def _worker(conn: multiprocessing.connection.Connection, url: str, token: str, count: int, mode: str,
                  lean: bool, in_flight: int) -> None:
    """One worker process's crowd, doing what the coordinator says, one step at a time."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    loop = asyncio.get_running_loop()
    crowd: list[Any] = []
    while True:
        step, arg = await loop.run_in_executor(None, conn.recv)
        if step == "join":
            if lean:
                crowd, errors, elapsed = await _lean_crowd(url, token, count, mode, in_flight)
            else:
                clients, errors, elapsed = await _crowd(url, token, count, mode, True, cls=FleetClient)
                crowd = [c for c in clients if isinstance(c, FleetClient)]
            conn.send({"connected": len(crowd), "errors": sorted(set(errors))[:3], "refused": len(errors),
                       "done_at": time.time(), "elapsed": elapsed})
        elif step == "health":
            await asyncio.sleep(max(0.0, arg - time.time()))  # every worker starts at the same instant
            cpu0 = time.process_time()
            if lean:
                latencies = await _lean_burst(crowd)
            else:
                gathered = await asyncio.gather(*(c.health_ms(f"h{i}") for i, c in enumerate(crowd)),
                                                return_exceptions=True)
                latencies = [x for x in gathered if isinstance(x, float)]
            conn.send({"latencies": latencies, "done_at": time.time(), "cpu_s": time.process_time() - cpu0})
        elif step == "watch":
            FleetClient.probe = arg
            LeanClient.probe = arg.encode()
            conn.send("ready")
        elif step == "seen":
            try:
                await asyncio.wait_for(asyncio.gather(*(c.saw_probe.wait() for c in crowd)), 60)
                conn.send({"all_at": time.time(), "missing": 0})
            except TimeoutError:
                conn.send({"all_at": time.time(), "missing": sum(not c.saw_probe.is_set() for c in crowd)})
        elif step == "bytes":
            conn.send(sum(c.event_bytes for c in crowd))
        elif step == "close":
            await asyncio.gather(*(c.close() for c in crowd), return_exceptions=True)
            conn.send("closed")
            return


def _worker_main(conn: multiprocessing.connection.Connection, url: str, token: str, count: int, mode: str,
                 ui_client: dict[str, str], lean: bool, in_flight: int) -> None:
    UI_CLIENT.clear()
    UI_CLIENT.update(ui_client)  # a spawned worker imports the module afresh: it gets the coordinator's choice
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:  # the gateway's loop, for the crowd too
        runner.run(_worker(conn, url, token, count, mode, lean, in_flight))


class Fleet:
    """The worker processes and the pipes that drive them."""

    def __init__(self, url: str, token: str, count: int, mode: str, procs: int, *, lean: bool) -> None:
        ctx = multiprocessing.get_context("spawn")  # nothing of this process's loop or sockets is inherited
        shares = [count // procs + (1 if i < count % procs else 0) for i in range(procs)]
        self.pipes: list[multiprocessing.connection.Connection] = []
        self.procs: list[Any] = []
        for share in shares:
            ours, theirs = ctx.Pipe()
            args = (theirs, url, token, share, mode, dict(UI_CLIENT), lean, max(1, PER_ADDRESS // procs))
            proc = ctx.Process(target=_worker_main, args=args, daemon=True)
            proc.start()
            self.pipes.append(ours)
            self.procs.append(proc)

    async def ask(self, step: str, arg: Any = None) -> list[Any]:
        for pipe in self.pipes:
            pipe.send((step, arg))
        loop = asyncio.get_running_loop()
        return list(await asyncio.gather(*(loop.run_in_executor(None, pipe.recv) for pipe in self.pipes)))

    def stop(self) -> None:
        for proc in self.procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()


def _profiler(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling the gateway (its folded stacks, ``--format raw``) until it is sent SIGINT."""
    out.parent.mkdir(parents=True, exist_ok=True)
    spy = subprocess.Popen([os.environ.get("PY_SPY", "py-spy"), "record", "--pid", str(pid), "--rate", "250",
                            "--format", "raw", "--gil", "--nonblocking", "--output", str(out)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # it attaches before the burst (which starts a second after it is asked for)
    return spy


async def measure(n: int, scenario: str, workdir: Path, *, procs: int, openclaw: bool = False,
                  profile: Path | None = None, lean: bool = True, root: Path | None = None) -> dict[str, Any]:
    target: Target
    if openclaw:
        target = OpenClawTarget(name="openclaw", state=workdir / f"oc-{n}-{scenario}")
    elif root is not None:
        target = RemoteClawTarget(name="remoteclaw", state=workdir / f"gw-{n}-{scenario}", root=root)
    else:
        target = RemoteClawTarget(name="remoteclaw", state=workdir / f"gw-{n}-{scenario}")
    target.prepare()
    proc, _ = await _launch(target, workdir / f"gw-{n}-{scenario}.log")
    fleet = None
    try:
        await asyncio.sleep(1.0)
        rss_before = tree_rss_mb(proc.pid)
        mode = "webchat" if scenario == "watching" else "cli"
        fleet = Fleet(target.url, target.token, n, mode, procs, lean=lean)
        started = time.time()
        joined = await fleet.ask("join")
        connect_all_s = max(j["done_at"] for j in joined) - started
        connected = sum(j["connected"] for j in joined)
        await asyncio.sleep(2.0)  # the last presence deltas are out
        rss_with = tree_rss_mb(proc.pid)
        spy = _profiler(proc.pid, profile / f"health-{n}-{scenario}.txt") if profile else None
        cpu0 = _cpu_s(proc.pid)
        burst_at = time.time() + 1.0
        shares = await fleet.ask("health", burst_at)
        latencies = [x for share in shares for x in share["latencies"]]
        health_cpu_s = _cpu_s(proc.pid) - cpu0  # the gateway's own share of the burst
        # The load generators share the machine: what they spent sending and reading the burst is time the
        # gateway did not have, and it is in every latency they measure.
        loadgen_cpu_s = sum(share["cpu_s"] for share in shares)
        burst_s = max(share["done_at"] for share in shares) - burst_at
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(30)
        presence_s = None
        missing = None
        if scenario == "watching":
            probe = f"{MARK}{int(time.time() * 1000)}"
            await fleet.ask("watch", probe)
            UI_CLIENT["displayName"] = probe  # its presence entry's host
            try:
                joined_at = time.time()
                page = await Client.join(target.url, target.token, "webchat")
            finally:
                UI_CLIENT.pop("displayName", None)
            seen = await fleet.ask("seen")
            presence_s = round(max(s["all_at"] for s in seen) - joined_at, 2)
            missing = sum(s["missing"] for s in seen)
            await page.close()
        received = sum(await fleet.ask("bytes"))
        rss_peak = max(rss_with, tree_rss_mb(proc.pid))
        await fleet.ask("close")
        return {"gateway": target.name, "clients": n, "scenario": scenario, "procs": procs,
                "load_client": "lean" if lean else "websockets",
                "client_id": UI_CLIENT["id"] if scenario == "watching" else "cli",
                "connected": connected, "refused": sum(j["refused"] for j in joined),
                "errors": sorted({e for j in joined for e in j["errors"]})[:3],
                "connect_all_s": round(connect_all_s, 1),
                "health_p50_ms": _pct(latencies, 0.5), "health_p99_ms": _pct(latencies, 0.99),
                "health_answered": len(latencies),
                "health_gateway_cpu_us": round(health_cpu_s * 1e6 / max(1, len(latencies)), 1),
                "health_burst_s": round(burst_s, 3), "health_gateway_cpu_s": round(health_cpu_s, 2),
                "health_loadgen_cpu_s": round(loadgen_cpu_s, 4),  # a small crowd's burst is well under 10 ms
                "presence_to_all_s": presence_s, "presence_missing": missing,
                "received_mb": round(received / 1e6, 1), "rss_before_mb": round(rss_before),
                "rss_with_mb": round(rss_with), "rss_peak_mb": round(rss_peak)}
    finally:
        if fleet is not None:
            fleet.stop()
        stop_tree(proc)


def _table(rows: list[dict[str, Any]]) -> str:
    lines = ["| gateway | clients | scenario | connected | time to connect all | `health` all at once p50 / p99 "
             "| gateway CPU per `health` | burst: wall, gateway CPU, load generators' CPU | presence to all | received "
             "| RSS before → with |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        presence = "—" if r["presence_to_all_s"] is None else f"{r['presence_to_all_s']} s"
        if r.get("presence_missing"):
            presence += f" ({r['presence_missing']} never saw it)"
        lines.append(f"| {r['gateway']} | {r['clients']:,} | {r['scenario']} ({r['client_id']}) | {r['connected']:,} "
                     f"({r['refused']} refused) | {r['connect_all_s']} s | {r['health_p50_ms']} / "
                     f"{r['health_p99_ms']} ms | {r['health_gateway_cpu_us']} µs | {r['health_burst_s']} s, "
                     f"{r['health_gateway_cpu_s']} s, {r['health_loadgen_cpu_s']} s | {presence} "
                     f"| {r['received_mb']} MB | {r['rss_before_mb']} → {r['rss_with_mb']} MiB |")
    return "\n".join(lines)


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--counts", default="1000,10000")
    parser.add_argument("--scenarios", default="watching,reading")
    parser.add_argument("--procs", type=int, default=4, help="load-generator processes (4)")
    parser.add_argument("--openclaw", action="store_true", help="OpenClaw's gateway (after scripts/install-openclaw)")
    parser.add_argument("--watchers", choices=sorted(WATCHER_IDS), default="webchat",
                        help="who the watching clients say they are: our web chat's pages (deltas), or OpenClaw's "
                             "Control UI (the bounded list, on a longer window)")
    parser.add_argument("--client", choices=("lean", "websockets"), default="lean",
                        help="the crowd's WebSocket client: bench.lean_ws (cheap for the load generator; default) "
                             "or the websockets library's asyncio client")
    parser.add_argument("--root", type=Path, default=None,
                        help="run the gateway from another checkout (e.g. before a change)")
    parser.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    parser.add_argument("--profile", type=Path, default=None,
                        help="py-spy the gateway during the health burst; folded stacks into this folder "
                             "(py-spy on PATH, or PY_SPY=/path/to/py-spy)")
    args = parser.parse_args(argv)
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the gateway inherits it
    UI_CLIENT["id"] = WATCHER_IDS[args.watchers]
    if args.openclaw:
        UI_CLIENT.update(id="test", mode="test")  # OpenClaw wants a signed device from a real Control UI
    await run_grid(args, lambda n, scenario, tmp: measure(n, scenario, tmp, procs=args.procs, openclaw=args.openclaw,
                                                   profile=args.profile, lean=args.client == "lean",
                                                   root=args.root),
                   _table, "clients-fleet-")


if __name__ == "__main__":
    asyncio.run(main())
