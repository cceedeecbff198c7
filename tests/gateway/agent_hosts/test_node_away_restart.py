"""Nothing accepted for a node's agent is lost: the message of a turn whose node host was killed mid-turn is kept
in the database, so the gateway killed (``kill -9``) and started again while the node is away still runs it when the
node comes back; and a turn cut off twice is not run a third time (as an interrupted turn after a gateway restart
is started again once): the chat is asked to send it again. Real processes: the gateway, the node host, its CLI."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.agent_hosts.parked import CUT, KEPT
from tests.gateway.agent_hosts.test_node_turns import FAKE_CLI, cli_log, lent_node, run_with_agents, send, wait
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.timeout(180)]

NODE = "laptop"
KEY = "agent:remote:main"


@pytest.fixture
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("agent-hosts-restart")
    code = root / "node-home" / "code"
    code.mkdir(parents=True)
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]},
                               {"id": "remote", "node": NODE, "workspace": str(code)}]}}
    gw = GatewayProcess(root / "gw", config=cfg)
    host = NodeHostProcess(root / "node-state", gw.port, token=None, name=NODE)
    host.extra_env.update(HOME=str(root / "node-home"), FAKE_CLI_LOG=str(code / "cli.log"))
    try:
        yield {"gw": gw.start(), "node": host, "code": code}
    finally:
        host.stop()
        gw.stop()


async def history(c: RawClient) -> list[str]:
    return [json.dumps(m) for m in (await c.call("chat.history", {"sessionKey": KEY, "limit": 20}))["messages"]]


async def started(world: dict[str, Any], before: int, text: str) -> bool:
    return any(text in str(seen.get("prompt")) for seen in cli_log(world)[before:])


async def test_a_kept_message_outlives_a_gateway_restart_and_a_turn_cut_off_twice_is_not_run_again(
        world: dict[str, Any]) -> None:
    gw: GatewayProcess = world["gw"]
    node: NodeHostProcess = world["node"]
    node.token = gw.token
    async with lent_node(gw, node, f"claude={sys.executable} {FAKE_CLI}", world["code"]):
        c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
        run_id = await send(c, KEY, "sleep:5 the first message")
        await until(lambda: started(world, 0, "the first message"), 30, "the CLI to start on the node")
        node.kill()
        done = await wait(c, run_id, 30)
        assert done["status"] == "error" and KEPT in done["error"], done
        await c.close()

        gw.stop(signal.SIGKILL)  # the gateway dies while the node is away
        gw.start()
        c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
        try:
            assert (await c.call("node.agents"))["waiting"] == {NODE: 1}  # the message is still kept
            runs = node.state / "agent-runs"
            assert list(runs.glob(f"{run_id}.*")), "the killed node host left its turn's files"
            before = len(cli_log(world))
            run_with_agents(node)  # back: the kept message runs on the node, after the restart
            await until(lambda: not list(runs.glob(f"{run_id}.*")), 20, "the node to clear what its turn left")
            await until(lambda: started(world, before, "the first message"), 40, "the kept message to run again")
            node.kill()  # cut off a second time: it is not started a third time
            await until(lambda: _said(c, CUT), 30, "the chat to be asked to send it again")
            assert (await c.call("node.agents"))["waiting"] == {}
            before = len(cli_log(world))
            run_with_agents(node)
            await until(lambda: _connected(c), 30, "the node to be back")
            await asyncio.sleep(4)  # longer than the kept messages' check
            assert len(cli_log(world)) == before, "a turn cut off twice ran again"
        finally:
            await c.close()


async def _said(c: RawClient, text: str) -> bool:
    return any(text in m for m in await history(c))


async def _connected(c: RawClient) -> bool:
    return any(n["displayName"] == NODE and n["connected"] for n in (await c.call("node.list"))["nodes"])
