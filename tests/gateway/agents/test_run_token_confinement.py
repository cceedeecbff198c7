"""A run's token is its run's, and no more: real gateways, real stand-in agent CLIs holding real run tokens.

The attackers: a run whose token is kept by a socket opened while it ran (it must close when the run ends, and
answer nothing after); a stranger's run on a sandboxed agent that spawns a child on an owner-only agent without a
sandbox to read the config (refused, nothing runs); a member's run whose spawned child must run as the member
(their tier, a sandbox, their bill); a run asking ``status`` for the state dir; a member's page reading everyone's
addresses in its ``hello-ok``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from tests.support import SUPPORT
from tests.support.gateway_proc import GatewayProcess
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

PRY = str(SUPPORT / "prying_cli.py")
FAKE_CLI = str(SUPPORT / "fake_cli.py")
READ_WRITE = ["operator.read", "operator.write"]
VAULT_SECRET = "vault-secret-" + uuid.uuid4().hex
"""In the owner-only agent's config (its ``env``): what the spawn hop went for."""

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (non-owner runs "
                                "are refused without a sandbox)")


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("confine")
    cfg = {"agents": {"list": [
        {"id": "main", "command": [sys.executable, PRY]},  # sandboxed (the default: mode all)
        {"id": "vault", "command": [sys.executable, PRY], "people": [], "env": {"VAULT_API_KEY": VAULT_SECRET},
         "sandbox": {"mode": "off"}},  # the owner's alone, and unsandboxed
        {"id": "helper", "command": [sys.executable, PRY], "people": ["alice"]},
        {"id": "slow", "command": [sys.executable, FAKE_CLI]},
    ]}}
    with GatewayProcess(d / "gw", config=cfg, env={"FAKE_CLI_LOG": str(d / "cli.log")}) as proc:
        proc.cli_log = d / "cli.log"  # type: ignore[attr-defined]
        yield proc


async def turn(c: RawClient, key: str, ask: dict[str, Any]) -> dict[str, Any]:
    """One turn of the prying agent in ``key``; what it found."""
    res = await c.call("chat.send", {"sessionKey": key, "message": json.dumps(ask),
                                     "idempotencyKey": str(uuid.uuid4())})
    done = await c.call("agent.wait", {"runId": res["runId"], "timeoutMs": 60000}, timeout=70)
    assert done["status"] == "ok", done
    found, _ = json.JSONDecoder().raw_decode(done["reply"])
    return dict(found)


