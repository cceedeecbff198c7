"""An admin administers people, pairing and channels, but cannot become someone else, and cannot reach what the owner
has not opened to them: settings that widen access or run code, the owner's machines, the gateway itself.

One real gateway (the stand-in CLI as its agent), a paired node host, and real sign-ins: the owner holds the gateway
token, admin Carol and member Bob each sign in with a ``/login`` link of their own. Every refusal is judged by its
effect: the config file byte for byte, the file a node command would have made, whose sign-in a link gives.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_telegram import cli_runs
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

FAKE_CLI = str(ROOT / "tests/support/fake_cli.py")
MAIN = {"id": "main", "command": [sys.executable, FAKE_CLI]}


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[GatewayProcess]:
    state = tmp_path_factory.mktemp("admins") / "gw"
    config = {"agents": {"list": [MAIN]}, "session": {"dmScope": "per-channel-peer"}}
    proc = GatewayProcess(state, config=config, env={"FAKE_CLI_LOG": str(state / "cli.log")})
    await asyncio.to_thread(proc.start)
    owner = await operator(proc.url, proc.token or "")
    await owner.call("people.create", {"id": "bob", "name": "Bob"})
    await owner.call("people.create", {"id": "carol", "name": "Carol", "role": "admin"})
    await owner.close()
    try:
        yield proc
    finally:
        await asyncio.to_thread(proc.stop)


def redeem(gw: GatewayProcess, url: str) -> dict[str, Any]:
    """Open a ``/login`` link as its browser does: the sign-in credential and who it is for."""
    code = url.split("#signin=")[1]
    req = urllib.request.Request(gw.http + "/people/signin", data=json.dumps({"code": code}).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return dict(json.loads(resp.read()))


async def sign_in(gw: GatewayProcess, person: str) -> tuple[RawClient, str]:
    """``person`` signed in with a link the owner made; their socket and their credential."""
    owner = await operator(gw.url, gw.token or "")
    try:
        link = (await owner.call("people.loginLink", {"id": person}))["url"]
    finally:
        await owner.close()
    token = redeem(gw, link)["token"]
    return await operator(gw.url, token), token


@pytest.fixture
async def owner(gw: GatewayProcess) -> AsyncIterator[RawClient]:
    c = await operator(gw.url, gw.token or "")
    yield c
    await c.close()


@pytest.fixture
async def carol(gw: GatewayProcess) -> AsyncIterator[RawClient]:
    c, _ = await sign_in(gw, "carol")
    yield c
    await c.close()


def owner_only(frame: dict[str, Any], field: str | None = None) -> bool:
    """Refused as the owner's alone (naming ``field``, when the refusal is about one)."""
    return (not frame["ok"] and frame["error"]["code"] == "FORBIDDEN"
            and frame["error"]["details"].get("code") == "OWNER_ONLY"
            and (field is None or frame["error"]["details"].get("field") == field))


def forbidden(frame: dict[str, Any], field: str) -> bool:
    """Refused, naming ``field``."""
    return (not frame["ok"] and frame["error"]["code"] == "FORBIDDEN"
            and frame["error"]["details"].get("field") == field)


# -- becoming someone else ------------------------------------------------------------------------


async def test_an_admin_gets_a_sign_in_link_for_herself_only(gw: GatewayProcess, owner: RawClient,
                                                             carol: RawClient) -> None:
    asked = await carol.req("people.loginLink", {"id": "bob"})
    assert forbidden(asked, "id"), asked
    code = await carol.req("people.linkCode", {"id": "bob"})
    assert forbidden(code, "id"), code
    linked = await carol.req("people.link", {"id": "bob", "channel": "telegram", "senderId": "777"})
    assert forbidden(linked, "id"), linked
    token = await carol.req("mcp.tokens.create", {"name": "as-bob", "personId": "bob"})
    assert forbidden(token, "personId"), token
    bob = (await owner.call("people.get", {"id": "bob"}))["person"]
    assert "777" not in json.dumps(bob), bob
    assert not (await owner.call("mcp.tokens.list", {}))["tokens"]

    mine = await carol.call("people.loginLink", {"id": "carol"})
    assert redeem(gw, mine["url"])["person"]["id"] == "carol"
    # the owner still signs anyone in
    theirs = await owner.call("people.loginLink", {"id": "bob"})
    assert redeem(gw, theirs["url"])["person"]["id"] == "bob"


# -- settings that widen access or run code --------------------------------------------------------

