"""Heartbeats: ``agents.list[].heartbeat`` kept as one cron job per agent (``heartbeat-<agent id>``).

A heartbeat is a periodic turn in the agent's main session with the configured prompt. It is a cron job
like any other (claimed once across replicas, in ``cron.list`` and ``cron.runs``), kind ``heartbeat``,
kept in step with the config at start and after every config change; removing the config removes the
job. Its reply reaches the session's last chat only if the run's ``heartbeat_report`` says something
was done, and ``activeHours`` keeps it quiet outside them (the run is recorded as skipped).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import orjson
from sqlalchemy import delete, select

from gateway.cron.schedule import Schedule
from gateway.cron.store import CronJob

if TYPE_CHECKING:
    from gateway.config import Config
    from gateway.store import Database

__all__ = ["every_ms", "sync_heartbeats"]

UNITS_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def every_ms(text: str) -> int:
    """``"30m"`` → 1800000 (the config validated the shape)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smhd])", text.strip())
    if m is None:
        raise ValueError(f"not a duration: {text!r} (e.g. 30m, 2h)")
    return max(int(float(m.group(1)) * UNITS_MS[m.group(2)]), 1_000)


async def sync_heartbeats(db: Database, config: Config, now_ms: int) -> int:
    """Make the heartbeat jobs match ``config``; how many changed."""
    wanted = {f"heartbeat-{a.id}": a for a in config.agents.list if a.heartbeat is not None}
    changed = 0
    async with db.session() as s:
        existing = {j.id: j for j in (await s.execute(select(CronJob).where(CronJob.kind == "heartbeat"))).scalars()}
        gone = [job_id for job_id in existing if job_id not in wanted]
        if gone:
            await s.execute(delete(CronJob).where(CronJob.id.in_(gone)))
            changed += len(gone)
        for job_id, agent in wanted.items():
            hb = agent.heartbeat
            assert hb is not None
            period = every_ms(hb.every)
            schedule = Schedule("every", every_ms=period, anchor_ms=now_ms)
            payload = orjson.dumps({"kind": "agentTurn", "message": hb.prompt}).decode()
            delivery = orjson.dumps({"mode": "announce" if hb.deliver else "none"}).decode()
            job = existing.get(job_id)
            if job is None:
                s.add(CronJob(id=job_id, name=f"heartbeat ({agent.id})", agent_id=agent.id, enabled=True,
                              schedule=orjson.dumps(schedule.to_dict()).decode(), session_target="main",
                              payload=payload, delivery=delivery, kind="heartbeat", delete_after_run=False,
                              next_run_at=now_ms + period, consecutive_errors=0, created_at=now_ms,
                              updated_at=now_ms))
                changed += 1
                continue
            old_every = orjson.loads(job.schedule).get("everyMs")
            if old_every != period or job.payload != payload or job.delivery != delivery:
                if old_every != period:
                    job.schedule = orjson.dumps(schedule.to_dict()).decode()
                    job.next_run_at = now_ms + period
                job.payload, job.delivery, job.updated_at = payload, delivery, now_ms
                changed += 1
    return changed
