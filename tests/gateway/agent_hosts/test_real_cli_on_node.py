"""The real Claude Code on a node: its turn runs on the node host (a second process, its own HOME and state dir),
which reaches the gateway through another address than the gateway's own (a TCP relay: the node's view, as a
workstation on the LAN sees a server).

Claude Code talks to the loopback fake Anthropic API only through the model gateway, at the address the node
reaches it by (the stand-in's base URL rewritten to the node's view): the relay sees its model requests, the fake
sees the real key and never the stand-in. In ``ask`` mode a command Claude wants to run comes to the chat as an
approval request (the shim on the node calls the gateway), and the person's allow runs it in the node's folder.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.gateway.agent_hosts.test_node_turns import lent_node
from tests.gateway.agents.runtimes.conftest import cli
from tests.gateway.agents.runtimes.flows import approval_asked, last_reply, start_turn
from tests.gateway.agents.runtimes.test_claude import offline_env
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.tcp_relay import TcpRelay
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

NODE = "workstation"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    claude = cli("claude")
    root = tmp_path_factory.mktemp("claude-on-node")
    home = root / "node-home"
    code = home / "code"
    code.mkdir(parents=True)
    with FakeAnthropic() as api:
        env = {k: v for k, v in offline_env(api.url, home).items() if k != "HOME"}  # HOME is the node's
        agent = {"id": "work", "runtime": "claude", "node": NODE, "workspace": str(code), "permissions": "ask",
                 "env": env}
        cfg = {"agents": {"default": "work", "list": [agent]}, "approvals": {"timeoutSeconds": 60}}
        with GatewayProcess(root / "gw", config=cfg) as gw, TcpRelay(gw.port) as relay:
            yield {"gw": gw, "api": api, "relay": relay, "root": root, "home": home, "code": code, "claude": claude}


@pytest.fixture(scope="module")
async def node(world: dict[str, Any]) -> AsyncIterator[NodeHostProcess]:
    gw: GatewayProcess = world["gw"]
    host = NodeHostProcess(world["root"] / "node-state", world["relay"].port, token=gw.token, name=NODE)
    host.extra_env.update(HOME=str(world["home"]))
    async with lent_node(gw, host, f"claude={world['claude']}", world["code"]):
        yield host


async def wait_turn(task: Any) -> dict[str, Any]:
    return dict(await task)


async def last_text(c: RawClient, key: str) -> str:
    return await last_reply(c, key)


async def test_claude_code_on_the_node_reaches_its_model_through_the_gateway_at_the_nodes_address(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    api: FakeAnthropic = world["api"]
    relay: TcpRelay = world["relay"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        acc = await c.call("chat.send", {"sessionKey": "agent:work:main", "message": "REPLY hello from the node",
                                         "idempotencyKey": str(uuid.uuid4())})
        done = await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 180_000}, timeout=190)
        assert done["status"] == "ok" and done["reply"] == "hello from the node", done
    finally:
        await c.close()
    # Claude Code on the node sent its model requests to the gateway's model gateway at the node's address for it
    model_lines = [line for line in relay.first_lines if "/model/" in line]
    assert model_lines and all(line.startswith("POST /model/") for line in model_lines), relay.first_lines
    assert len(api.requests) >= 1
    sent = [h.get("x-api-key", "") for h in api.seen_headers if "x-api-key" in h]
    assert sent and all(v == "test-key" for v in sent), sent  # the real key, added by the gateway
    assert not any("rcm-" in json.dumps(h) for h in api.seen_headers)  # the stand-in never left the gateway
    # the CLI ran on the node: its state is below the node's own HOME for the agent, not the gateway's
    assert (node.state / "agent-homes" / "work" / ".claude").exists() or \
        (node.state / "agent-homes" / "work" / ".claude.json").exists()


async def test_an_approval_from_the_chat_lets_claude_on_the_node_run_a_command_in_the_nodes_folder(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    key = "agent:work:approve"
    try:
        done = await start_turn(c, 'CALL Bash {"command": "touch made-on-node.txt && echo approved-$((6*7))", '
                                   '"description": "say it"}', key)
        event = await approval_asked(c, key)
        assert event["presentation"]["commandText"].startswith("Bash: touch made-on-node.txt"), event
        await c.call("exec.approval.resolve", {"id": event["id"], "decision": "allow-once"})
        ended = await wait_turn(done)
        assert ended["status"] == "ok", ended
        assert await last_text(c, key) == "done: approved-42"
        assert (world["code"] / "made-on-node.txt").exists()  # in the node's lent folder
    finally:
        await c.close()
