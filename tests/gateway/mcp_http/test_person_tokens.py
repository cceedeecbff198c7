"""A person's own ``/mcp`` tokens (docs/people.md): made by the person signed in with their own credential, they
reach what the person reaches (their conversations, the baseline tools) and nothing of anyone else's; another
member can neither list nor revoke them; a guest's reaches one conversation; they stop working when the person is
removed. Real gateway process, real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import FAKE_CLI, ROOT
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.timeout(120)

OWNER_ONLY = {"cron_status", "gateway_config_get", "node_list", "tts_status"}
HEADERS = {"accept": "application/json", "content-type": "application/json"}


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[GatewayProcess]:
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    with GatewayProcess(tmp_path_factory.mktemp("person-tokens"), config=config) as proc:
        yield proc


async def sign_in(gw: GatewayProcess, person: str, role: str = "member") -> RawClient:
    """The person's own credential, as their ``/login`` link gives it, and a connection with it."""
    owner = await operator(gw.url, gw.token or "")
    try:
        await owner.call("people.create", {"id": person, "name": person.title(), "role": role})
        link = (await owner.call("people.loginLink", {"id": person}))["url"]
    finally:
        await owner.close()
    async with httpx.AsyncClient() as http:
        got = await http.post(f"{gw.http}/people/signin", json={"code": link.split("#signin=")[1]})
    assert got.status_code == 200, got.text
    client = await RawClient.open(gw.url)
    assert (await client.handshake(got.json()["token"]))["ok"]
    return client


async def as_owner(gw: GatewayProcess, method: str, params: dict[str, Any]) -> Any:
    owner = await operator(gw.url, gw.token or "")
    try:
        return await owner.call(method, params)
    finally:
        await owner.close()


async def converse(client: RawClient, key: str, text: str) -> None:
    """A message in ``key`` (a conversation of the signed-in person's), its run finished."""
    sent = await client.call("chat.send", {"sessionKey": key, "message": text, "idempotencyKey": f"{key}:{text}"})
    await client.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 20_000}, timeout=25)


META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


async def mcp(http: httpx.AsyncClient, gw: GatewayProcess, token: str, method: str,
              params: dict[str, Any] | None = None) -> httpx.Response:
    """One stateless request (MCP 2026-07-28: no session to open, the envelope in ``_meta``)."""
    headers = {**HEADERS, "authorization": f"Bearer {token}", "mcp-protocol-version": "2026-07-28",
               "mcp-method": method}
    if params and "name" in params:
        headers["mcp-name"] = params["name"]
    return await http.post(f"{gw.http}/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": method,
                                                                   "params": {**(params or {}), "_meta": META}})


async def sessions_seen(http: httpx.AsyncClient, gw: GatewayProcess, token: str) -> str:
    """What the ``sessions_list`` tool answers the token's holder, as text."""
    got = await mcp(http, gw, token, "tools/call", {"name": "sessions_list", "arguments": {}})
    assert got.status_code == 200, got.text
    result = got.json()["result"]
    assert not result.get("isError"), result
    return json.dumps(result)