EVIL = ["/bin/sh", "-c", "cat ~/.remoteclaw/remoteclaw.json"]
REFUSED: list[tuple[str, str, dict[str, Any]]] = [
    ("people.adminsReadTranscripts", "config.patch", {"patch": {"people": {"adminsReadTranscripts": True}}}),
    ("agents.list.0.command", "config.patch", {"patch": {"agents": {"list": [{**MAIN, "command": EVIL}]}}}),
    ("agents.list.0.sandbox.mode", "config.patch",
     {"patch": {"agents": {"list": [{**MAIN, "sandbox": {"mode": "off"}}]}}}),
    ("agents.defaults.sandbox.mode", "config.set", {"key": "agents.defaults.sandbox.mode", "value": "off"}),
    ("agents.defaults.sandbox.passEnv", "config.set", {"key": "agents.defaults.sandbox.passEnv",
                                                       "value": ["ANTHROPIC_API_KEY"]}),
    ("agents.list.1.command", "config.patch",  # a new agent of her own that runs anything
     {"patch": {"agents": {"list": [MAIN, {"id": "mine", "command": EVIL}]}}}),
    ("gateway.allowedOrigins", "config.set", {"key": "gateway.allowedOrigins", "value": ["https://evil.example"]}),
    ("people.signinUrl", "config.set", {"key": "people.signinUrl", "value": "https://evil.example/"}),
    ("plugins.load.paths", "config.set", {"key": "plugins.load.paths", "value": ["/tmp"]}),
    ("nodes.allowCommands", "config.set", {"key": "nodes.allowCommands", "value": ["system.run"]}),
    ("channels.ownerAllowFrom", "config.set", {"key": "channels.ownerAllowFrom", "value": ["telegram:999"]}),
    ("session.dmScope", "config.set", {"key": "session.dmScope", "value": "main"}),
]


@pytest.mark.parametrize(("path", "method", "change"), REFUSED, ids=[r[0] for r in REFUSED])
async def test_an_admin_cannot_change_what_is_the_owners(gw: GatewayProcess, carol: RawClient, path: str,
                                                         method: str, change: dict[str, Any]) -> None:
    file = gw.state_dir / "remoteclaw.json"
    before = file.read_bytes()
    base = (await carol.call("config.get", {}))["hash"]
    answer = await carol.req(method, {**change, "baseHash": base})
    assert owner_only(answer, path), answer
    assert path in answer["error"]["message"]
    assert file.read_bytes() == before
    assert (await carol.call("config.get", {}))["hash"] == base


async def test_a_whole_config_from_an_admin_is_refused_when_it_touches_the_owners(
        gw: GatewayProcess, carol: RawClient) -> None:
    file = gw.state_dir / "remoteclaw.json"
    before = file.read_bytes()
    got = await carol.call("config.get", {})
    agents = got["config"]["agents"]
    sandbox = {**agents["defaults"]["sandbox"], "mode": "off"}
    new = {**got["config"], "agents": {**agents, "defaults": {**agents["defaults"], "sandbox": sandbox}}}
    answer = await carol.req("config.apply", {"config": new, "baseHash": got["hash"]})
    assert owner_only(answer, "agents.defaults.sandbox.mode"), answer
    assert file.read_bytes() == before


async def test_an_admin_changes_ordinary_settings_and_unchanged_values_pass(gw: GatewayProcess,
                                                                            carol: RawClient) -> None:
    base = (await carol.call("config.get", {}))["hash"]
    await carol.call("config.patch", {"patch": {"logging": {"level": "debug"}}, "baseHash": base})
    assert json.loads((gw.state_dir / "remoteclaw.json").read_text())["logging"]["level"] == "debug"
    # the whole config as config.get shows it (secrets redacted), the agents' commands as they are
    got = await carol.call("config.get", {})
    new = {**got["config"], "logging": {**got["config"]["logging"], "level": "info"}}
    await carol.call("config.apply", {"config": new, "baseHash": got["hash"]})
    # an agent's own ordinary field, its command given as it was
    base = (await carol.call("config.get", {}))["hash"]
    await carol.call("config.patch", {"patch": {"agents": {"list": [{**MAIN, "name": "Main"}]}}, "baseHash": base})
    written = json.loads((gw.state_dir / "remoteclaw.json").read_text())
    assert written["agents"]["list"][0]["name"] == "Main" and written["logging"]["level"] == "info"


async def test_the_owner_still_changes_everything(gw: GatewayProcess, owner: RawClient) -> None:
    try:
        for path, method, change in REFUSED[:4]:
            base = (await owner.call("config.get", {}))["hash"]
            answer = await owner.req(method, {**change, "baseHash": base})
            assert answer["ok"], (path, answer)
            if path == "agents.list.0.command":
                running = (await owner.call("config.get", {}))["config"]
                assert running["agents"]["list"][0]["command"] == EVIL
        running = (await owner.call("config.get", {}))["config"]
        assert running["people"]["adminsReadTranscripts"] is True
        assert running["agents"]["list"][0]["sandbox"]["mode"] == "off"
        assert running["agents"]["defaults"]["sandbox"]["mode"] == "off"
    finally:
        base = (await owner.call("config.get", {}))["hash"]
        await owner.call("config.patch", {"baseHash": base, "patch": {
            "people": {"adminsReadTranscripts": False}, "agents": {"list": [MAIN], "defaults": {"sandbox": {
                "mode": "all"}}}}})


