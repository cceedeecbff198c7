"""A node turn's model calls behind two replicas (``gateway.credentials.store``): the turn runs at replica B, the node
is connected to replica A, so the CLI on the node calls its model at A with the stand-in B issued. A accepts it
(shared through PostgreSQL, hashed, never with the real key), adds the real key from its own config, and the usage
it saw is counted in B's record of the run; once the run ends the stand-in is refused at both and its row is gone.

Real processes: two gateways on one PostgreSQL and one Redis, a node host with its own HOME lending the prying CLI
as ``claude``, the loopback fake Anthropic API.
"""

from __future__ import annotations

import json
import secrets
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.gateway.agent_hosts.test_node_turn_replicas import node_on_a, two_replicas
from tests.gateway.credentials.test_model_gateway import PRY, REAL_KEY, ask_model
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.postgres import pg_url_module  # noqa: F401
from tests.support.ws import operator

pytestmark = [pytest.mark.timeout(180)]

NODE = "model-bench"
KEY = "agent:pry:main"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, pg_url_module: str) -> Iterator[dict[str, Any]]:  # noqa: F811
    with FakeAnthropic() as api:
        def agents(code: Path) -> list[dict[str, Any]]:
            return [{"id": "pry", "runtime": "claude", "node": NODE, "workspace": str(code),
                     "env": {"ANTHROPIC_API_KEY": REAL_KEY, "ANTHROPIC_BASE_URL": api.url}}]

        prices = {"claude-x": {"input": 3, "output": 15}}
        with two_replicas(tmp_path_factory.mktemp("node-model-replicas"), pg_url_module, agents,
                          modelGateway={"prices": prices}) as world:
            yield {**world, "api": api}


@pytest.fixture(scope="module")
async def node(world: dict[str, Any]) -> AsyncIterator[NodeHostProcess]:
    async with node_on_a(world, NODE, f"claude={sys.executable} {PRY}") as host:
        yield host


async def rows(pg: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(pg)
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()


async def test_a_node_turn_run_by_the_other_replica_calls_its_model_through_the_replica_holding_the_node(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    a: GatewayProcess = world["a"]
    b: GatewayProcess = world["b"]
    api: FakeAnthropic = world["api"]
    c = await operator(b.url, b.token or "", scopes=["operator.admin"])
    try:
        asked = {"http": [ask_model("through the replica holding the node"), ask_model("and once more")],
                 "secrets": [REAL_KEY]}
        res = await c.call("chat.send", {"sessionKey": KEY, "message": json.dumps(asked),
                                         "idempotencyKey": str(uuid.uuid4())})
        done = await c.call("agent.wait", {"runId": res["runId"], "timeoutMs": 90_000}, timeout=100)
    finally:
        await c.close()
    assert done["status"] == "ok", done
    found = json.loads(done["reply"])
    assert found["leaked"] == [], found["leaked"]  # the node's CLI holds no real key
    held, base = found["env"]["ANTHROPIC_API_KEY"], found["env"]["ANTHROPIC_BASE_URL"]
    assert held.startswith("rcm-") and base.startswith(f"http://127.0.0.1:{a.port}/model/"), base  # A: the node's
    assert [h.split(" ", 1)[0] for h in found["http"]] == ["200", "200"], found["http"]
    assert "through the replica holding the node" in found["http"][0]
    upstream = [h for h in api.seen_headers if "anthropic-version" in h]
    assert [h.get("x-api-key") for h in upstream] == [REAL_KEY, REAL_KEY]  # A added the real key from its config
    assert all(held not in json.dumps(h) for h in api.seen_headers)
    # B recorded the run with what A saw it use (the fake states 100 in, 20 out per answer)
    usage = await rows(world["pg"], "SELECT input_tokens, output_tokens, cost_usd, model FROM turn_usage "
                                    "WHERE run_id = $1", res["runId"])
    assert [(r["input_tokens"], r["output_tokens"], r["model"]) for r in usage] == [(200, 40, "claude-x")], usage
    assert usage[0]["cost_usd"] == pytest.approx((200 * 3 + 40 * 15) / 1e6)
    # the run has ended: its stand-in is refused at both replicas, and nothing of it is left in the database
    assert await rows(world["pg"], "SELECT token_hash FROM model_standins") == []
    async with httpx.AsyncClient() as client:
        for gw in (a, b):
            late = await client.post(f"http://127.0.0.1:{gw.port}/model/anthropic/v1/messages",
                                     json=ask_model("late")["body"], headers={"x-api-key": held})
            assert late.status_code == 401, (gw.port, late.text)
    assert len([h for h in api.seen_headers if "anthropic-version" in h]) == 2


async def test_guessed_stand_ins_cost_no_database_read_past_a_few(world: dict[str, Any], node: NodeHostProcess) -> None:
    """Twenty guesses from one address, and that address gets no more look-ups for a minute: even the next node
    turn's live stand-in, had it come from there, is refused at A (its model calls come from 127.0.0.1 too)."""
    a: GatewayProcess = world["a"]
    b: GatewayProcess = world["b"]
    async with httpx.AsyncClient() as client:
        for _ in range(20):
            guess = "rcm-" + secrets.token_urlsafe(32)
            late = await client.post(f"http://127.0.0.1:{a.port}/model/anthropic/v1/messages",
                                     json=ask_model("guess")["body"], headers={"x-api-key": guess})
            assert late.status_code == 401
    c = await operator(b.url, b.token or "", scopes=["operator.admin"])
    try:
        res = await c.call("chat.send", {"sessionKey": "agent:pry:after-guesses", "idempotencyKey": str(uuid.uuid4()),
                                         "message": json.dumps({"http": [ask_model("after the guesses")]})})
        done = await c.call("agent.wait", {"runId": res["runId"], "timeoutMs": 90_000}, timeout=100)
    finally:
        await c.close()
    assert done["status"] == "ok", done
    assert json.loads(done["reply"])["http"][0].startswith("401 "), done["reply"]
