"""Cron on real gateway processes: jobs added through the real MCP shim fire the stand-in agent CLI and
announce to the Telegram fake once; bad input names its field; kill -9 mid-run; heartbeats."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_shim.shim import Shim, shim_env, side_effects
from tests.support.fake_telegram import FakeTelegram, cli_runs, telegram_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.postgres import pg_url  # noqa: F401
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.openclaw_frames  # every frame received is checked against OpenClaw's schema


def sent_to(fake: FakeTelegram, chat: str) -> list[str]:
    return [c.params["text"] for c in fake.calls_of("sendMessage") if str(c.params["chat_id"]) == chat]


async def test_a_job_added_through_the_shim_runs_announces_once_and_stops_when_removed(tmp_path: Path) -> None:
    fake = FakeTelegram().start()
    gw = telegram_gateway(tmp_path / "gw", fake, dmPolicy="open")
    shim: Shim | None = None
    try:
        gw.start()
        shim = await Shim.start(shim_env(gw, tmp_path, owner=True))
        await shim.initialize()
        job = await shim.call_ok("cron_add", {"job": {
            "name": "inbox digest", "schedule": {"kind": "every", "everyMs": 3000},
            "payload": {"kind": "agentTurn", "message": "summarise my inbox"},
            "delivery": {"mode": "announce", "channel": "telegram", "to": "777"}}})
        assert job["id"] and job["sessionTarget"] == "isolated" and job["state"]["nextRunAtMs"] > 0
        assert [fx["jobId"] for fx in side_effects(tmp_path) if fx["type"] == "cron_added"] == [job["id"]]
        await until(lambda: sent_to(fake, "777"), what="the announcement")
        removed = await shim.call_ok("cron_remove", {"jobId": job["id"]})
        assert removed["removed"] is True
        await asyncio.sleep(4)  # the next firing would have come by now
        assert sent_to(fake, "777") == ["echo: summarise my inbox"]
        run = [r for r in cli_runs(gw.state_dir) if "summarise my inbox" in r["prompt"]]
        assert len(run) == 1 and run[0]["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "false"  # never owner-tier
        assert ":cron:" in run[0]["env"]["REMOTECLAW_SESSION_KEY"]
        # The history went with the job; a new job's history shows its run.
        again = await shim.call_ok("cron_add", {"job": {
            "name": "once", "schedule": {"kind": "at", "at": "2020-01-01T00:00:00Z"},  # past: runs now, once
            "payload": {"kind": "agentTurn", "message": "late one"},
            "delivery": {"mode": "announce", "channel": "telegram", "to": "778"}}})

        async def finished() -> Any:
            runs = await shim.call_ok("cron_runs", {"jobId": again["id"]})  # type: ignore[union-attr]
            return runs if runs["entries"] and runs["entries"][0]["status"] != "running" else None

        runs = await until(finished, what="the run record")
        (entry,) = runs["entries"]
        assert entry["status"] == "ok" and entry["deliveryStatus"] == "delivered", entry
        assert entry["summary"] == "echo: late one" and entry["durationMs"] >= 0
        assert sent_to(fake, "778") == ["echo: late one"]
        listed = await shim.call_ok("cron_list", {"filter": "once"})
        (only,) = listed["jobs"]
        assert only["enabled"] is False and only["state"]["lastStatus"] == "ok"  # an "at" job is done after its run
    finally:
        if shim is not None:
            await shim.close()
        gw.stop()
        fake.stop()


async def test_bad_jobs_are_refused_naming_the_field_and_methods_follow_openclaw(gateway: GatewayProcess) -> None:
    c = await operator(gateway.url, gateway.token or "")
    try:
        for params, field in [
            ({"name": "x", "schedule": {"kind": "cron", "expr": "0 25 * * *"}, "payload": {"kind": "agentTurn",
                                                                                             "message": "m"}},
             "schedule.expr"),
            ({"name": "x", "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Nowhere/Land"},
              "payload": {"kind": "agentTurn", "message": "m"}}, "schedule.tz"),
            ({"name": "x", "schedule": {"kind": "every", "everyMs": 60000}, "payload": {"kind": "agentTurn"}},
             "payload.message"),
            ({"name": "x", "schedule": {"kind": "every", "everyMs": 60000}, "payload": {"kind": "agentTurn",
                                                                                        "message": "m"},
              "delivery": {"mode": "webhook"}}, "delivery.to"),
            ({"name": "x", "schedule": {"kind": "every", "everyMs": 60000}, "payload": {"kind": "systemEvent",
                                                                                        "text": "t"},
              "sessionTarget": "isolated"}, "sessionTarget"),
            ({"name": "x", "schedule": {"kind": "every", "everyMs": 60000}, "payload": {"kind": "agentTurn",
                                                                                        "message": "m"},
              "agentId": "ghost"}, "agentId"),
            ({"name": "x", "scheduel": {}}, "scheduel"),
        ]:
            frame = await c.req("cron.add", params)
            assert not frame["ok"] and frame["error"]["details"]["field"] == field, (field, frame)
        job = await c.call("cron.add", {"name": "nightly", "description": "backup check",
                                        "schedule": {"kind": "cron", "expr": "0 3 * * *", "tz": "Europe/Berlin"},
                                        "payload": {"kind": "agentTurn", "message": "check backups"},
                                        "delivery": {"mode": "webhook", "to": "https://hooks.example.org/x",
                                                     "token": "s3cret"}})
        assert "token" not in job["delivery"]  # never read back
        patched = await c.call("cron.update", {"id": job["id"], "patch": {"payload": {"timeoutSeconds": 60},
                                                                         "enabled": False}})
        assert patched["payload"] == {"kind": "agentTurn", "message": "check backups", "timeoutSeconds": 60}
        assert patched["enabled"] is False and "nextRunAtMs" not in patched["state"]
        bad = await c.req("cron.update", {"id": job["id"], "patch": {"schedule": {"kind": "cron", "expr": "nope"}}})
        assert not bad["ok"] and bad["error"]["details"]["field"] == "schedule.expr"
        assert (await c.req("cron.update", {"id": "nope", "patch": {}}))["error"]["details"]["field"] == "id"
        listed = await c.call("cron.list", {"query": "backup"})
        assert [j["id"] for j in listed["jobs"]] == [job["id"]] and listed["total"] == 1
        assert (await c.call("cron.list", {"includeDisabled": False, "query": "backup"}))["jobs"] == []
        status = await c.call("cron.status", {})
        assert status["enabled"] is True and status["jobs"] >= 1
        got = await c.call("cron.get", {"id": job["id"]})
        assert got["description"] == "backup check"
        removed = await c.call("cron.remove", {"id": job["id"]})
        assert removed == {"ok": True, "removed": True, "id": job["id"]}
    finally:
        await c.close()



async def runs_of(c: RawClient, job_id: str) -> list[dict[str, Any]]:
    return (await c.call("cron.runs", {"id": job_id}))["entries"]


def fake_cli_gateway(tmp_path: Path) -> GatewayProcess:
    """A gateway (not started) whose agent is the stand-in CLI, logging its runs for ``cli_runs``."""
    import sys

    from tests.support import FAKE_CLI

    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    return GatewayProcess(tmp_path / "gw", config=config, env={"FAKE_CLI_LOG": str(tmp_path / "gw" / "cli.log")})


async def test_a_repeating_job_first_runs_one_interval_after_it_is_made_or_rescheduled(tmp_path: Path) -> None:
    """OpenClaw's rule: an ``every`` job anchored now runs after one interval, not the moment it is added or its
    schedule changes; meanwhile ``cron.run`` runs it (no ``already-running`` from a claim made at creation)."""
    gw = fake_cli_gateway(tmp_path)
    try:
        gw.start()
        c = await operator(gw.url, gw.token or "")
        job = await c.call("cron.add", {"name": "tick", "schedule": {"kind": "every", "everyMs": 60_000},
                                        "payload": {"kind": "agentTurn", "message": "tick"},
                                        "delivery": {"mode": "none"}})
        anchor = job["schedule"]["anchorMs"]
        assert job["state"]["nextRunAtMs"] == anchor + 60_000, job
        await asyncio.sleep(1.5)  # it would have started by now
        assert await runs_of(c, job["id"]) == [] and not cli_runs(gw.state_dir)
        assert (await c.call("cron.run", {"id": job["id"]}))["ran"] is True  # not "already-running"

        async def finished(n: int) -> Any:
            entries = await runs_of(c, job["id"])
            return entries if len(entries) >= n and all(e["status"] == "ok" for e in entries) else None

        (manual,) = await until(lambda: finished(1), what="the manual run")
        assert manual["trigger"] == "manual"
        changed = await c.call("cron.update", {"id": job["id"],
                                               "patch": {"schedule": {"kind": "every", "everyMs": 5_000}}})
        assert changed["state"]["nextRunAtMs"] >= changed["updatedAtMs"] + 5_000, changed
        await asyncio.sleep(1.5)  # a new schedule does not fire at once either
        assert len(await runs_of(c, job["id"])) == 1
        entries = await until(lambda: finished(2), timeout=20, what="the first scheduled run")
        assert entries[0]["trigger"] == "schedule" and entries[0]["scheduledForMs"] == changed["state"]["nextRunAtMs"]
        await c.close()
    finally:
        gw.stop()


async def test_kill_9_during_a_run_is_recorded_as_interrupted_and_the_job_fires_again(tmp_path: Path) -> None:
    gw = fake_cli_gateway(tmp_path)
    try:
        gw.start()
        c = await operator(gw.url, gw.token or "")
        job = await c.call("cron.add", {"name": "slow", "schedule": {"kind": "every", "everyMs": 6000},
                                        "payload": {"kind": "agentTurn", "message": "sleep:2.5 nightly"}})
        await until(lambda: cli_runs(gw.state_dir), timeout=15, what="the first run to start")
        await c.close()
        gw.stop(signal.SIGKILL)
        gw.start()
        c = await operator(gw.url, gw.token or "")
        first = (await runs_of(c, job["id"]))[-1]
        assert first["status"] == "interrupted", first

        async def second_ok() -> Any:
            entries = await runs_of(c, job["id"])
            return entries if len(entries) >= 2 and entries[0]["status"] == "ok" else None

        entries = await until(second_ok, timeout=30, what="the next scheduled run")
        assert entries[0]["startedAtMs"] >= job["state"]["nextRunAtMs"] + 6000  # on schedule, not a retry
        assert len(cli_runs(gw.state_dir)) == len(entries)  # the interrupted agent run was not retried
        await c.close()
    finally:
        gw.stop()


async def test_two_replicas_fire_200_jobs_due_in_the_same_second_exactly_once(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    import sys

    import asyncpg

    from tests.support import FAKE_CLI

    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}], "maxConcurrentRuns": 16},
           "cron": {"maxConcurrentRuns": 16}}
    # Redis carries the "job added" event to b at once, so both replicas sleep towards the same second.
    env = {"REMOTECLAW_DATABASE_URL": pg_url, "FAKE_CLI_LOG": str(tmp_path / "cli.log"),
           "REMOTECLAW_REDIS_URL": "redis://127.0.0.1:6379/0",
           "REMOTECLAW_REDIS_PREFIX": f"rc-cron-{uuid.uuid4().hex[:8]}"}
    a = GatewayProcess(tmp_path / "a", config=cfg, env=env)
    b = GatewayProcess(tmp_path / "b", config=cfg, env=env)
    try:
        a.start(30)
        b.start(30)
        c = await operator(a.url, a.token or "")
        at = int(time.time() * 1000) + 8000  # all due in the same second, once both replicas sleep towards it
        ids = []
        for i in range(200):
            job = await c.call("cron.add", {"name": f"bulk {i}", "schedule": {"kind": "at", "atMs": at},
                                            "payload": {"kind": "agentTurn", "message": f"bulk job {i}"},
                                            "delivery": {"mode": "none"}})
            ids.append(job["id"])
        await c.close()
        conn = await asyncpg.connect(pg_url)
        try:
            async def all_done() -> bool:
                n = await conn.fetchval("SELECT count(*) FROM cron_runs WHERE status <> 'running'")
                return n >= 200

            await until(all_done, timeout=120, what="200 runs")
            await asyncio.sleep(2)  # a double firing would show up now
            rows = await conn.fetch("SELECT job_id, count(*) AS n, min(status) AS s FROM cron_runs GROUP BY job_id")
            failed = await conn.fetch("SELECT job_id, status, error FROM cron_runs WHERE status <> 'ok' LIMIT 5")
            replicas = await conn.fetch("SELECT DISTINCT replica_id FROM cron_runs")
        finally:
            await conn.close()
        assert sorted(r["job_id"] for r in rows) == sorted(ids)
        assert all(r["n"] == 1 for r in rows), [dict(r) for r in rows if r["n"] != 1][:5]
        assert all(r["s"] == "ok" for r in rows), [dict(r) for r in failed]
        prompts = [r["prompt"] for r in map(__import__("json").loads, (tmp_path / "cli.log").read_text().splitlines())]
        assert sorted(prompts) == sorted(f"bulk job {i}" for i in range(200))  # each agent turn ran once
        assert len(replicas) == 2  # both replicas took a share
    finally:
        a.stop()
        b.stop()
