"""Two gateway replicas on one PostgreSQL database and one Redis: a node connected to replica A is paired
and invoked through replica B, and a node that leaves A is reported gone on B."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from pathlib import Path

import pytest
from redis.asyncio import Redis

from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.postgres import pg_url  # noqa: F401
from tests.support.waiting import until
from tests.support.ws import operator

pytestmark = pytest.mark.timeout(120)

REDIS_URL = "redis://127.0.0.1:6379/0"


async def _subscribed(prefix: str, n: int) -> bool:
    r = Redis.from_url(REDIS_URL)
    try:
        (_, count), = await r.pubsub_numsub(f"{prefix}:events")
        return count >= n
    finally:
        await r.aclose()


async def test_a_node_on_replica_a_is_invoked_through_replica_b(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    prefix = f"rc-test-{secrets.token_hex(6)}"
    env = {"REMOTECLAW_DATABASE_URL": pg_url, "REMOTECLAW_REDIS_URL": REDIS_URL, "REMOTECLAW_REDIS_PREFIX": prefix}
    with GatewayProcess(tmp_path / "a", env=env).start(30) as a, GatewayProcess(tmp_path / "b", env=env).start(30) as b:
        await until(lambda: _subscribed(prefix, 2), 20, "both replicas on the event bus")
        on_b = await operator(b.url, b.token or "")
        with NodeHostProcess(tmp_path / "node", a.port, token=a.token, name="far-node") as node:
            async def request() -> dict | None:
                pending = (await on_b.call("node.pair.list"))["pending"]
                return next((r for r in pending if r["displayName"] == "far-node"), None)

            found = await until(request, 20, "the request of a node on A, seen from B")
            await on_b.call("node.pair.approve", {"requestId": found["requestId"]})
            # B approved it; A holds the socket, so A hands the node its token.
            await until(lambda: (node.state / "node.json").exists(), 15, "the node token, sent by replica A")
            assert node.approvals("add", "hostname").returncode == 0
            answer = await on_b.call("node.invoke", {"nodeId": "far-node", "command": "system.run",
                                                     "params": {"argv": ["hostname"]},
                                                     "idempotencyKey": str(uuid.uuid4())})
            assert answer["payload"]["exitCode"] == 0 and answer["payload"]["stdout"].strip()
            described = await on_b.call("node.describe", {"nodeId": "far-node"})
            assert described["connected"] and "connectedHere" not in described
            node.kill()
            await until(lambda: _offline(on_b, found["nodeId"]), 15, "B to see the node gone")
            gone = await on_b.req("node.invoke", {"nodeId": "far-node", "command": "system.which",
                                                  "params": {"bins": ["sh"]}, "idempotencyKey": str(uuid.uuid4())})
            assert gone["error"]["details"]["code"] == "NODE_NOT_CONNECTED"
        await on_b.close()


async def _offline(client, node_id: str) -> bool:  # type: ignore[no-untyped-def]
    await asyncio.sleep(0)
    nodes = (await client.call("node.list"))["nodes"]
    return any(n["nodeId"] == node_id and not n["connected"] for n in nodes)