def config_cli(gw: GatewayProcess, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway.cli", "config", *args, "--url", gw.url, "--token", token],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env=gw.env())


async def test_the_config_cli_with_an_admins_credential_is_held_the_same(gw: GatewayProcess) -> None:
    c, token = await sign_in(gw, "carol")
    await c.close()
    file = gw.state_dir / "remoteclaw.json"
    before = file.read_bytes()
    out = await asyncio.to_thread(config_cli, gw, token, "set", "people.adminsReadTranscripts", "true")
    assert out.returncode != 0 and "people.adminsReadTranscripts" in out.stderr + out.stdout, out
    assert file.read_bytes() == before
    ok = await asyncio.to_thread(config_cli, gw, token, "set", "logging.consoleLevel", '"warning"')
    assert ok.returncode == 0, ok.stderr
    assert json.loads(file.read_text())["logging"]["consoleLevel"] == "warning"


async def test_an_admin_allowed_to_read_transcripts_still_runs_at_her_own_tier(
        gw: GatewayProcess, owner: RawClient) -> None:
    """``adminsReadTranscripts`` opens reading, not the owner's tier: her turn's run token is no owner's."""
    base = (await owner.call("config.get", {}))["hash"]
    await owner.call("config.patch", {"patch": {"people": {"adminsReadTranscripts": True}}, "baseHash": base})
    c, _ = await sign_in(gw, "carol")
    try:
        await c.call("chat.send", {"sessionKey": "agent:main:person:carol", "message": "carol's own turn",
                                   "idempotencyKey": uuid.uuid4().hex})
        run = await until(lambda: next((r for r in cli_runs(gw.state_dir) if "carol's own turn" in r["prompt"]),
                                       None), 30, "carol's turn")
        assert run["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "false", run["env"]
    finally:
        await c.close()
        base = (await owner.call("config.get", {}))["hash"]
        await owner.call("config.patch", {"patch": {"people": None}, "baseHash": base})


# -- the owner's machines and the gateway itself ---------------------------------------------------


def token_file(node: NodeHostProcess) -> dict[str, Any]:
    path = node.state / "node.json"
    return json.loads(path.read_text()) if path.exists() else {}


async def test_node_invoke_is_the_owners(gw: GatewayProcess, owner: RawClient, carol: RawClient,
                                         tmp_path: Path) -> None:
    with NodeHostProcess(tmp_path / "node", gw.port, token=gw.token, name="owners-box") as node:
        async def request() -> dict[str, Any] | None:
            pending = (await owner.call("node.pair.list"))["pending"]
            return next((r for r in pending if r["displayName"] == "owners-box"), None)

        found = await until(request, 20, "the node's pairing request")
        await owner.call("node.pair.approve", {"requestId": found["requestId"]})
        await until(lambda: token_file(node).get("token"), 30, "the node to save its token")
        assert node.approvals("add", "touch").returncode == 0
        node_id = found["nodeId"]
        marker = tmp_path / "ran-on-the-owners-machine"

        def run(key: str) -> dict[str, Any]:
            return {"nodeId": node_id, "command": "system.run", "params": {"argv": ["touch", str(marker)]},
                    "idempotencyKey": key}

        refused = await carol.req("node.invoke", run("carol"), timeout=30)
        assert owner_only(refused), refused
        assert not marker.exists()
        ran = await owner.req("node.invoke", run("owner"), timeout=30)
        assert ran["ok"], ran
        assert marker.exists()


OWNER_METHODS: list[tuple[str, dict[str, Any]]] = [
    ("plugins.setEnabled", {"pluginId": "memory", "enabled": False}),
    ("desktop.invoke", {"tool": "screenshot"}),
    ("desktop.replay", {"trajectoryId": "t1"}),
    ("browser.request", {"method": "GET", "path": "/tabs"}),
]


@pytest.mark.parametrize(("name", "params"), OWNER_METHODS, ids=[m[0] for m in OWNER_METHODS])
async def test_methods_that_act_as_the_owner_are_the_owners(carol: RawClient, owner: RawClient, name: str,
                                                            params: dict[str, Any]) -> None:
    answer = await carol.req(name, params)
    assert owner_only(answer), answer
    if name == "plugins.setEnabled":
        memory = next(p for p in (await owner.call("plugins.list", {}))["diagnostics"] if p["id"] == "memory")
        assert memory["status"] == "loaded", memory


async def test_gateway_restart_is_the_owners(gw: GatewayProcess, carol: RawClient) -> None:
    answer = await carol.req("gateway.restart", {})
    assert owner_only(answer), answer
    await asyncio.sleep(1)
    assert carol.close_code is None  # the gateway did not go down