async def test_a_members_token_reaches_her_own_conversations_only(gw: GatewayProcess) -> None:
    alice, bob = await sign_in(gw, "alice"), await sign_in(gw, "bob")
    try:
        await converse(bob, "agent:main:person:bob", "bob's private note")
        await converse(alice, "agent:main:person:alice:side", "alice's side chat")
        made = await alice.call("mcp.tokens.create", {"name": "alice-laptop", "idempotencyKey": "laptop-1"})
        assert made["personId"] == "alice" and made["owner"] is False
        assert made["sessionKey"] == "agent:main:person:alice"
        token = made["token"]
        again = await alice.call("mcp.tokens.create", {"name": "alice-laptop", "idempotencyKey": "laptop-1"})
        assert again["id"] == made["id"]  # a retry is the same token, not a second one
        stored = await asyncio.to_thread(
            lambda: b"".join(p.read_bytes() for p in gw.state_dir.glob("remoteclaw.db*")))
        assert token.encode() not in stored  # the idempotency store keeps the answer, never the token itself
        # the same idempotency key from Bob makes Bob's own token, never answers him with Alice's
        bobs = await bob.call("mcp.tokens.create", {"name": "bob-laptop", "idempotencyKey": "laptop-1"})
        assert bobs["personId"] == "bob" and bobs["token"] != token and bobs["id"] != made["id"]
        # what she may not make: an owner-tier token, one acting in Bob's conversation, one that is Bob's
        owner_tier = await alice.req("mcp.tokens.create", {"name": "mine-too", "owner": True})
        assert not owner_tier["ok"] and owner_tier["error"]["details"]["field"] == "owner", owner_tier
        in_bobs = await alice.req("mcp.tokens.create", {"name": "bobs", "sessionKey": "agent:main:person:bob"})
        assert not in_bobs["ok"] and in_bobs["error"]["details"]["field"] == "sessionKey", in_bobs
        for_bob = await alice.req("mcp.tokens.create", {"name": "for-bob", "personId": "bob"})
        assert not for_bob["ok"] and for_bob["error"]["details"]["field"] == "personId", for_bob
        # Bob neither sees nor revokes it (as unknown as a token that never was); the owner sees it as Alice's
        bob_sees = {t["id"] for t in (await bob.call("mcp.tokens.list", {}))["tokens"]}
        assert bob_sees == {bobs["id"]}
        for ref in (made["id"], "alice-laptop"):
            revoke = await bob.req("mcp.tokens.revoke", {"id": ref})
            assert not revoke["ok"] and revoke["error"]["details"]["field"] == "id", revoke
            assert "no active MCP token" in revoke["error"]["message"], revoke
        assert {t["id"] for t in (await alice.call("mcp.tokens.list", {}))["tokens"]} == {made["id"]}
        listed = {t["id"]: t for t in (await as_owner(gw, "mcp.tokens.list", {}))["tokens"]}
        assert listed[made["id"]]["personId"] == "alice" and listed[made["id"]]["state"] == "active"

        async with httpx.AsyncClient(timeout=30) as http:
            tools = (await mcp(http, gw, token, "tools/list")).json()["result"]["tools"]
            names = {t["name"] for t in tools}
            assert "sessions_list" in names and not names & OWNER_ONLY
            text = await sessions_seen(http, gw, token)
            assert "agent:main:person:alice" in text and "agent:main:person:alice:side" in text, text[:800]
            assert "agent:main:person:bob" not in text, text[:800]
            history = (await mcp(http, gw, token, "tools/call",
                                 {"name": "sessions_history",
                                  "arguments": {"sessionKey": "agent:main:person:bob"}})).json()["result"]
            assert history["isError"] and "bob's private note" not in json.dumps(history), history
            assert "not a conversation" in json.dumps(history), history  # refused, not merely empty
            # an owner-only tool is not there to call
            cron = (await mcp(http, gw, token, "tools/call", {"name": "cron_status", "arguments": {}})).json()
            assert "error" in cron or cron["result"].get("isError"), cron
            # removing Alice ends her token at once, and revokes it for good
            await as_owner(gw, "people.remove", {"id": "alice"})
            assert (await mcp(http, gw, token, "tools/list")).status_code == 401
            listed = {t["id"]: t for t in (await as_owner(gw, "mcp.tokens.list", {}))["tokens"]}
            assert listed[made["id"]]["state"] == "revoked", listed[made["id"]]
            # a new person given her id later does not bring it back
            await as_owner(gw, "people.create", {"id": "alice", "name": "Another Alice"})
            assert (await mcp(http, gw, token, "tools/list")).status_code == 401
            # Bob's own token works throughout
            assert "agent:main:person:bob" in await sessions_seen(http, gw, bobs["token"])
    finally:
        await alice.close()
        await bob.close()


async def test_a_guests_token_reaches_one_conversation(gw: GatewayProcess) -> None:
    """A guest's run reaches only the chat it came from; so does a guest's token: the conversation it acts in, not
    the guest's other ones. A member made a guest later loses the rest as soon as the token is looked up again."""
    gina = await sign_in(gw, "gina")
    try:
        await converse(gina, "agent:main:person:gina", "the main one")
        await converse(gina, "agent:main:person:gina:other", "another one")
        token = (await gina.call("mcp.tokens.create", {"name": "gina-laptop"}))["token"]
    finally:
        await gina.close()
    async with httpx.AsyncClient(timeout=30) as http:
        as_member = await sessions_seen(http, gw, token)
        assert "agent:main:person:gina:other" in as_member, as_member[:800]
        await as_owner(gw, "people.update", {"id": "gina", "role": "guest"})
        await asyncio.sleep(1.2)  # the transport remembers a token lookup for a second
        as_guest = await sessions_seen(http, gw, token)
        assert "agent:main:person:gina" in as_guest and "agent:main:person:gina:other" not in as_guest, as_guest[:800]
    guest = await sign_in(gw, "gus", role="guest")
    try:
        made = await guest.call("mcp.tokens.create", {"name": "gus-laptop"})
        assert made["personId"] == "gus" and made["sessionKey"] == "agent:main:person:gus"
    finally:
        await guest.close()


