"""A person's own ``/mcp`` tokens (docs/people.md): made by the person signed in with their own credential, they
reach what the person reaches (their conversations, the baseline tools) and nothing of anyone else's; another
member can neither list nor revoke them; they stop working when the person is removed. Real gateway process, real
HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support import FAKE_CLI
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


async def sign_in(gw: GatewayProcess, person: str) -> RawClient:
    """The person's own credential, as their ``/login`` link gives it, and a connection with it."""
    owner = await operator(gw.url, gw.token or "")
    try:
        await owner.call("people.create", {"id": person, "name": person.title()})
        link = (await owner.call("people.loginLink", {"id": person}))["url"]
    finally:
        await owner.close()
    async with httpx.AsyncClient() as http:
        got = await http.post(f"{gw.http}/people/signin", json={"code": link.split("#signin=")[1]})
    assert got.status_code == 200, got.text
    client = await RawClient.open(gw.url)
    assert (await client.handshake(got.json()["token"]))["ok"]
    return client


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


async def test_a_members_token_reaches_her_own_conversations_only(gw: GatewayProcess) -> None:
    alice, bob = await sign_in(gw, "alice"), await sign_in(gw, "bob")
    try:
        sent = await bob.call("chat.send", {"sessionKey": "agent:main:person:bob", "message": "bob's private note",
                                            "idempotencyKey": "b1"})
        await bob.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 20_000}, timeout=25)
        made = await alice.call("mcp.tokens.create", {"name": "alice-laptop"})
        assert made["personId"] == "alice" and made["owner"] is False
        assert made["sessionKey"] == "agent:main:person:alice"
        token = made["token"]
        # what she may not make: an owner-tier token, or one acting in Bob's conversation
        owner_tier = await alice.req("mcp.tokens.create", {"name": "mine-too", "owner": True})
        assert not owner_tier["ok"] and owner_tier["error"]["details"]["field"] == "owner", owner_tier
        in_bobs = await alice.req("mcp.tokens.create", {"name": "bobs", "sessionKey": "agent:main:person:bob"})
        assert not in_bobs["ok"] and in_bobs["error"]["details"]["field"] == "sessionKey", in_bobs
        # Bob neither sees nor revokes it; the owner sees it as Alice's
        assert made["id"] not in {t["id"] for t in (await bob.call("mcp.tokens.list", {}))["tokens"]}
        revoke = await bob.req("mcp.tokens.revoke", {"id": made["id"]})
        assert not revoke["ok"] and revoke["error"]["details"]["field"] == "id", revoke
        owner = await operator(gw.url, gw.token or "")
        try:
            listed = {t["id"]: t for t in (await owner.call("mcp.tokens.list", {}))["tokens"]}
            assert listed[made["id"]]["personId"] == "alice" and listed[made["id"]]["state"] == "active"
        finally:
            await owner.close()

        async with httpx.AsyncClient(timeout=30) as http:
            tools = (await mcp(http, gw, token, "tools/list")).json()["result"]["tools"]
            names = {t["name"] for t in tools}
            assert "sessions_list" in names and not names & OWNER_ONLY
            listed_sessions = (await mcp(http, gw, token, "tools/call",
                                         {"name": "sessions_list", "arguments": {}})).json()["result"]
            text = json.dumps(listed_sessions)
            assert not listed_sessions.get("isError") and "agent:main:person:alice" in text, text[:800]
            assert "agent:main:person:bob" not in text, text[:800]
            history = (await mcp(http, gw, token, "tools/call",
                                 {"name": "sessions_history",
                                  "arguments": {"sessionKey": "agent:main:person:bob"}})).json()["result"]
            assert history["isError"] and "bob's private note" not in json.dumps(history), history
            assert "not a conversation" in json.dumps(history), history  # refused, not merely empty
            # removing Alice ends her token at once
            owner = await operator(gw.url, gw.token or "")
            try:
                await owner.call("people.remove", {"id": "alice"})
            finally:
                await owner.close()
            assert (await mcp(http, gw, token, "tools/list")).status_code == 401
    finally:
        await alice.close()
        await bob.close()
