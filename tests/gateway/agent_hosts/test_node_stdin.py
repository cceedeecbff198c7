"""The stdin of a node turn's CLI: the gateway writes to it (``agent.input``) while the turn runs on the node.

A node host as a second real process lends stand-ins: the stream-json CLI (``fake_cli.py``, for steering), an ACP
agent (``fake_acp_agent.py``, JSON-RPC over stdio both ways: as ``runtime: acp`` and as Gemini CLI's ``--acp``) and
a Codex app-server (``fake_codex_app.py``). A message sent while a ``steering: steer`` turn
runs there reaches the same CLI process on the node (its log says so) and is answered in the same turn; an ACP
agent on the node asks the person through the chat's approval, and the answer travels back down its stdin; ``/stop``
ends such a turn. The same ACP stand-in run on the gateway's machine answers the same way (one adapter for both).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.agent_hosts.test_node_turns import (
    cli_log,
    lent_node,
    node_cli,
    node_process,
    run_with_agents,
    send,
    wait,
)
from tests.gateway.agents.runtimes.flows import approval_asked, start_turn
from tests.nodes.test_node_host import pair
from tests.support import SUPPORT
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.timeout(240)]

FAKE_CLI = str(SUPPORT / "fake_cli.py")
FAKE_ACP = str(SUPPORT / "fake_acp_agent.py")
FAKE_CODEX = str(SUPPORT / "fake_codex_app.py")
SILENCE_S = 5
"""The no-output watchdog: a turn waiting on the person longer than this is not stopped (on the node either)."""
NODE = "workbench"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("node-stdin")
    node_home = root / "node-home"
    code = node_home / "code"
    code.mkdir(parents=True)
    cfg = {"agents": {"noOutputTimeoutSeconds": SILENCE_S, "list": [
        {"id": "steer", "node": NODE, "workspace": str(code), "steering": "steer"},
        {"id": "acp", "runtime": "acp", "acp": {"command": "fake-acp"}, "node": NODE, "workspace": str(code),
         "permissions": "ask"},
        {"id": "codex", "runtime": "codex", "node": NODE, "workspace": str(code), "permissions": "ask"},
        {"id": "gem", "runtime": "gemini", "node": NODE, "workspace": str(code), "permissions": "ask"},
        {"id": "main", "runtime": "acp", "command": [sys.executable, FAKE_ACP],
         "permissions": "ask"}]},
        "approvals": {"timeoutSeconds": 60}}
    with GatewayProcess(root / "gw", config=cfg, env={"FAKE_CLI_LOG": str(root / "local-cli.log")}) as gw:
        yield {"gw": gw, "root": root, "home": node_home, "code": code}


@pytest.fixture(scope="module")
async def node(world: dict[str, Any]) -> AsyncIterator[NodeHostProcess]:
    host = node_process(world)
    host.state.mkdir(parents=True)
    lent = (f"claude={sys.executable} {FAKE_CLI},acp={sys.executable} {FAKE_ACP},"
            f"codex={sys.executable} {FAKE_CODEX},gemini={sys.executable} {FAKE_ACP}")
    assert node_cli(host, "agents", "set", "clis", lent).returncode == 0
    assert node_cli(host, "agents", "set", "folders", str(world["code"])).returncode == 0
    gw: GatewayProcess = world["gw"]
    admin = await operator(gw.url, gw.token or "")
    run_with_agents(host)
    try:
        await pair(admin, host)
        yield host
    finally:
        await admin.close()
        host.stop()


async def history(c: RawClient, key: str) -> list[dict[str, Any]]:
    return list((await c.call("chat.history", {"sessionKey": key, "limit": 20}))["messages"])


async def reply_of(c: RawClient, key: str, ended: dict[str, Any]) -> str:
    """The agent's reply in the turn that ended ``ended``: the approval's outcome notice is told to the chat beside
    the turn, so it may come after the reply when the tool runs fast."""
    replies = [m for m in await history(c, key) if m["role"] == "assistant" and m.get("runId") == ended["runId"]]
    assert replies, (ended, await history(c, key))
    return json.dumps(replies[-1])


async def test_a_message_sent_during_a_node_turn_steers_the_running_cli(world: dict[str, Any],
                                                                        node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    key = "agent:steer:main"
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        before = len(cli_log(world))
        run_id = await send(c, key, "sleep:4 the first part")
        started = await until(lambda: next((e for e in cli_log(world)[before:] if "the first part" in
                                            str(e.get("prompt"))), None), 60, "the CLI to start on the node")
        assert "--input-format" in started["argv"]  # its stdin stays open for more messages
        await send(c, key, "and the second part")
        done = await wait(c, run_id, 60)
        assert done["status"] == "ok", done
        assert "echo: sleep:4 the first part" in done["reply"] and "echo: and the second part" in done["reply"], done
        # the second message was written to the running CLI on the node: the same process read it
        steered_log = world["code"] / "cli.log.steered"
        steered = [json.loads(x) for x in steered_log.read_text().splitlines()] if steered_log.exists() else []
        assert [e["steered"] for e in steered] == ["and the second part"], steered
        assert steered[0]["pid"] == started["pid"]
        users = [m for m in await history(c, key) if m["role"] == "user"][-2:]  # one turn carried both
        assert [m.get("runId") for m in users] == [run_id, run_id]
        # nobody sends a node turn's stdin by hand
        refused = await c.req("node.invoke", {"nodeId": NODE, "command": "agent.input",
                                              "params": {"turnId": run_id, "seq": 99, "data": "x"},
                                              "idempotencyKey": str(uuid.uuid4())})
        assert refused["error"]["details"]["field"] == "command", refused
    finally:
        await c.close()


def acp_log(world: dict[str, Any], folder: Path | None = None) -> list[dict[str, Any]]:
    path = (folder / "cli.log") if folder is not None else world["code"] / "cli.log"
    return [e for e in (json.loads(x) for x in path.read_text().splitlines()) if e.get("acp")] if path.exists() else []


async def asked_and_answered(c: RawClient, key: str, command: str, decision: str, *,
                             think_s: float = 0) -> dict[str, Any]:
    """A turn that asks about ``command``, decided ``decision`` from the chat's approval after ``think_s``: its
    end."""
    done = await start_turn(c, f"ask:{command}", key)
    event = await approval_asked(c, key)
    assert event["presentation"]["commandText"] == f"Bash: {command}", event
    await asyncio.sleep(think_s)
    await c.call("exec.approval.resolve", {"id": event["id"], "decision": decision})
    return dict(await done)


async def test_an_acp_agent_on_the_node_asks_the_chat_and_the_answer_reaches_it(world: dict[str, Any],
                                                                                node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    key = "agent:acp:main"
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        # the person takes longer than the watchdog: the node hears that the CLI waits on them, and lets it wait
        ended = await asked_and_answered(c, key, "touch acp-made.txt && echo acp-$((6*7))", "allow-once",
                                         think_s=SILENCE_S + 3)
        assert ended["status"] == "ok", ended
        reply = await reply_of(c, key, ended)
        assert "ran: acp-42" in reply, reply
        assert (world["code"] / "acp-made.txt").exists()  # run by the agent in the node's lent folder
        seen = acp_log(world)
        assert seen[0]["cwd"] == str(world["code"]) and seen[0]["home"] == str(node.state / "agent-homes" / "acp")
        assert seen[0]["mcp"] == ["remoteclaw"]  # our shim, in session/new, as for a local ACP turn
        assert [e["decision"] for e in seen if "decision" in e] == ["yes"]
        ended = await asked_and_answered(c, key, "touch acp-refused.txt", "deny")
        assert ended["status"] == "ok", ended
        assert "declined" in await reply_of(c, key, ended)
        assert not (world["code"] / "acp-refused.txt").exists()
    finally:
        await c.close()


async def test_stop_ends_an_acp_turn_on_the_node(world: dict[str, Any], node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    key = "agent:acp:stop"
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        before = len(acp_log(world))
        run_id = await send(c, key, "sleep:60")
        await until(lambda: any("sleep:60" in str(e.get("prompt")) for e in acp_log(world)[before:]), 60,
                    "the prompt to reach the agent on the node")
        asked = time.monotonic()
        await c.call("chat.abort", {"sessionKey": key})
        done = await wait(c, run_id, 30)
        assert done["status"] == "error" and "abort" in done.get("error", ""), done
        assert time.monotonic() - asked < 15
        await until(lambda: not list((node.state / "agent-runs").glob(f"{run_id}*")), 20, "the turn's files gone")
    finally:
        await c.close()


async def test_the_same_acp_agent_runs_on_the_gateways_machine_through_the_same_adapter(
        world: dict[str, Any]) -> None:
    gw: GatewayProcess = world["gw"]
    key = "agent:main:main"
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        ended = await asked_and_answered(c, key, "echo local-$((6*7))", "allow-once")
        assert ended["status"] == "ok", ended
        assert "ran: local-42" in await reply_of(c, key, ended)
    finally:
        await c.close()


async def test_codex_app_server_on_the_node_asks_the_chat_and_the_decision_reaches_it(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    key = "agent:codex:main"
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        ended = await asked_and_answered(c, key, "touch codex-made.txt && echo codex-$((6*7))", "allow-once",
                                         think_s=SILENCE_S + 3)
        assert ended["status"] == "ok", ended
        assert "ran: codex-42" in await reply_of(c, key, ended)
        assert (world["code"] / "codex-made.txt").exists()
        seen = [e for e in cli_log(world) if e.get("codex")]
        assert [e["decision"] for e in seen if "decision" in e] == ["accept"]
        assert seen[0]["cwd"] == str(world["code"])
    finally:
        await c.close()


async def test_gemini_in_its_acp_mode_on_the_node_asks_the_chat_and_the_answer_reaches_it(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    key = "agent:gem:main"
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        before = len(acp_log(world))
        ended = await asked_and_answered(c, key, "touch gem-made.txt && echo gem-$((6*7))", "allow-once")
        assert ended["status"] == "ok", ended
        assert "ran: gem-42" in await reply_of(c, key, ended)
        assert (world["code"] / "gem-made.txt").exists()
        seen = acp_log(world)[before:]
        assert seen[0]["home"] == str(node.state / "agent-homes" / "gem")  # the Gemini agent's, on the node
        assert [e["decision"] for e in seen if "decision" in e] == ["yes"]
    finally:
        await c.close()


async def test_a_node_that_takes_no_stdin_refuses_the_conversations_and_queues_steering(
        tmp_path: Path) -> None:
    """``nodes.denyCommands: [agent.input]`` (as a node without it): the runtimes that talk over stdin are refused
    with a message saying so, and a message sent mid-turn waits for the next turn instead of steering."""
    code = tmp_path / "node-home" / "code"
    code.mkdir(parents=True)
    cfg = {"nodes": {"denyCommands": ["agent.input"]}, "agents": {"default": "steer", "list": [
        {"id": "steer", "node": NODE, "workspace": str(code), "steering": "steer"},
        {"id": "acp", "runtime": "acp", "acp": {"command": "fake-acp"}, "node": NODE, "workspace": str(code)}]}}
    with GatewayProcess(tmp_path / "gw", config=cfg) as gw:
        world = {"gw": gw, "root": tmp_path, "home": tmp_path / "node-home", "code": code}
        host = node_process(world)
        async with lent_node(gw, host, f"claude={sys.executable} {FAKE_CLI},acp={sys.executable} {FAKE_ACP}",
                             code):
            c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
            try:
                done = await wait(c, await send(c, "agent:acp:main", "hello"))
                assert done["status"] == "error" and "agent.input" in done["error"], done
                assert "talks to its CLI over stdin" in done["error"], done
                first = await send(c, "agent:steer:main", "sleep:3 the first part")
                await until(lambda: any("the first part" in str(e.get("prompt")) for e in cli_log(world)), 60,
                            "the CLI to start on the node")
                second = await send(c, "agent:steer:main", "and the second part")
                assert second != first  # queued for a turn of its own
                assert (await wait(c, first))["status"] == "ok"
                later = await wait(c, second)
                assert later["status"] == "ok" and "echo: and the second part" in later["reply"], later
                assert "--input-format" not in cli_log(world)[0]["argv"]  # its stdin was never kept open
            finally:
                await c.close()
