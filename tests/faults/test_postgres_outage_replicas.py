"""PostgreSQL away from two replicas for longer than a lease lifetime: when it is back, neither takes the other's turn.

Replicas ``a`` and ``b`` share a private PostgreSQL (``tests/support/private_services.py``) with a short lease
lifetime (``REMOTECLAW_LEASE_TTL_MS`` 3 s, so a heartbeat every second). ``a`` runs a turn; the server is stopped
as a crash stops it for five seconds, longer than a lifetime, so every replica's last heartbeat in the database is
stale when it comes back. Being cut off from the database is not being dead: ``b`` must not adopt ``a``'s running
turn (which would explain it as interrupted and run it a second time) nor mark ``a``'s running cron job
interrupted. What is checked: the turn is answered once, with no restart notice; ``b`` adopted nothing; the cron
job's firing is one run, ``ok``.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from pathlib import Path

import asyncpg
import pytest

from gateway.runs.recovery import INTERRUPTED_NOTICE, RETRY_NOTICE
from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.private_services import PrivatePostgres, private_pg  # noqa: F401
from tests.support.waiting import until
from tests.support.ws import operator

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

TTL_MS = 3000


async def test_an_outage_longer_than_a_lease_lifetime_makes_no_replica_adopt_a_live_ones_turns(
        tmp_path: Path, private_pg: PrivatePostgres) -> None:  # noqa: F811
    pg = private_pg
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    env = {"REMOTECLAW_DATABASE_URL": pg.url, "REMOTECLAW_LEASE_TTL_MS": str(TTL_MS),
           "FAKE_CLI_LOG": str(tmp_path / "cli.log")}
    a = GatewayProcess(tmp_path / "a", config=cfg, env=env).start(30)
    b = GatewayProcess(tmp_path / "b", config=cfg, env=env).start(30)
    ca = cb = None
    try:
        ca = await operator(a.url, a.token or "")
        cb = await operator(b.url, b.token or "")
        key = "agent:main:faults:outage"
        sent = await ca.call("chat.send", {"sessionKey": key, "message": "sleep:12 a long turn",
                                           "idempotencyKey": str(uuid.uuid4())})
        # a's cron job, fired while the database is there and running across the outage
        job = await ca.call("cron.add", {"name": "across the outage", "schedule": {"kind": "at", "at": int(
            time.time() * 1000) + 500}, "payload": {"kind": "agentTurn", "message": "sleep:12 cron"}})
        await until(lambda: len((tmp_path / "cli.log").read_text().splitlines()) >= 2
                    if (tmp_path / "cli.log").exists() else False, 15, "both turns' CLIs to start")
        await until(lambda: _beats_fresh(pg.url), 10, "both heartbeats written")
        pg.stop("immediate")
        await asyncio.sleep(TTL_MS / 1000 + 2)  # every heartbeat in the database is stale now
        pg.start()

        done = await ca.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 40_000}, timeout=45)
        assert done["status"] == "ok" and done["reply"] == "echo: sleep:12 a long turn", done
        await until(lambda: _cron_ended(pg.url, job["id"]), 40, "the cron job's run to end")
        await asyncio.sleep(TTL_MS / 1000 * 2)  # several beats after the outage: an adoption would have happened by now
        history = (await cb.call("chat.history", {"sessionKey": key}))["messages"]
        said = [(m["role"], m["text"]) for m in history]
        assert said == [("user", "sleep:12 a long turn"), ("assistant", "echo: sleep:12 a long turn")], \
            said
        assert not any(t in (RETRY_NOTICE, INTERRUPTED_NOTICE) for _, t in said)
        status_b = await cb.call("status")
        assert status_b["adoptedFromReplicas"] == {"runs": 0, "replies": 0}, status_b["adoptedFromReplicas"]
        runs = (await cb.call("cron.runs", {"id": job["id"]}))["entries"]
        assert [r["status"] for r in runs] == ["ok"], runs
    finally:
        for c in (ca, cb):
            if c is not None:
                await c.close()
        a.stop()
        b.stop()


async def _beats_fresh(url: str) -> bool:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT beat_at FROM replica_heartbeats")
    finally:
        await conn.close()
    return len(rows) == 2 and all(r["beat_at"] > time.time() * 1000 - TTL_MS / 2 for r in rows)


async def _cron_ended(url: str, job_id: str) -> bool:
    try:
        conn = await asyncpg.connect(url)
    except OSError:
        return False
    try:
        rows = await conn.fetch("SELECT status FROM cron_runs WHERE job_id = $1", job_id)
    finally:
        await conn.close()
    return bool(rows) and all(r["status"] != "running" for r in rows)
