"""Two gateway replicas on one PostgreSQL database and one Redis, a node host connected to replica A and the
messages arriving at replica B: B runs the turn, which goes to the node through A (``agent.run`` relayed over the
bus), and the node's output comes back through A to B as a live reply; ``/stop`` sent to A stops the turn B runs
on the node held by A; a message sent at B mid-turn steers it (its ``agent.input`` relayed through A). The turn's
shim on the node connects to A with B's run token (shared through the database): its message, approval and
question work there, and the run's end refuses the token and closes its sockets on both replicas."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import secrets
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.agent_hosts.test_node_turns import (
    FAKE_CLI,
    cli_log,
    lent_node,
    send,
    stopped_on_node,
    streamed,
    wait,
)
from tests.gateway.devices.test_node_scaleout import REDIS_URL
from tests.gateway.devices.test_node_scaleout import _subscribed as subscribed
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.postgres import pg_url_module  # noqa: F401
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.timeout(180)]

NODE = "far-bench"
KEY = "agent:remote:main"


@contextlib.contextmanager
def two_replicas(root: Path, pg_url: str, agents: Callable[[Path], list[dict[str, Any]]],
                 **config: Any) -> Iterator[dict[str, Any]]:
    """Replicas A and B on one PostgreSQL database and one Redis (a prefix of their own), with ``agents(code)`` (the
    node's lent folder ``code``, below the node's HOME): the world of the tests here."""
    home = root / "node-home"
    code = home / "code"
    code.mkdir(parents=True)
    prefix = f"rc-test-{secrets.token_hex(6)}"
    env = {"REMOTECLAW_DATABASE_URL": pg_url, "REMOTECLAW_REDIS_URL": REDIS_URL, "REMOTECLAW_REDIS_PREFIX": prefix}
    listed = agents(code)
    cfg = {"agents": {"default": listed[0]["id"], "list": listed}, **config}
    with GatewayProcess(root / "a", config=cfg, env=env).start(30) as a, \
            GatewayProcess(root / "b", config=cfg, env=env).start(30) as b:
        yield {"a": a, "b": b, "root": root, "home": home, "code": code, "prefix": prefix, "pg": pg_url}


@contextlib.asynccontextmanager
async def node_on_a(world: dict[str, Any], name: str, clis: str, **env: str) -> AsyncIterator[NodeHostProcess]:
    """A node host connected to replica A, lending ``clis`` in the world's folder, once both replicas are on the
    bus."""
    a: GatewayProcess = world["a"]
    await until(lambda: subscribed(world["prefix"], 2), 20, "both replicas on the event bus")
    host = NodeHostProcess(world["root"] / "node-state", a.port, token=a.token, name=name)
    host.extra_env.update(HOME=str(world["home"]), **env)
    async with lent_node(a, host, clis, world["code"]):
        yield host


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, pg_url_module: str) -> Iterator[dict[str, Any]]:  # noqa: F811
    with two_replicas(tmp_path_factory.mktemp("agent-hosts-replicas"), pg_url_module, lambda code: [
            {"id": "main", "command": [sys.executable, FAKE_CLI]},
            {"id": "remote", "node": NODE, "workspace": str(code)},
            {"id": "steer", "node": NODE, "workspace": str(code), "steering": "steer"}]) as world:
        yield world


@pytest.fixture(scope="module")
async def node(world: dict[str, Any]) -> AsyncIterator[NodeHostProcess]:
    async with node_on_a(world, NODE, f"claude={sys.executable} {FAKE_CLI}",
                         FAKE_CLI_LOG=str(world["code"] / "cli.log")) as host:
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


async def _refused(gw: GatewayProcess, token: str) -> bool:
    client = await RawClient.open(gw.url)
    try:
        frame = await client.handshake(token, scopes=["operator.write"])
    finally:
        await client.close()
    return not frame["ok"]


async def _history(c: RawClient) -> list[str]:
    return [json.dumps(m) for m in (await c.call("chat.history", {"sessionKey": KEY, "limit": 30}))["messages"]]


async def test_the_shim_of_a_turn_run_by_the_other_replica_works_through_the_replica_holding_the_node(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    """The turn runs at B; its shim on the node connects to A (the node's address) with B's run token: A accepts
    it, the message it sends lands in the chat, and after the run the token counts on neither replica."""
    a: GatewayProcess = world["a"]
    b: GatewayProcess = world["b"]
    c = await operator(b.url, b.token or "", scopes=["operator.admin"])
    try:
        ask = {"target": KEY, "message": "sent by the node's shim through A"}
        done = await wait(c, await send(c, KEY, f"tool:message_send {json.dumps(ask)}"))
        assert done["status"] == "ok", done
        assert '"ok": true' in done["reply"], done["reply"]  # A took B's token and sent it
        seen = cli_log(world)[-1]["env"]
        assert seen["REMOTECLAW_GATEWAY_URL"].rstrip("/") == a.url.rstrip("/")  # the shim went to A
        assert any("sent by the node's shim through A" in m for m in await _history(c))
        token = seen["REMOTECLAW_GATEWAY_TOKEN"]
        for gw in (b, a):  # the run is over: its token is refused everywhere
            await until(lambda gw=gw: _refused(gw, token), 15, f"the run's token refused at {gw.state_dir.name}")
    finally:
        await c.close()


async def test_an_approval_asked_through_the_replica_holding_the_node_is_answered_from_the_chat_at_the_other(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    """The turn runs at B, its shim asks at A (Claude Code's permission prompt tool); the chat is told, the person
    answers with ``/approve`` sent to B, and the CLI on the node proceeds with the decision."""
    b: GatewayProcess = world["b"]
    c = await operator(b.url, b.token or "", scopes=["operator.admin"])
    try:
        run_id = await send(c, KEY, "ask:make deploy-far")

        async def asked() -> str | None:
            for m in await _history(c):
                if "make deploy-far" in m and (found := re.search(r"/approve (\S+) allow-once", m)):
                    return found.group(1)
            return None

        approval_id = await until(asked, 60, "the approval request told in the chat")
        listed = await c.call("exec.approval.list")  # held by A, listed at B too
        assert [i["id"] for i in listed if i["id"] == approval_id] == [approval_id], listed
        await c.call("chat.send", {"sessionKey": KEY, "message": f"/approve {approval_id} allow-once",
                                   "idempotencyKey": str(uuid.uuid4())})
        done = await wait(c, run_id)
        assert done["status"] == "ok", done
        assert done["reply"] == "approval: allow", done["reply"]  # the decision reached the CLI on the node
    finally:
        await c.close()


async def test_a_socket_opened_at_the_other_replica_with_the_runs_token_closes_when_the_run_ends(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    """While B runs the turn its token opens a socket at A (as the shim does); the run's end closes it there."""
    a: GatewayProcess = world["a"]
    b: GatewayProcess = world["b"]
    c = await operator(b.url, b.token or "", scopes=["operator.admin"])
    try:
        before = len(cli_log(world))
        run_id = await send(c, KEY, "sleep:4")
        await until(lambda: len(cli_log(world)) > before, 30, "the CLI to start on the node")
        token = cli_log(world)[-1]["env"]["REMOTECLAW_GATEWAY_TOKEN"]
        held = await operator(a.url, token, scopes=["operator.write"])  # A accepts B's run token meanwhile
        try:
            listed = await held.call("sessions.list", {"limit": 5})
            assert any(s["key"] == KEY for s in listed["sessions"]), listed
            done = await wait(c, run_id)
            assert done["status"] == "ok", done
            assert await held.wait_closed(15) == 1008  # closed at A by the end of B's run
        finally:
            await held.close()
    finally:
        await c.close()


async def test_a_question_asked_through_the_replica_holding_the_node_takes_a_free_answer_typed_at_the_other(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    """``ask_user`` from the shim at A; the person's plain reply in the chat at B (an option's number) answers it."""
    b: GatewayProcess = world["b"]
    c = await operator(b.url, b.token or "", scopes=["operator.admin"])
    try:
        run_id = await send(c, KEY, "question:Which database far away?")

        async def asked() -> bool:
            return any("Which database far away?" in m and "Reply with a number" in m for m in await _history(c))

        await until(asked, 60, "the question told in the chat")
        res = await c.call("chat.send", {"sessionKey": KEY, "message": "2", "idempotencyKey": str(uuid.uuid4())})
        assert res["status"] == "decided", res  # an answer, not a new message for the agent
        done = await wait(c, run_id)
        assert done["status"] == "ok", done
        assert done["reply"] == "answer: SQLite", done["reply"]
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
