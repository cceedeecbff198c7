"""Redis restarted under two replicas: what crossed between them is reported lost, then everything crosses again.

Replicas ``a`` and ``b`` share a private PostgreSQL and a private Redis (``tests/support/private_services.py``),
with a paired node host connected to ``a``. Redis is killed while ``b`` waits on that node (a ``sleep 30`` run
through ``a``) and while ``a`` runs a turn; it is started again three seconds later. What an operator on ``b``
sees: the node invoke fails at once with ``NODE_NOT_REACHABLE`` instead of waiting out its timeout; once Redis
is back, one ``events.gap`` event says from when to when it heard nothing from ``a`` (re-read); afterwards
``chat``/``agent`` events, ``agent.wait`` and node invokes cross between the replicas again. Neither replica
crashes, and the turn run while redis is away is in the shared database.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from tests.faults.nodes import LONG, connected, pending, processes, system_run
from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.private_services import PrivatePostgres, PrivateRedis, private_pg  # noqa: F401
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.timeout(120)]



async def _subscribers(url: str, channel: str) -> int:
    r = Redis.from_url(url)
    try:
        return int((await r.pubsub_numsub(channel))[0][1])
    finally:
        await r.aclose()


async def _both_subscribed(url: str) -> bool:
    with contextlib.suppress(OSError, ConnectionError):
        return await _subscribers(url, "remoteclaw:events") == 2
    return False


async def _run_end(c: RawClient, run_id: str, timeout: float = 20) -> dict[str, Any]:
    """The ``agent`` lifecycle end event of ``run_id`` as ``c`` receives it."""
    async with asyncio.timeout(timeout):
        while True:
            ev = await c.events.get()
            p = ev["payload"]
            if (ev["event"] == "agent" and p.get("runId") == run_id and p["stream"] == "lifecycle"
                    and p["data"]["phase"] in ("end", "error")):
                return ev


async def test_a_redis_restart_reports_what_was_missed_and_replicas_cross_again(
        tmp_path: Path, private_pg: PrivatePostgres) -> None:  # noqa: F811
    pg = private_pg
    redis = PrivateRedis(tmp_path).start()
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    env = {"REMOTECLAW_DATABASE_URL": pg.url, "REMOTECLAW_REDIS_URL": redis.url}
    a = GatewayProcess(tmp_path / "a", config=cfg, env=env).start(30)
    b = GatewayProcess(tmp_path / "b", config=cfg, env=env).start(30)
    node = NodeHostProcess(tmp_path / "node", a.port, token=a.token, name="on-a")
    ca = cb = None
    try:
        await until(lambda: _both_subscribed(redis.url), 20, "both replicas to subscribe")
        ca = await operator(a.url, a.token or "")
        cb = await operator(b.url, b.token or "")
        node.start()
        request = await until(lambda: pending(cb, "on-a"), 20, "the node's pairing request")
        await cb.call("node.pair.approve", {"requestId": request["requestId"]})
        node_id = str(request["nodeId"])
        assert node.approvals("add", "sleep").returncode == 0 and node.approvals("add", "echo").returncode == 0
        await until(lambda: connected(cb, "on-a"), 20, "the node to connect to a")
        key = "agent:main:faults:redis"

        # Redis dies while b waits on a node held by a, and while a runs a turn.
        invoke = asyncio.create_task(cb.req("node.invoke", system_run(node_id, ["sleep", LONG]), timeout=90))
        await until(lambda: invoke.done() or processes(f"sleep {LONG}"), 15, "the node to start sleeping")
        assert not invoke.done(), invoke.result()
        during = await ca.call("chat.send", {"sessionKey": key, "message": "sleep:1.5 while redis is away",
                                             "idempotencyKey": str(uuid.uuid4())})
        killed_at = time.monotonic()
        redis.stop()
        answer = await invoke
        assert time.monotonic() - killed_at < 5, "b waited out the invoke's timeout"
        assert not answer["ok"] and answer["error"]["details"]["code"] == "NODE_NOT_REACHABLE", answer
        ended = await _run_end(ca, during["runId"])  # a's own operator sees its turn end, Redis or not
        assert ended["payload"]["data"]["result"]["reply"] == "echo: sleep:1.5 while redis is away"
        await asyncio.sleep(max(0.0, 3 - (time.monotonic() - killed_at)))
        redis.start()
        await until(lambda: _both_subscribed(redis.url), 40, "both replicas to resubscribe")

        # Each side's operator is told it was cut off, and when; a says its own events did not cross.
        gap_b = (await cb.next_event("events.gap", 10))["payload"]
        gap_a = (await ca.next_event("events.gap", 10))["payload"]
        status_a, status_b = await ca.call("status"), await cb.call("status")
        assert gap_b["replicaId"] == status_b["instanceId"] and gap_b["sinceMs"] < gap_b["untilMs"], gap_b
        assert gap_b["untilMs"] - gap_b["sinceMs"] >= 2500, gap_b  # the whole outage, not a blip
        assert gap_a["notRelayed"] >= 3, gap_a  # the turn's events at least
        assert status_a["eventBus"]["outages"] == 1 and status_a["eventBus"]["lastGap"] == gap_a
        assert status_b["eventBus"]["connected"] is True
        waited = await cb.call("agent.wait", {"runId": during["runId"], "timeoutMs": 5000}, timeout=10)
        assert waited["status"] == "ok" and waited["reply"] == "echo: sleep:1.5 while redis is away", waited

        # Everything crosses again: a turn's events and agent.wait, a node invoke.
        after = await ca.call("chat.send", {"sessionKey": key, "message": "redis is back",
                                            "idempotencyKey": str(uuid.uuid4())})
        on_b = await _run_end(cb, after["runId"])
        assert on_b["payload"]["data"]["result"]["reply"] == "echo: redis is back"
        waited = await cb.call("agent.wait", {"runId": after["runId"], "timeoutMs": 10000}, timeout=15)
        assert waited["status"] == "ok", waited
        again = await cb.req("node.invoke", system_run(node_id, ["echo", "crossed"]), timeout=30)
        assert again["ok"] and again["payload"]["payload"]["stdout"] == "crossed\n", again
        for gw in (a, b):
            assert gw.proc is not None and gw.proc.poll() is None, gw.output()
    finally:
        for c in (ca, cb):
            if c is not None:
                await c.close()
        node.stop()
        for pid in processes(f"sleep {LONG}"):
            os.kill(pid, signal.SIGKILL)
        a.stop()
        b.stop()
        redis.close()