def redeem(gw: GatewayProcess, code: str) -> str:
    req = urllib.request.Request(gw.http + "/people/signin", data=json.dumps({"code": code}).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return str(json.loads(resp.read())["token"])


async def sign_in(gw: GatewayProcess, owner: RawClient, person: str) -> RawClient:
    """``person``'s web chat page, signed in with a link the owner made."""
    link = (await owner.call("people.loginLink", {"id": person}))["url"]
    token = await asyncio.to_thread(redeem, gw, link.split("#signin=")[1])
    page = await RawClient.open(gw.url)
    hello = await page.handshake(token, client_id="webchat-ui", mode="webchat")
    assert hello["ok"], hello
    return page


@pytest.fixture(scope="module")
async def alice(gw: GatewayProcess) -> Any:
    owner = await operator(gw.url, gw.token or "")
    people = {p["id"] for p in (await owner.call("people.list", {}))["people"]}
    if "alice" not in people:
        await owner.call("people.create", {"id": "alice", "name": "Alice", "role": "member"})
    await owner.close()
    return "alice"


def usage_person(gw: GatewayProcess, run_id: str) -> list[str | None]:
    with sqlite3.connect(gw.state_dir / "remoteclaw.db") as db:
        return [r[0] for r in db.execute("select person_id from turn_usage where run_id = ?", (run_id,))]


async def test_a_socket_kept_from_a_run_is_closed_when_the_run_ends_and_answers_nothing(
        gw: GatewayProcess) -> None:
    key = f"agent:slow:linger:{uuid.uuid4().hex[:8]}"
    stranger = await operator(gw.url, gw.token or "", scopes=READ_WRITE)
    res = await stranger.call("chat.send", {"sessionKey": key, "message": "sleep:3 working",
                                            "idempotencyKey": str(uuid.uuid4())})
    log: Path = gw.cli_log  # type: ignore[attr-defined]

    def token() -> str | None:
        lines = log.read_text().splitlines() if log.exists() else []
        found = [json.loads(x)["env"] for x in lines]
        return next((e["REMOTECLAW_GATEWAY_TOKEN"] for e in found if e.get("REMOTECLAW_SESSION_KEY") == key), None)

    stolen = await until(token, timeout=20, what="the run's token")
    kept = await RawClient.open(gw.url)
    assert (await kept.handshake(stolen, scopes=READ_WRITE))["ok"]
    assert (await kept.req("sessions.list", {}))["ok"]  # while the run lasts, the token works
    done = await stranger.call("agent.wait", {"runId": res["runId"], "timeoutMs": 30000}, timeout=40)
    assert done["status"] == "ok", done
    await stranger.close()
    await asyncio.sleep(0.5)
    got = {}
    for method, params in [("sessions.list", {}), ("agent", {"sessionKey": key, "message": "again",
                                                             "idempotencyKey": str(uuid.uuid4())})]:
        try:
            got[method] = await kept.req(method, params, timeout=3)
        except (ConnectionError, ConnectionClosed, TimeoutError):
            got[method] = None  # the socket is gone
    assert not [m for m, frame in got.items() if frame is not None and frame["ok"]], got
    try:
        code = await kept.wait_closed(5)
    except TimeoutError:
        code = None
    assert code == 1008 and kept.close_reason == "agent run ended", (code, kept.close_reason)


async def test_a_strangers_run_cannot_hop_to_an_owner_only_unsandboxed_agent(gw: GatewayProcess) -> None:
    owner = await operator(gw.url, gw.token or "")
    config = str(gw.state_dir / "remoteclaw.json")
    before = {s["key"] for s in (await owner.call("sessions.list", {}))["sessions"]}
    stranger = await operator(gw.url, gw.token or "", scopes=READ_WRITE)
    try:
        hop = json.dumps({"cat": [config], "secrets": [VAULT_SECRET, gw.token]})
        for method in ("sessions.spawn", "sessions.subagents"):
            key = f"agent:main:hop:{uuid.uuid4().hex[:8]}"
            params = {"agentId": "vault", "task": hop}
            if method == "sessions.subagents":
                params |= {"action": "spawn", "sessionKey": key}
            found = await turn(stranger, key, {"calls": [
                [method, params], ["agent.wait", {"runId": f"${method}.runId", "timeoutMs": 20000}]]})
            said = json.dumps(found["answers"])
            assert VAULT_SECRET not in said and str(gw.token) not in said and '"leaked"' not in said, said
            refusal = found["answers"][method]
            assert isinstance(refusal, dict) and refusal.get("details", {}).get("field") == "agentId", refusal
            assert "vault" in refusal["message"], refusal
        after = {s["key"] for s in (await owner.call("sessions.list", {}))["sessions"]}
        assert not [k for k in after - before if k.startswith("agent:vault:")], after - before  # nothing ran there
    finally:
        await stranger.close()
        await owner.close()


async def test_a_members_child_runs_as_the_member_sandboxed_and_billed_to_her(gw: GatewayProcess,
                                                                             alice: str) -> None:
    owner = await operator(gw.url, gw.token or "")
    page = await sign_in(gw, owner, alice)
    try:
        config = str(gw.state_dir / "remoteclaw.json")
        child_ask = json.dumps({"cat": [config], "secrets": [VAULT_SECRET]})
        found = await turn(page, f"agent:main:person:{alice}", {"calls": [
            ["sessions.spawn", {"agentId": "vault", "task": child_ask}],  # not open to her: refused
            ["sessions.subagents", {"action": "spawn", "agentId": "helper", "task": child_ask,
                                    "sessionKey": f"agent:main:person:{alice}"}],
            ["agent.wait", {"runId": "$sessions.subagents.runId", "timeoutMs": 30000}]]})
        answers = found["answers"]
        assert answers["sessions.spawn"]["details"]["field"] == "agentId", answers["sessions.spawn"]
        waited = answers["agent.wait"]
        assert waited["status"] == "ok", waited
        child, _ = json.JSONDecoder().raw_decode(waited["reply"])
        assert child["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "false"  # her tier
        assert child["cat"][config] is None and child["leaked"] == []  # sandboxed: the state dir is out of sight
        assert usage_person(gw, waited["runId"]) == [alice]  # her bill
        spawned = answers["sessions.subagents"]["sessionKey"]
        mine = {s["key"] for s in (await page.call("sessions.list", {}))["sessions"]}
        assert spawned in mine  # her child, in her sessions
    finally:
        await page.close()
        await owner.close()


async def test_status_tells_a_run_no_state_dir(gw: GatewayProcess) -> None:
    stranger = await operator(gw.url, gw.token or "", scopes=READ_WRITE)
    owner = await operator(gw.url, gw.token or "")
    try:
        found = await turn(stranger, f"agent:main:status:{uuid.uuid4().hex[:8]}", {"calls": [["status", {}]]})
        assert found["calls"]["status"] == "ok"
        assert str(gw.state_dir) not in json.dumps(found["answers"]["status"]), found["answers"]["status"]
        assert (await owner.call("status", {}))["stateDir"] == str(gw.state_dir)  # the owner still sees it
    finally:
        await stranger.close()
        await owner.close()


async def test_a_members_hello_lists_only_her_own_connections(gw: GatewayProcess, alice: str) -> None:
    owner = await operator(gw.url, gw.token or "", client_id="openclaw-control-ui", mode="ui")
    page = await sign_in(gw, owner, alice)
    try:
        assert page.hello is not None and owner.hello is not None
        mine = page.hello["server"]["connId"]
        listed = page.hello["snapshot"]["presence"]
        assert {e["instanceId"] for e in listed} <= {mine}, listed
        assert owner.hello["server"]["connId"] not in json.dumps(listed)
        await asyncio.sleep(0.3)  # the owner's panel still gets every entry, and the deltas; her page no others'
        theirs = [e for e in await owner.call("system-presence") if e["instanceId"] == mine]
        assert theirs and theirs[0].get("ip"), theirs
        while not page.events.empty():
            event = page.events.get_nowait()
            if event["event"] == "presence":
                assert owner.hello["server"]["connId"] not in json.dumps(event), event
    finally:
        await page.close()
        await owner.close()
