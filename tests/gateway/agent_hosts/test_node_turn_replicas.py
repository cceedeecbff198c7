"""Two gateway replicas on one PostgreSQL database and one Redis, a node host connected to replica A and the
messages arriving at replica B: B runs the turn, which goes to the node through A (``agent.run`` relayed over the
bus), and the node's output comes back through A to B as a live reply; ``/stop`` sent to A stops the turn B runs
on the node held by A; a message sent at B mid-turn steers it (its ``agent.input`` relayed through A)."""

from __future__ import annotations

import base64
import json
import secrets
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.gateway.agent_hosts.test_node_turns import FAKE_CLI, cli_log, lent_node, send, stopped_on_node, streamed
from tests.gateway.devices.test_node_scaleout import REDIS_URL
from tests.gateway.devices.test_node_scaleout import _subscribed as subscribed
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.postgres import pg_url_module  # noqa: F401
from tests.support.waiting import until
from tests.support.ws import operator

pytestmark = [pytest.mark.timeout(180)]

NODE = "far-bench"
KEY = "agent:remote:main"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, pg_url_module: str) -> Iterator[dict[str, Any]]:  # noqa: F811
    root = tmp_path_factory.mktemp("agent-hosts-replicas")
    home = root / "node-home"
    code = home / "code"
    code.mkdir(parents=True)
    prefix = f"rc-test-{secrets.token_hex(6)}"
    env = {"REMOTECLAW_DATABASE_URL": pg_url_module, "REMOTECLAW_REDIS_URL": REDIS_URL,
           "REMOTECLAW_REDIS_PREFIX": prefix}
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]},
                               {"id": "remote", "node": NODE, "workspace": str(code)},
                               {"id": "steer", "node": NODE, "workspace": str(code), "steering": "steer"}]}}
    with GatewayProcess(root / "a", config=cfg, env=env).start(30) as a, \
            GatewayProcess(root / "b", config=cfg, env=env).start(30) as b:
        yield {"a": a, "b": b, "root": root, "home": home, "code": code, "prefix": prefix}


@pytest.fixture(scope="module")
async def node(world: dict[str, Any]) -> AsyncIterator[NodeHostProcess]:
    a: GatewayProcess = world["a"]
    await until(lambda: subscribed(world["prefix"], 2), 20, "both replicas on the event bus")
    host = NodeHostProcess(world["root"] / "node-state", a.port, token=a.token, name=NODE)
    host.extra_env.update(HOME=str(world["home"]), FAKE_CLI_LOG=str(world["code"] / "cli.log"))
    async with lent_node(a, host, f"claude={sys.executable} {FAKE_CLI}", world["code"]):
        yield host


async def test_a_message_at_the_other_replica_runs_on_the_node_and_its_reply_streams_back(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    b: GatewayProcess = world["b"]
    c = await operator(b.url, b.token or "", scopes=["operator.admin"])
    try:
        placed = {r["agentId"]: r for r in (await c.call("node.agents"))["agents"]}
        assert placed["remote"]["placeable"], placed["remote"]  # B places it on the node A holds
        assert placed["remote"]["connectedTo"] not in (None, "this replica"), placed["remote"]  # and says so
        envs = {e["id"]: e for e in (await c.call("environments.list"))["environments"]}
        assert envs[f"node:{placed['remote']['nodeId']}"]["status"] == "available"  # online, on A
        assert "agent remote: ready" in envs[f"node:{placed['remote']['nodeId']}"]["capabilities"]
        on_a = await operator(world["a"].url, world["a"].token or "", scopes=["operator.admin"])
        try:
            held = {r["agentId"]: r for r in (await on_a.call("node.agents"))["agents"]}["remote"]
            assert held["connectedTo"] == "this replica", held
        finally:
            await on_a.close()
        p, deltas = await streamed(c, await send(c, KEY, "stream:3 words come one by one"))
        assert p["state"] == "final", p
        assert len(deltas) >= 3, deltas  # the node's lines came through A to B as they were written
        seen = cli_log(world)[-1]
        assert seen["cwd"] == str(world["code"]) and seen["sandboxed"]  # it ran on the node
        assert seen["env"]["REMOTECLAW_SESSION_KEY"] == KEY
    finally:
        await c.close()


async def test_stop_sent_to_the_replica_holding_the_node_stops_the_turn_the_other_runs(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    a: GatewayProcess = world["a"]
    b: GatewayProcess = world["b"]
    on_a = await operator(a.url, a.token or "", scopes=["operator.admin"])
    on_b = await operator(b.url, b.token or "", scopes=["operator.admin"])
    try:
        await stopped_on_node(world, node, on_b, on_a, KEY)
    finally:
        await on_a.close()
        await on_b.close()


async def test_an_attachment_sent_at_the_other_replica_reaches_the_node(world: dict[str, Any],
                                                                      node: NodeHostProcess) -> None:
    b: GatewayProcess = world["b"]
    c = await operator(b.url, b.token or "", scopes=["operator.admin"])
    try:
        data = b"sent at B, read on the node A holds\n"
        res = await c.call("chat.send", {"sessionKey": KEY, "message": "show attachments",
                                         "idempotencyKey": str(uuid.uuid4()), "attachments": [
                                             {"name": "far.txt", "base64": base64.b64encode(data).decode()}]})
        done = await c.call("agent.wait", {"runId": res["runId"], "timeoutMs": 60_000}, timeout=65)
        assert done["status"] == "ok", done
        assert f"far.txt={data!r}" in done["reply"], done["reply"]  # agent.run carried it over the bus
        assert "far.txt" in cli_log(world)[-1]["prompt"]
    finally:
        await c.close()


async def test_a_message_at_the_other_replica_steers_the_turn_on_the_node_the_first_holds(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    b: GatewayProcess = world["b"]
    key = "agent:steer:main"
    c = await operator(b.url, b.token or "", scopes=["operator.admin"])
    try:
        before = len(cli_log(world))
        run_id = await send(c, key, "sleep:4 the first part")
        started = await until(lambda: next((e for e in cli_log(world)[before:] if "the first part" in
                                            str(e.get("prompt"))), None), 60, "the CLI to start on the node")
        await send(c, key, "and the second part")
        done = await c.call("agent.wait", {"runId": run_id, "timeoutMs": 60_000}, timeout=65)
        assert done["status"] == "ok", done
        assert "echo: and the second part" in done["reply"], done
        steered = [json.loads(x) for x in (world["code"] / "cli.log.steered").read_text().splitlines()]
        assert [(e["steered"], e["pid"]) for e in steered] == [("and the second part", started["pid"])]
    finally:
        await c.close()
