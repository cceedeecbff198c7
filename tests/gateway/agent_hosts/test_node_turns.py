"""Agent turns on a node: a node host as a second real process, with its own HOME and state dir, runs an agent's
turns for the gateway (``agents.list[].node``).

The agent CLI on the node is the stand-in (``tests/support/fake_cli.py``) its owner lends; it runs in the node's
own bubblewrap sandbox, in a folder the node lends, and its MCP shim connects back to the gateway by itself. The
assertions are on what the node's CLI saw (its log, in the lent folder), what the chat got (``chat`` events,
``agent.wait``) and what the gateway and the node say about placement.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.nodes.test_node_host import pair
from tests.support import SUPPORT
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.timeout(180)]

FAKE_CLI = str(SUPPORT / "fake_cli.py")
PRYING_CLI = str(SUPPORT / "prying_cli.py")
NODE = "workbench"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("agent-hosts")
    node_home = root / "node-home"
    code = node_home / "code"
    code.mkdir(parents=True)
    cfg = {"agents": {"list": [
        {"id": "main", "command": [sys.executable, FAKE_CLI]},
        {"id": "remote", "node": NODE, "workspace": str(code)},
        {"id": "private", "node": NODE},
        {"id": "pry", "node": NODE, "runtime": "gemini", "workspace": str(code)},
        {"id": "nowhere", "node": "no-such-node"},
        {"id": "covered", "node": NODE, "workspace": str(code), "nodeFallback": "main"}]}}
    with GatewayProcess(root / "gw", config=cfg, env={"FAKE_CLI_LOG": str(root / "local-cli.log")}) as gw:
        yield {"gw": gw, "root": root, "home": node_home, "code": code}


def local_log(world: dict[str, Any]) -> list[dict[str, Any]]:
    """What the stand-in CLI run on the gateway's machine logged (agent ``main``)."""
    path = world["root"] / "local-cli.log"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def node_process(world: dict[str, Any]) -> NodeHostProcess:
    gw: GatewayProcess = world["gw"]
    node = NodeHostProcess(world["root"] / "node-state", gw.port, token=gw.token, name=NODE)
    node.extra_env.update(HOME=str(world["home"]), FAKE_CLI_LOG=str(world["code"] / "cli.log"))
    return node


def node_cli(node: NodeHostProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nodes", *args], cwd=ROOT, env=node.env(), capture_output=True,
                          text=True, timeout=30, check=False)


def run_with_agents(node: NodeHostProcess) -> None:
    """``remoteclaw-node run --agents``: the node offers agent turns for this run."""
    node.proc = subprocess.Popen([sys.executable, "-m", "nodes", "run", "--port", str(node.port), "--display-name",
                                  node.name, "--no-browser", "--no-desktop", "--agents"],
                                 cwd=ROOT, env=node.env(), stdout=node.log.open("ab"), stderr=subprocess.STDOUT)


def remoteclaw(gw: GatewayProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway.cli", *args, "--url", gw.url, "--token", gw.token or ""],
                          cwd=ROOT, capture_output=True, text=True, timeout=30, check=False,
                          env={**os.environ, "REMOTECLAW_STATE_DIR": str(gw.state_dir)})


@pytest.fixture(scope="module")
async def node(world: dict[str, Any]) -> AsyncIterator[NodeHostProcess]:
    host = node_process(world)
    host.state.mkdir(parents=True)
    # What the node's owner lends, set with the node's own command (the gateway cannot change it).
    lent = f"claude={sys.executable} {FAKE_CLI},gemini={sys.executable} {PRYING_CLI}"
    assert node_cli(host, "agents", "set", "clis", lent).returncode == 0
    assert node_cli(host, "agents", "set", "folders", str(world["code"])).returncode == 0
    shown = json.loads(node_cli(host, "agents", "show").stdout)
    assert shown["found"]["claude"][1] == FAKE_CLI and shown["credentials"] == "gateway"
    gw: GatewayProcess = world["gw"]
    admin = await operator(gw.url, gw.token or "")
    run_with_agents(host)
    try:
        pending = await until(lambda: _pending(admin), 20, "the node's pairing request")
        assert "agent.run" in pending["commands"] and "agent-cli:claude" in pending["caps"]
        assert f"agent-folder:{world['code']}" in pending["caps"]  # the owner sees what is lent before approving
        await pair(admin, host)
        yield host
    finally:
        await admin.close()
        host.stop()


async def _pending(admin: RawClient) -> dict[str, Any] | None:
    listing = await admin.call("node.pair.list")
    return next((r for r in listing["pending"] if r["displayName"] == NODE), None)