async def test_who_else_may_make_them(gw: GatewayProcess) -> None:
    """The owner person makes owner-tier tokens; an admin person baseline ones only, and sees everyone's; an admin
    operator makes one for a person with ``remoteclaw mcp token create --person``; an operator without admin makes
    none."""
    adam = await sign_in(gw, "adam", role="admin")
    dora = await sign_in(gw, "dora")
    try:
        refused = await adam.req("mcp.tokens.create", {"name": "adam-owner", "owner": True})
        assert not refused["ok"] and refused["error"]["details"]["field"] == "owner", refused
        adams = await adam.call("mcp.tokens.create", {"name": "adam-laptop"})
        assert adams["personId"] == "adam" and adams["owner"] is False
        doras = await dora.call("mcp.tokens.create", {"name": "dora-laptop"})
        assert {adams["id"], doras["id"]} <= {t["id"] for t in (await adam.call("mcp.tokens.list", {}))["tokens"]}
        olga = await sign_in(gw, "olga", role="owner")  # the owner's are the gateway's, owner tier if she wants
        try:
            hers = await olga.call("mcp.tokens.create", {"name": "olga-owner", "owner": True})
            assert hers["owner"] is True and hers["personId"] is None
        finally:
            await olga.close()
        not_owner = await adam.req("mcp.tokens.create", {"name": "for-owner", "personId": "olga"})
        assert not not_owner["ok"] and not_owner["error"]["details"]["field"] == "personId", not_owner
        assert "owner's tokens are the gateway's" in not_owner["error"]["message"], not_owner
        await converse(dora, "agent:main:person:dora", "dora's note")
    finally:
        await adam.close()
        await dora.close()

    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    cli = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "gateway.cli", "mcp", "token", "create", "--name", "dora-desk",
                         "--person", "dora", "--url", gw.url, "--token", gw.token or ""],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    lines = cli.stdout.strip().splitlines()
    assert "baseline tier, dora's" in lines[0] and lines[-1].startswith("rcm_"), cli.stdout
    async with httpx.AsyncClient(timeout=30) as http:
        names = {t["name"] for t in (await mcp(http, gw, lines[-1], "tools/list")).json()["result"]["tools"]}
        assert "sessions_list" in names and not names & OWNER_ONLY
        seen = await sessions_seen(http, gw, lines[-1])
        assert "agent:main:person:dora" in seen and "agent:main:person:adam" not in seen, seen[:800]
    peer = await asyncio.to_thread(  # the same command by the HTTP doors' name (a peer's /v1 and /a2a token)
        subprocess.run, [sys.executable, "-m", "gateway.cli", "tokens", "create", "--name", "dora-api",
                         "--person", "dora", "--url", gw.url, "--token", gw.token or ""],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert peer.returncode == 0 and peer.stdout.strip().splitlines()[-1].startswith("rcm_"), peer.stderr
    listed = {t["name"]: t for t in (await as_owner(gw, "mcp.tokens.list", {}))["tokens"]}
    assert listed["dora-desk"]["personId"] == "dora" and listed["dora-api"]["personId"] == "dora"

    plain = await operator(gw.url, gw.token or "", scopes=["operator.read", "operator.write"])
    try:
        for method, params in (("mcp.tokens.create", {"name": "nope"}), ("mcp.tokens.list", {}),
                               ("mcp.tokens.revoke", {"id": "dora-desk"})):
            got = await plain.req(method, params)
            assert not got["ok"] and got["error"]["details"]["code"] == "MISSING_SCOPE", got
    finally:
        await plain.close()
    assert listed["dora-desk"]["state"] == "active"


async def test_verify_refuses_a_removed_persons_token_whoever_takes_the_id(tmp_path: Path) -> None:
    """The lookup itself, without the removal's revocation (say ``/mcp`` was off when the person was removed): the
    token stops with its person, and a person created later under the same id does not inherit it."""
    from gateway.mcp_http import tokens
    from gateway.people.store import Person
    from gateway.store import Database

    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    await db.migrate()
    try:
        now = int(time.time() * 1000)
        async with db.session() as s:
            s.add(Person(id="erin", name="Erin", role="guest", created_at=now, updated_at=now))
        token, _ = await tokens.create(db, name="erin-laptop", owner=False, profile="full",
                                       session_key="agent:main:person:erin", ttl_s=None, person_id="erin")
        grant = await tokens.verify(db, token)
        assert grant is not None and grant.person_id == "erin" and grant.person_role == "guest"
        async with db.session() as s:
            await s.delete(await s.get(Person, "erin"))
        assert await tokens.verify(db, token) is None
        later = now + 10 * 60_000
        async with db.session() as s:
            s.add(Person(id="erin", name="Another Erin", role="member", created_at=later, updated_at=later))
        assert await tokens.verify(db, token) is None
        assert [t["state"] for t in await tokens.list_tokens(db, person_id="erin")] == ["active"]  # not revoked
    finally:
        await db.close()
