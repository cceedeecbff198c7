"""PostgreSQL away between a cron job's claim and its firing: the firing happens once, late, and the job goes on.

A due job is claimed up to a few seconds ahead of its time (``CLAIM_AHEAD_MS``), then its firing waits for its
second and reads the job again. Found by the chaos run (tests/deploy/test_engine.py): when the database was away
at that moment the firing's task died with the claim still held, so a live replica held the job "running" for
ever and it never fired again. Here a private PostgreSQL (``tests/support/private_services.py``) is stopped as a
crash stops it right after the claim and started again after the job's time: the job's run is recorded once,
``ok``, and its claim is released.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import asyncpg
import pytest

from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.private_services import PrivatePostgres, private_pg  # noqa: F401
from tests.support.waiting import until
from tests.support.ws import operator

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


async def _job(url: str, job_id: str) -> tuple[str | None, list[str]]:
    """(who holds the job's claim, its runs' statuses); (None, []) while the server is away."""
    try:
        conn = await asyncpg.connect(url)
    except OSError:
        return None, []
    try:
        holder = await conn.fetchval("SELECT running_replica FROM cron_jobs WHERE id = $1", job_id)
        runs = [r["status"] for r in await conn.fetch("SELECT status FROM cron_runs WHERE job_id = $1", job_id)]
    finally:
        await conn.close()
    return holder, runs


async def test_a_cron_firing_claimed_before_a_postgres_outage_fires_once_after_it(
        tmp_path: Path, private_pg: PrivatePostgres) -> None:  # noqa: F811
    pg = private_pg
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    with GatewayProcess(tmp_path / "gw", config=cfg, env={"REMOTECLAW_DATABASE_URL": pg.url}) as gw:
        c = await operator(gw.url, gw.token or "")
        job = await c.call("cron.add", {"name": "claimed ahead", "payload": {"kind": "agentTurn", "message": "hi"},
                                        "schedule": {"kind": "at", "at": int(time.time() * 1000) + 2500}})

        async def claimed() -> bool:
            holder, runs = await _job(pg.url, job["id"])
            return holder is not None and not runs
        await until(claimed, 5, "the job to be claimed ahead of its time")
        pg.stop("immediate")
        await asyncio.sleep(4)  # its time passes while the database is away
        pg.start()

        async def ran() -> bool:
            holder, runs = await _job(pg.url, job["id"])
            return holder is None and runs == ["ok"]
        await until(ran, 40, "the firing to run once and release its claim")
        await c.close()
