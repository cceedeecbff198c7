"""Two real gateway replicas on one PostgreSQL database and one Redis: events cross, turns never overlap.

Each test gets a fresh database and its own Redis channel prefix, so parallel tests never meet. The
agent CLI is ``tests/support/fake_cli.py`` behind a small wrapper that records when each CLI process
started and ended (``spans.log``), which is what "never at the same time" is checked against.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
from redis.asyncio import Redis

from gateway.runs.recovery import RETRY_NOTICE
from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess, free_port
from tests.support.postgres import pg_url  # noqa: F401
from tests.support.procs import host_pid
from tests.support.requires import require
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

REDIS_URL = "redis://127.0.0.1:6379/0"

WRAPPER = """\
import json, os, subprocess, sys, time
def note(**kw):
    with open(os.environ["SPAN_LOG"], "a") as fh:
        fh.write(json.dumps({"key": os.environ.get("REMOTECLAW_SESSION_KEY"), "replica": os.environ["REPLICA"],
                             **kw}) + "\\n")
note(phase="start", t=time.time())
rc = subprocess.call([sys.executable, FAKE_CLI, *sys.argv[1:]])
note(phase="end", t=time.time())
sys.exit(rc)
""".replace("FAKE_CLI", repr(FAKE_CLI))


class Cluster:
    """Replicas ``a`` and ``b`` sharing a database, a Redis channel and the log files."""

    def __init__(self, root: Path, db_url: str, *, lease_ttl_ms: int | None = None) -> None:
        self.root = root
        self.prefix = f"rc-test-{secrets.token_hex(6)}"
        self.spans = root / "spans.log"
        self.cli_log = root / "cli.log"
        wrapper = root / "agent_cli.py"
        wrapper.write_text(WRAPPER)
        cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, str(wrapper)]}],
                          "defaults": {"sandbox": {"binds": [{"path": str(wrapper)}, {"path": FAKE_CLI}]}}}}  # shown
        env = {"REMOTECLAW_DATABASE_URL": db_url, "REMOTECLAW_REDIS_URL": REDIS_URL,
               "REMOTECLAW_REDIS_PREFIX": self.prefix, "SPAN_LOG": str(self.spans), "FAKE_CLI_LOG": str(self.cli_log)}
        if lease_ttl_ms:
            env["REMOTECLAW_LEASE_TTL_MS"] = str(lease_ttl_ms)
        self.a = GatewayProcess(root / "a", config=cfg, env={**env, "REPLICA": "a"})
        self.b = GatewayProcess(root / "b", config=cfg, env={**env, "REPLICA": "b"})

    def start(self) -> Cluster:
        self.a.start(30)
        self.b.start(30)
        return self

    def stop(self) -> None:
        self.a.stop()
        self.b.stop()

    async def wait_subscribed(self, n: int = 2) -> None:
        """Both replicas listen on the channel (pub/sub delivers only to current subscribers)."""
        r = Redis.from_url(REDIS_URL)
        try:
            for _ in range(200):
                (_, count), = await r.pubsub_numsub(f"{self.prefix}:events")
                if count >= n:
                    return
                await asyncio.sleep(0.05)
            raise AssertionError(f"only {count} of {n} replicas subscribed to {self.prefix}:events")
        finally:
            await r.aclose()

    def spans_of(self, key: str) -> list[dict]:
        if not self.spans.exists():
            return []
        return [x for x in map(json.loads, self.spans.read_text().splitlines()) if x["key"] == key]

    def cli_calls(self, key: str) -> list[dict]:
        if not self.cli_log.exists():
            return []
        lines = map(json.loads, self.cli_log.read_text().splitlines())
        return [x for x in lines if x["env"].get("REMOTECLAW_SESSION_KEY") == key]


@pytest.fixture
def cluster(tmp_path: Path, pg_url: str) -> Iterator[Cluster]:  # noqa: F811
    c = Cluster(tmp_path, pg_url).start()
    yield c
    c.stop()


@pytest.fixture
async def clients(cluster: Cluster) -> AsyncIterator[tuple[RawClient, RawClient]]:
    await cluster.wait_subscribed()
    a = await operator(cluster.a.url, cluster.a.token or "")
    b = await operator(cluster.b.url, cluster.b.token or "")
    yield a, b
    await a.close()
    await b.close()


async def send(c: RawClient, key: str, text: str) -> dict:
    return await c.call("chat.send", {"sessionKey": key, "message": text, "idempotencyKey": str(uuid.uuid4())})


async def wait(c: RawClient, run_id: str, ms: int = 20000) -> dict:
    return await c.call("agent.wait", {"runId": run_id, "timeoutMs": ms}, timeout=ms / 1000 + 5)


async def run_events(c: RawClient, run_id: str, timeout: float = 15) -> list[dict]:
    """Every ``agent``/``chat`` event of ``run_id`` up to its lifecycle end, in order."""
    out: list[dict] = []
    async with asyncio.timeout(timeout):
        while True:
            ev = await c.events.get()
            if ev["event"] not in ("agent", "chat") or ev["payload"].get("runId") != run_id:
                continue
            out.append(ev)
            p = ev["payload"]
            if ev["event"] == "agent" and p["stream"] == "lifecycle" and p["data"]["phase"] in ("end", "error"):
                return out



def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def lease_rows(db_url: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(db_url)
    try:
        return await conn.fetch("SELECT session_key, holder, expires_at FROM session_leases")
    finally:
        await conn.close()


async def test_events_of_a_run_on_a_reach_an_operator_on_b(cluster: Cluster, clients: tuple, pg_url: str) -> None:  # noqa: F811
    a, b = clients
    key = "agent:main:scale:events"
    res = await send(a, key, "sent:hello from a")
    on_b, on_a = await asyncio.gather(run_events(b, res["runId"]), run_events(a, res["runId"]))
    kinds = [(e["event"], e["payload"].get("stream") or e["payload"].get("state")) for e in on_b]
    assert kinds[0] == ("agent", "lifecycle") and on_b[0]["payload"]["data"]["phase"] == "start"
    assert ("agent", "tool") in kinds
    final = [e["payload"] for e in on_b if e["event"] == "chat" and e["payload"]["state"] == "final"]
    assert len(final) == 1 and final[0]["message"]["text"] == "hello from a"
    assert on_b[-1]["payload"]["data"]["result"]["status"] == "ok"
    # The origin replica's own operator sees each event once: its Redis echo is skipped.
    assert [e["payload"] for e in on_a] == [e["payload"] for e in on_b]
    assert cluster.spans_of(key)[0]["replica"] == "a"
    await asyncio.sleep(0.3)  # nothing else (a duplicate) trails behind
    late = [a.events.get_nowait() for _ in range(a.events.qsize())]
    assert not [e for e in late if (e.get("payload") or {}).get("runId") == res["runId"]]
    assert await lease_rows(pg_url) == []  # released at the end of the turn


async def test_turns_of_one_session_never_overlap_across_replicas(cluster: Cluster, clients: tuple) -> None:
    a, b = clients
    key = "agent:main:scale:serial"
    first = await send(a, key, "sleep:2.5 one")
    await until(lambda: cluster.spans_of(key))  # a's CLI is running now
    second = await send(b, key, "sleep:0.2 two")
    third = await send(b, key, "three")
    # b waits for the lease and keeps collecting the session's messages into its next turn.
    assert second["status"] == "accepted" and third["status"] == "queued" and third["runId"] == second["runId"]
    assert (await wait(b, second["runId"], 300))["status"] == "timeout"  # still waiting on a's lease
    r1, r2 = await wait(a, first["runId"]), await wait(b, second["runId"])
    assert r1["status"] == r2["status"] == "ok", (r1, r2)
    spans = cluster.spans_of(key)
    starts = {s["replica"]: s["t"] for s in spans if s["phase"] == "start"}
    ends = {s["replica"]: s["t"] for s in spans if s["phase"] == "end"}
    assert set(starts) == set(ends) == {"a", "b"}
    assert starts["b"] >= ends["a"], spans  # b's CLI started only after a's had exited
    prompt = cluster.cli_calls(key)[-1]["prompt"]
    assert "two" in prompt and "three" in prompt


async def test_agent_wait_on_b_for_a_run_held_by_a(cluster: Cluster, clients: tuple) -> None:
    a, b = clients
    key = "agent:main:scale:wait"
    res = await send(a, key, "sleep:1.5 waited for")
    await until(lambda: cluster.spans_of(key))  # a's CLI is running now
    # Still running on a: b says "not yet" instead of calling the run lost.
    assert await wait(b, res["runId"], 200) == {"runId": res["runId"], "sessionKey": key, "status": "timeout"}
    on_a, on_b = await asyncio.gather(wait(a, res["runId"]), wait(b, res["runId"]))
    assert on_a["status"] == "ok" and on_a["reply"] == "echo: sleep:1.5 waited for", on_a
    assert on_b == on_a  # b's answer is the result carried by a's final event
    after = await wait(b, res["runId"], 0)  # once finished, b answers from the database row
    assert (after["status"], after["reply"], after["runId"]) == ("ok", on_a["reply"], res["runId"])
    assert [s["replica"] for s in cluster.spans_of(key)] == ["a", "a"]  # one CLI run, on a


async def test_chat_abort_sent_to_b_stops_a_turn_running_on_a(cluster: Cluster, clients: tuple,
                                                              pg_url: str) -> None:  # noqa: F811
    a, b = clients
    key = "agent:main:scale:abort"
    res = await send(a, key, "sleep:30 long job")
    await until(lambda: cluster.cli_calls(key))
    call = cluster.cli_calls(key)[0]
    cli_pid = host_pid(call["pid"], "REMOTECLAW_RUN_ID=" + call["env"]["REMOTECLAW_RUN_ID"])
    try:
        out = await b.call("chat.abort", {"sessionKey": key})
        # b runs nothing itself, but reports the run it had a stop: the database shows it held by a.
        assert out == {"ok": True, "aborted": True, "runIds": [res["runId"]], "sessionKey": key,
                       "forwarded": True}, out
        on_a, on_b = await asyncio.gather(run_events(a, res["runId"]), run_events(b, res["runId"]))
        for events in (on_a, on_b):
            end = events[-1]["payload"]
            assert end["data"]["phase"] == "error" and end["data"]["status"] == "aborted", end
            assert end["data"]["result"]["status"] == "error" and end["data"]["result"]["error"] == "aborted by request"
            states = [e["payload"]["state"] for e in events if e["event"] == "chat"]
            assert states[-1] == "aborted"
        waited = await wait(b, res["runId"])
        assert waited["status"] == "error" and waited["error"] == "aborted by request", waited
        await until(lambda: not _alive(cli_pid), 5)  # the CLI on a was stopped, as by a local abort
        assert await lease_rows(pg_url) == []
        assert (await wait(b, (await send(b, key, "again"))["runId"]))["reply"] == "echo: again"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(cli_pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie (exited, not yet reaped) counts as stopped
        if Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z"):
            return False
    return True


async def test_a_killed_replicas_turns_are_adopted_by_the_survivor_once_its_heartbeat_stops(
        tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    """Killing ``a`` does not disturb ``b``'s turn; ``b`` then answers ``a``'s interrupted and queued turns."""
    cluster = Cluster(tmp_path, pg_url, lease_ttl_ms=2000).start()
    cli_pid: int | None = None
    try:
        await cluster.wait_subscribed()
        a = await operator(cluster.a.url, cluster.a.token or "")
        b = await operator(cluster.b.url, cluster.b.token or "")
        key, other = "agent:main:scale:killed", "agent:main:scale:survivor"
        first = await send(a, key, "sleep:3 long job")
        mine = await send(b, other, "sleep:4 on b")
        await until(lambda: cluster.cli_calls(key) and cluster.cli_calls(other))
        queued = await send(a, key, "queued behind")
        call = cluster.cli_calls(key)[0]
        cli_pid = host_pid(call["pid"], "REMOTECLAW_RUN_ID=" + call["env"]["REMOTECLAW_RUN_ID"])
        rows = {r["session_key"]: r for r in await lease_rows(pg_url)}
        assert rows[key]["holder"].startswith((await a.call("status"))["replicaId"])
        await a.close()
        cluster.a.stop(signal.SIGKILL)  # as if its machine died: no chance to release or hand over anything
        with contextlib.suppress(ProcessLookupError):  # a sandboxed run dies with its gateway (bwrap's
            os.kill(cli_pid, signal.SIGKILL)           # --die-with-parent); an unsandboxed one is killed here
        cli_pid = None
        survivor = await wait(b, mine["runId"])
        assert survivor["status"] == "ok" and survivor["reply"] == "echo: sleep:4 on b", survivor
        # Both of a's messages wait on b for the dead holder's lease, so they make one turn, in order.
        retried = await wait(b, first["runId"], 30000)
        assert retried["status"] == "ok" and retried["startedAt"] >= rows[key]["expires_at"], retried
        assert retried["reply"].index("sleep:3 long job") < retried["reply"].index("queued behind"), retried
        joined = await wait(b, queued["runId"], 30000)
        assert first["runId"] in joined.get("error", ""), joined
        assert [x["replica"] for x in cluster.spans_of(key) if x["phase"] == "start"] == ["a", "b"]
        assert [x["replica"] for x in cluster.spans_of(other) if x["phase"] == "start"] == ["b"]
        history = await b.call("chat.history", {"sessionKey": key, "limit": 50})
        assert sum(RETRY_NOTICE in m.get("text", "") for m in history["messages"]) == 1
        status = await b.call("status", {})
        assert status["adoptedFromReplicas"]["runs"] == 2
        await b.close()
    finally:
        if cli_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(cli_pid, signal.SIGKILL)
        cluster.stop()


async def test_redis_down_at_start_the_gateway_still_serves(tmp_path: Path) -> None:
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    dead = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    with GatewayProcess(tmp_path / "gw", config=cfg, env={"REMOTECLAW_REDIS_URL": dead}) as gw:
        c = await operator(gw.url, gw.token or "")
        res = await send(c, "agent:main:scale:noredis", "still here")
        events = await run_events(c, res["runId"])
        assert events[-1]["payload"]["data"]["result"]["reply"] == "echo: still here"
        assert (await c.call("health"))["ok"] is True
        await c.close()
        log = (gw.state_dir / "logs" / "gateway.log").read_text()
        assert "Redis unavailable" in log and dead in log


def start_redis(port: int, root: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(root)], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return proc
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("private redis-server did not start")


async def test_redis_outage_mid_flight_then_events_cross_again(tmp_path: Path) -> None:
    require(shutil.which("redis-server") is not None, "redis-server is not installed")
    port = free_port()
    redis_proc = start_redis(port, tmp_path)
    url = f"redis://127.0.0.1:{port}/0"
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    env = {"REMOTECLAW_REDIS_URL": url}  # each replica on its own SQLite: only events are shared here
    a = GatewayProcess(tmp_path / "a", config=cfg, env=env).start()
    b = GatewayProcess(tmp_path / "b", config=cfg, env=env).start()
    try:
        async def subscribers() -> int:
            r = Redis.from_url(url)
            try:
                return (await r.pubsub_numsub("remoteclaw:events"))[0][1]
            finally:
                await r.aclose()

        async def until_subscribed() -> None:
            for _ in range(300):
                with contextlib.suppress(OSError, ConnectionError):
                    if await subscribers() == 2:
                        return
                await asyncio.sleep(0.05)
            raise AssertionError("replicas did not (re)subscribe")

        await until_subscribed()
        ca = await operator(a.url, a.token or "")
        cb = await operator(b.url, b.token or "")
        redis_proc.terminate()
        redis_proc.wait(10)
        # Redis gone: the replica keeps running turns and its own operators keep their events.
        res = await send(ca, "agent:main:scale:outage", "while redis is away")
        events = await run_events(ca, res["runId"])
        assert events[-1]["payload"]["data"]["result"]["reply"] == "echo: while redis is away"
        assert a.wait_healthy(2)["ok"] is True
        redis_proc = start_redis(port, tmp_path)
        await until_subscribed()  # both replicas came back on their own
        res = await send(ca, "agent:main:scale:outage", "redis is back")
        on_b = await run_events(cb, res["runId"])
        assert on_b[-1]["payload"]["data"]["result"]["reply"] == "echo: redis is back"
        await ca.close()
        await cb.close()
    finally:
        a.stop()
        b.stop()
        redis_proc.kill()
        redis_proc.wait()


async def test_a_turn_whose_lease_was_taken_over_is_stopped(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    env = {"REMOTECLAW_DATABASE_URL": pg_url, "REMOTECLAW_LEASE_TTL_MS": "1500", "FAKE_CLI_LOG": str(tmp_path / "c")}
    with GatewayProcess(tmp_path / "gw", config=cfg, env=env) as gw:
        c = await operator(gw.url, gw.token or "")
        key = "agent:main:scale:stolen"
        res = await send(c, key, "sleep:20 long job")

        async def running() -> bool:  # the turn's lease held and its CLI started (not a probe of the CLI's)
            held = any(r["session_key"] == key for r in await lease_rows(pg_url))
            return held and any("long job" in line for line in _lines(tmp_path / "c"))

        await until(running, 30, "the turn to hold its lease and run")
        conn = await asyncpg.connect(pg_url)
        try:  # what a replica that wrongly judged the lease expired would have done
            stolen = await conn.execute("UPDATE session_leases SET holder = 'other/replica' WHERE session_key = $1",
                                        key)
        finally:
            await conn.close()
        assert stolen == "UPDATE 1", stolen
        out = await wait(c, res["runId"], 30000)  # stopped within a renewal (0.5 s) when the machine is not loaded
        assert out["status"] == "error" and "lease" in out["error"], out
        assert [r["holder"] for r in await lease_rows(pg_url)] == ["other/replica"]  # not deleted by the loser
        await c.close()


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
async def test_lease_statements(engine: str, tmp_path: Path) -> None:
    """Take / refuse / re-take / take over when expired / renew / release, on both engines."""
    from gateway.store import Database
    from gateway.store.leases import LeaseRepo
    from tests.support.postgres import create_database, drop_database

    pg = await create_database() if engine == "postgresql" else None
    db = Database(pg.replace("postgresql://", "postgresql+asyncpg://") if pg else f"sqlite+aiosqlite:///{tmp_path}/l.db")
    try:
        await db.migrate()

        async def acquire(holder: str, now: int) -> bool:
            async with db.session() as s:
                return await LeaseRepo.acquire(s, "k", holder, now_ms=now, ttl_ms=100)

        assert await acquire("h1", 1000) is True
        assert await acquire("h2", 1050) is False  # held and not expired
        assert await acquire("h1", 1060) is True  # the holder may take it again
        assert await acquire("h2", 1200) is True  # expired: taken over
        async with db.session() as s:
            assert await LeaseRepo.renew(s, "k", "h1", now_ms=1200, ttl_ms=100) is False
            assert await LeaseRepo.release(s, "k", "h1") is False  # the old holder cannot remove it
            assert (await LeaseRepo.get(s, "k")).holder == "h2"  # type: ignore[union-attr]
            assert await LeaseRepo.renew(s, "k", "h2", now_ms=1250, ttl_ms=100) is True
            assert await LeaseRepo.release(s, "k", "h2") is True
            assert await LeaseRepo.get(s, "k") is None
    finally:
        await db.close()
        if pg:
            await drop_database(pg)


async def test_session_subscriptions_hear_changes_made_on_the_other_replica(
        cluster: Cluster, clients: tuple) -> None:
    """``sessions.changed`` and ``session.message`` reach a subscriber on a for a turn and a patch on b, and
    once each: every replica derives them from the broadcasts, but only for its own subscribers."""
    a, b = clients
    key = "agent:main:scale:subscribed"
    await a.call("sessions.subscribe", {})
    await a.call("sessions.messages.subscribe", {"key": key})
    res = await send(b, key, "hello from b")
    await wait(b, res["runId"])
    await b.call("sessions.patch", {"key": key, "label": "seen from a"})
    got: list[dict] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(3):
            while True:
                ev = await a.events.get()
                if ev["event"] in ("sessions.changed", "session.message"):
                    got.append(ev)
    messages = [(e["payload"]["message"]["role"], e["payload"]["message"]["text"]) for e in got
                if e["event"] == "session.message"]
    assert messages == [("user", "hello from b"), ("assistant", "echo: hello from b")]
    changed = [e["payload"].get("reason") or e["payload"].get("phase") for e in got if e["event"] == "sessions.changed"]
    assert changed.count("patch") == 1 and changed.count("start") == 1 and changed.count("end") == 1, changed
    assert not [e for e in await _drain(b) if e["event"] in ("sessions.changed", "session.message")]


async def _drain(c: RawClient) -> list[dict]:
    out = []
    while not c.events.empty():
        out.append(c.events.get_nowait())
    return out
