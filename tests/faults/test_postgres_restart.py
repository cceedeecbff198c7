"""PostgreSQL goes away for a few seconds while clients write: they are told so, nothing accepted is lost.

A gateway on a private PostgreSQL (``tests/support/private_services.py``) takes a steady stream of writes
(``sessions.patch``, ``chat.send`` to the stand-in CLI, ``cron.add``) while the server is stopped as a crash
stops it (``pg_ctl -m immediate``) and started again three seconds later. What a client sees: each request
made meanwhile answered promptly with an error naming the database, never a hang; the gateway stays up and
takes writes again on its own. What is kept: every write answered ok is in the database, whole, and the turn
accepted before the outage finishes.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.private_services import PrivatePostgres, private_pg  # noqa: F401
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

PROMPT_LIMIT_S = 12.0
"""No request may take longer than this during the outage (the connect timeout is 10 s)."""


async def _write(c: RawClient, i: int, log: list[dict[str, Any]]) -> None:
    """One of three writes, in turn; its answer (ok or the error) and how long it took go to ``log``."""
    kind = ("patch", "chat", "cron")[i % 3]
    key = f"agent:main:faults:pg{i}"
    params: dict[str, Any]
    if kind == "patch":
        method, params = "sessions.patch", {"key": key, "label": f"label {i}"}
    elif kind == "chat":
        method, params = "chat.send", {"sessionKey": key, "message": f"hello {i}", "idempotencyKey": str(uuid.uuid4())}
    else:
        method, params = "cron.add", {"name": f"job {i}", "schedule": {"kind": "cron", "expr": "0 0 1 1 *"},
                                      "payload": {"kind": "agentTurn", "message": f"cron {i}"}}
    t0 = time.monotonic()
    frame = await c.req(method, dict(params), timeout=30)
    log.append({"i": i, "kind": kind, "key": key, "frame": frame, "took": time.monotonic() - t0, "t": t0})


async def test_writes_during_a_postgres_restart_fail_cleanly_and_nothing_answered_ok_is_lost(
        tmp_path: Path, private_pg: PrivatePostgres) -> None:  # noqa: F811
    pg = private_pg
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    env = {"REMOTECLAW_DATABASE_URL": pg.url, "FAKE_CLI_LOG": str(tmp_path / "cli.log")}
    with GatewayProcess(tmp_path / "gw", config=cfg, env=env) as gw:
        c = await operator(gw.url, gw.token or "")
        before = await c.call("chat.send", {"sessionKey": "agent:main:faults:before", "message": "sleep:6 long job",
                                            "idempotencyKey": str(uuid.uuid4())})
        await until(lambda: (tmp_path / "cli.log").exists(), what="the accepted turn's CLI to start")
        log: list[dict[str, Any]] = []
        stop = asyncio.Event()

        async def writer(offset: int) -> None:
            i = offset
            while not stop.is_set():
                await _write(c, i, log)
                i += 2
                await asyncio.sleep(0.15)

        writers = [asyncio.create_task(writer(n)) for n in (0, 1)]
        await asyncio.sleep(1.0)
        down_at = time.monotonic()
        pg.stop("immediate")
        await asyncio.sleep(3.0)
        pg.start()
        up_at = time.monotonic()

        async def a_write_succeeds() -> bool:
            return any(x["frame"]["ok"] and x["t"] > up_at for x in log)

        await until(a_write_succeeds, 20, "a write to succeed again after the restart")
        await asyncio.sleep(0.5)
        stop.set()
        await asyncio.gather(*writers)

        # What the client saw: prompt answers; during the outage, errors that name the database.
        slow = [(x["kind"], round(x["took"], 1)) for x in log if x["took"] > PROMPT_LIMIT_S]
        assert not slow, f"requests hung during the outage: {slow}"
        failed = [x for x in log if not x["frame"]["ok"]]
        assert failed, "no write met the outage: the test proved nothing"
        for x in failed:
            err = x["frame"]["error"]
            assert err["code"] == "UNAVAILABLE" and err.get("retryable") is True, x
            assert "database" in err["message"] and err["details"]["code"] == "DATABASE_UNAVAILABLE", x
            # in flight when the database went away (sent before, answered after: a loaded machine), sent during
            # the outage, or just after it while the pool reconnects
            assert x["t"] + x["took"] >= down_at - 0.5 and x["t"] <= up_at + 10, \
                ("a write failed outside the outage", x)
        assert gw.proc is not None and gw.proc.poll() is None, "the gateway died"
        assert gw.wait_healthy(2)["ok"] is True

        # What is kept: every write answered ok, whole.
        ok = [x for x in log if x["frame"]["ok"]]
        assert before["status"] == "accepted"
        finished = await c.call("agent.wait", {"runId": before["runId"], "timeoutMs": 20000}, timeout=25)
        assert finished["status"] == "ok" and finished["reply"] == "echo: sleep:6 long job", finished
        chats = [x for x in ok if x["kind"] == "chat"]
        for x in chats:
            done = await c.call("agent.wait", {"runId": x["frame"]["payload"]["runId"], "timeoutMs": 20000}, timeout=25)
            assert done["status"] == "ok", (x, done)
        await c.close()
        conn = await asyncpg.connect(pg.url)
        try:
            labels = {r["label"] for r in await conn.fetch("SELECT label FROM sessions WHERE label IS NOT NULL")}
            assert {f"label {x['i']}" for x in ok if x["kind"] == "patch"} <= labels
            names = {r["name"] for r in await conn.fetch("SELECT name FROM cron_jobs")}
            assert {f"job {x['i']}" for x in ok if x["kind"] == "cron"} <= names
            for x in [*chats, {"key": "agent:main:faults:before", "i": "before"}]:
                rows = await conn.fetch("SELECT role, text FROM session_messages WHERE session_key = $1 ORDER BY id",
                                        x["key"])
                assert [r["role"] for r in rows] == ["user", "assistant"], (x["key"], rows)
            # Nothing half-written: no transcript row without its session, no run without its turn's rows.
            assert await conn.fetchval(
                "SELECT count(*) FROM session_messages m LEFT JOIN sessions s ON s.key = m.session_key "
                "WHERE s.key IS NULL") == 0
            stuck = await conn.fetch("SELECT id, session_key, status FROM agent_runs WHERE status IN "
                                     "('queued', 'running')")
            assert not stuck, stuck
            half = await conn.fetch(
                "SELECT r.id, r.session_key FROM agent_runs r WHERE r.status = 'ok' AND NOT EXISTS "
                "(SELECT 1 FROM session_messages m WHERE m.run_id = r.id AND m.role = 'assistant')")
            assert not half, half
        finally:
            await conn.close()