def cli_log(world: dict[str, Any]) -> list[dict[str, Any]]:
    path: Path = world["code"] / "cli.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def send(c: RawClient, key: str, message: str) -> str:
    res = await c.call("chat.send", {"sessionKey": key, "message": message, "idempotencyKey": str(uuid.uuid4())})
    return str(res["runId"])


async def wait(c: RawClient, run_id: str, timeout: float = 60) -> dict[str, Any]:
    return dict(await c.call("agent.wait", {"runId": run_id, "timeoutMs": int(timeout * 1000)}, timeout=timeout + 5))


async def streamed(c: RawClient, run_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run's last ``chat`` event (final, error or aborted) and the deltas before it."""
    deltas = []
    while True:
        p = (await c.next_event("chat", timeout=60))["payload"]
        if p.get("runId") != run_id:
            continue
        if p["state"] == "delta":
            deltas.append(p)
        if p["state"] in ("final", "error", "aborted"):
            return p, deltas


async def stopped_on_node(world: dict[str, Any], node: NodeHostProcess, sender: RawClient, stopper: RawClient,
                          key: str = "agent:remote:main") -> None:
    """A long turn sent by ``sender``, ``/stop`` by ``stopper`` once the CLI runs on the node: the turn ends at
    once, the node kills the CLI and removes the turn's files."""
    before = len(cli_log(world))
    run_id = await send(sender, key, "sleep:60")
    await until(lambda: len(cli_log(world)) > before, 30, "the CLI to start on the node")
    asked = time.monotonic()
    await stopper.call("chat.abort", {"sessionKey": key})
    done = await wait(sender, run_id, 20)
    assert done["status"] == "error" and "abort" in done.get("error", ""), done
    assert time.monotonic() - asked < 10
    await until(lambda: "cancelled invocation" in node.output(), 15, "the node to stop the turn")
    await until(lambda: not list((node.state / "agent-runs").glob(f"{run_id}*")), 15, "the turn's files gone")


@asynccontextmanager
async def lent_node(gw: GatewayProcess, host: NodeHostProcess, clis: str, folder: Path) -> AsyncIterator[None]:
    """``host`` lending ``clis`` in ``folder`` (set with the node's own command), started with ``--agents`` and
    paired through ``gw``; stopped at the end."""
    host.state.mkdir(parents=True, exist_ok=True)
    assert node_cli(host, "agents", "set", "clis", clis).returncode == 0
    assert node_cli(host, "agents", "set", "folders", str(folder)).returncode == 0
    admin = await operator(gw.url, gw.token or "")
    run_with_agents(host)
    try:
        await pair(admin, host)
        yield
    finally:
        await admin.close()
        host.stop()


async def test_a_turn_runs_on_the_node_in_its_folder_and_home_and_its_shim_reaches_the_gateway(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        done = await wait(c, await send(c, "agent:remote:main", 'tool:sessions_list {"limit": 5}'))
        assert done["status"] == "ok", done
        assert "agent:remote:main" in done["reply"]  # the shim on the node asked the gateway, with the run's token
        seen = cli_log(world)[-1]
        assert seen["cwd"] == str(world["code"])  # the node's folder
        assert seen["home"] == str(node.state / "agent-homes" / "remote")  # a HOME of the agent's own, on the node
        assert seen["sandboxed"]  # inside the node's bubblewrap sandbox
        env = seen["env"]
        assert env["REMOTECLAW_SESSION_KEY"] == "agent:remote:main" and env["REMOTECLAW_AGENT_ID"] == "remote"
        assert env["REMOTECLAW_GATEWAY_TOKEN"].startswith("run-")  # the run's own token, never the node's
        assert env["REMOTECLAW_SIDE_EFFECTS_FILE"].startswith(str(node.state))
        local = world["root"] / "local-cli.log"
        assert not local.exists() or not local.read_text(), "nothing runs on the gateway's side"
        # An agent with no workspace works in a private folder per session on the node, removed after the turn;
        # its sandbox shows it that folder alone, not the lent one the other agent works in (the stand-in's log
        # there cannot be opened).
        done = await wait(c, await send(c, "agent:private:main", "hello private"))
        assert done["status"] == "error" and "No such file or directory" in done["error"], done
        assert str(world["code"] / "cli.log") in done["error"]
        runs = node.state / "agent-runs"
        assert runs.is_dir() and not [p for p in runs.iterdir() if p.is_dir()], "the private workspace was removed"
    finally:
        await c.close()


async def test_the_turn_sees_neither_the_nodes_state_nor_the_gateways(world: dict[str, Any],
                                                                      node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    token = json.loads((node.state / "node.json").read_text())["token"]
    ask = {"paths": [str(node.state / "node.json"), str(node.state / "identity.json"), str(gw.state_dir)],
           "secrets": [token, gw.token], "calls": [["sessions.list", {}]]}
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        done = await wait(c, await send(c, "agent:pry:main", json.dumps(ask)))
        assert done["status"] == "ok", done
        found, _ = json.JSONDecoder().raw_decode(done["reply"])
        assert not any(found["read"].values()), found["read"]  # the node's token and key, the gateway's state
        assert found["leaked"] == [], found["leaked"]  # in no process's environment it can see
        assert found["calls"]["sessions.list"] == "ok"  # yet it reaches the gateway with its run's token
    finally:
        await c.close()


async def test_a_live_reply_streams_back_and_usage_is_recorded(world: dict[str, Any], node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        p, deltas = await streamed(c, await send(c, "agent:remote:main", "stream:3 words come one by one"))
        assert p["state"] == "final", p
        assert len(deltas) >= 3, deltas  # word by word, as the node's CLI wrote it
        usage = await c.call("sessions.usage", {"key": "agent:remote:main"})
        assert usage["totals"]["input"] >= 10, usage["totals"]  # the tokens the node's CLI stated, recorded here
    finally:
        await c.close()


async def test_stop_ends_the_turn_on_the_node(world: dict[str, Any], node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        await stopped_on_node(world, node, c, c)
    finally:
        await c.close()


async def test_placement_says_where_each_agent_runs_and_why_not(world: dict[str, Any],
                                                                 node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        placed = {a["agentId"]: a for a in (await c.call("node.agents"))["agents"]}
        assert placed["main"]["runsOn"] == "gateway"
        assert placed["remote"]["placeable"] and placed["remote"]["nodeName"] == NODE
        assert not placed["nowhere"]["placeable"] and "no-such-node" in placed["nowhere"]["why"]
        done = await wait(c, await send(c, "agent:nowhere:main", "hello"))
        assert done["status"] == "error" and "not a node this gateway knows" in done["error"], done
        # node.invoke cannot send an agent turn by hand: placement builds it
        refused = await c.req("node.invoke", {"nodeId": NODE, "command": "agent.run", "params": {},
                                              "idempotencyKey": str(uuid.uuid4())})
        assert refused["error"]["details"]["field"] == "command"
        out = remoteclaw(gw, "nodes", "agents")
        assert out.returncode == 0, out.stderr
        assert "remote" in out.stdout and NODE in out.stdout and "no-such-node" in out.stdout
    finally:
        await c.close()


async def test_a_node_killed_mid_turn_gets_a_clear_answer_and_the_message_runs_when_it_returns(
        world: dict[str, Any], node: NodeHostProcess) -> None:
    gw: GatewayProcess = world["gw"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        before = len(cli_log(world))
        run_id = await send(c, "agent:remote:main", "sleep:4 and then answer")
        await until(lambda: len(cli_log(world)) > before, 30, "the CLI to start on the node")
        node.kill()
        done = await wait(c, run_id, 30)
        assert done["status"] == "error", done
        assert NODE in done["error"] and "kept" in done["error"], done  # said in the chat, in one line
        history = await c.call("chat.history", {"sessionKey": "agent:remote:main", "limit": 5})
        assert any("kept" in str(m) for m in history["messages"])
        # offline: a new message is kept too, with the same answer
        offline = await wait(c, await send(c, "agent:remote:main", "while away"))
        assert "offline" in offline["error"] and "kept" in offline["error"], offline
        # an agent with a nodeFallback: the fallback agent (here, on the gateway's machine) takes it meanwhile
        covered = await wait(c, await send(c, "agent:covered:main", "covered while away"))
        assert covered["status"] == "ok" and "echo: covered while away" in covered["reply"], covered
        assert any("covered while away" in str(e.get("prompt")) for e in local_log(world))  # the local CLI ran it
        assert not any("covered while away" in str(e.get("prompt")) for e in cli_log(world))
        said = (await c.call("chat.history", {"sessionKey": "agent:covered:main", "limit": 5}))["messages"][-1]
        assert said["fallbackFor"] == {"agentId": "covered", "node": NODE}, said
        # back: the kept messages run, in order, on the node
        run_with_agents(node)

        async def answered() -> bool:  # the two kept messages, answered together in one turn, in their order
            history = await c.call("chat.history", {"sessionKey": "agent:remote:main", "limit": 10})
            texts = [json.dumps(m) for m in history["messages"]]
            return any("echo:" in t and "sleep:4 and then answer" in t and "while away" in t
                       and t.index("sleep:4") < t.index("while away") for t in texts)

        await until(answered, 60, "the kept messages to run on the node once it is back")
        # and the covered agent's turns are the node's again
        back = await wait(c, await send(c, "agent:covered:main", "the node is back"), 60)
        assert back["status"] == "ok", back
        assert any("the node is back" in str(e.get("prompt")) for e in cli_log(world))
    finally:
        await c.close()
