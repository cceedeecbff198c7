"""Codex's ChatGPT login fronted: the run's provider points at the gateway and takes a stand-in from its
``env_key``; the gateway holds ``auth.json``, adds its bearer and ``chatgpt-account-id`` at the ChatGPT backend
(``fake_chatgpt``), refreshes it at OpenAI's token endpoint and writes it back on the host. A prying run (the
Codex runtime) finds neither token, for the owner and for a stranger; the real Codex CLI goes through it."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.agents.runtimes.conftest import cli
from tests.gateway.credentials.test_model_gateway import PRY, pry
from tests.support.fake_chatgpt import FakeChatGPT, access_token, chatgpt_login
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = pytest.mark.timeout(240)

ACCOUNT = "acct-" + uuid.uuid4().hex
ACCESS = access_token()
REFRESH = "rt-refresh-" + uuid.uuid4().hex
CODEX_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"


def gateway(tmp: Path, api: FakeChatGPT, command: list[str], *, access: str = ACCESS,
            **agent: Any) -> tuple[GatewayProcess, Path]:
    """The gateway with agent ``main`` on Codex, whose user is logged in with ChatGPT (``~/.codex/auth.json``);
    the ChatGPT backend (``openai_base_url``, as Codex reads it) and the token endpoint are the fake's."""
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    login = chatgpt_login(home / ".codex", access=access, refresh=REFRESH, account=ACCOUNT)
    (home / ".codex" / "config.toml").write_text(
        f'model = "gpt-fake"\nopenai_base_url = "{api.url}/backend-api/codex"\n')
    entry = {"id": "main", "runtime": "codex", "command": command, "env": {"HOME": str(home)}, **agent}
    cfg = {"agents": {"list": [entry]}, "modelGateway": {"openaiTokenUrl": api.url + "/oauth/token"}}
    return GatewayProcess(tmp / "state", config=cfg).start(), login


def ask_model(text: str, base: str) -> dict[str, Any]:
    """The prying agent calls the model with what its run holds, as Codex would: its provider's base URL (from
    the per-run config) and the stand-in in ``OPENAI_API_KEY``."""
    return {"url": base + "/responses",
            "headers": {"authorization": "Bearer $OPENAI_API_KEY"},
            "body": {"model": "gpt-fake", "stream": True, "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"REPLY {text}"}]}]}}


def base_url(found: dict[str, Any]) -> str:
    """The base URL the run's per-run ``config.toml`` gives Codex's provider."""
    config = found["cat"]["$CODEX_HOME/config.toml"]
    return next(line.split('"')[1] for line in config.splitlines() if line.startswith("base_url"))


@pytest.mark.parametrize("owner", [True, False], ids=["owner", "stranger"])
async def test_a_prying_codex_run_holds_a_stand_in_and_the_login_arrives_upstream(tmp_path: Path,
                                                                                  owner: bool) -> None:
    with FakeChatGPT(ACCOUNT) as api:
        gw, login = gateway(tmp_path, api, [sys.executable, PRY])
        secrets = [ACCESS, REFRESH, api.new_tokens["access_token"], api.new_tokens["refresh_token"]]
        home = tmp_path / "home"
        look = {"secrets": secrets, "cat": [str(login), "$CODEX_HOME/config.toml", "$CODEX_HOME/auth.json"],
                "grep": [str(home), "$HOME", "$CODEX_HOME"], "paths": [str(home / ".codex")]}
        try:
            found = await pry(gw, owner=owner, **look)
            # the run holds the stand-in and the per-run config names the gateway: call the model with them
            api_base = base_url(found)
            found2 = await pry(gw, owner=owner, http=[ask_model("through the gateway", api_base)],
                               **look)
        finally:
            gw.stop()
    for seen in (found, found2):
        assert seen["leaked"] == [], seen["leaked"]  # env and /proc: neither token
        assert all(not hits for hits in seen["grep"].values()), seen["grep"]  # HOME, the login folder, CODEX_HOME
        assert not seen["cat"][str(login)] and seen["cat"]["$CODEX_HOME/auth.json"] is None, seen["cat"]
        assert seen["env"]["OPENAI_API_KEY"].startswith("rcm-")
    config = found["cat"]["$CODEX_HOME/config.toml"]
    assert 'env_key = "OPENAI_API_KEY"' in config and "/model/chatgpt" in api_base and "requires_openai_auth" \
        not in config, config
    assert found2["http"][0].startswith("200 ") and "through the gateway" in found2["http"][0], found2["http"]
    assert api.calls == [(ACCESS, ACCOUNT)]  # the login's bearer and account, added by the gateway
    assert not any("rcm-" in json.dumps(h) for h in api.seen_headers)  # the stand-in never left the gateway
    assert api.refreshes == []


async def test_an_expired_login_is_refreshed_before_the_request_and_written_back(tmp_path: Path) -> None:
    """The access token's JWT says it expired: the gateway refreshes it with the refresh token (the run never sees
    either), sends the new one, and the host's ``auth.json`` holds it (mode and other fields kept)."""
    with FakeChatGPT(ACCOUNT) as api:
        gw, login = gateway(tmp_path, api, [sys.executable, PRY], access=access_token(expires_in=-60))
        before = json.loads(login.read_text())
        try:
            found = await pry(gw, owner=False, secrets=[REFRESH, api.new_tokens["refresh_token"]],
                              cat=["$CODEX_HOME/config.toml"])
            found = await pry(gw, owner=False, http=[ask_model("after refresh", base_url(found))],
                              secrets=[REFRESH, api.new_tokens["access_token"], api.new_tokens["refresh_token"]])
        finally:
            gw.stop()
    assert found["leaked"] == [] and found["http"][0].startswith("200 "), found
    new = api.new_tokens
    assert api.calls == [(new["access_token"], ACCOUNT)]
    assert api.refreshes == [{"grant_type": "refresh_token", "refresh_token": REFRESH, "client_id": CODEX_CLIENT_ID}]
    after = json.loads(login.read_text())
    assert after["tokens"] == {**before["tokens"], "access_token": new["access_token"],
                               "refresh_token": new["refresh_token"], "id_token": new["id_token"]}
    assert after["auth_mode"] == "chatgpt" and "OPENAI_API_KEY" in after and after["last_refresh"] > "2026-01-02"
    assert oct(login.stat().st_mode & 0o777) == "0o600"


def real_codex_gateway(tmp: Path, api: FakeChatGPT) -> tuple[GatewayProcess, Path]:
    return gateway(tmp, api, [cli("codex")], permissions="bypass")


async def turn(gw: GatewayProcess, message: str, *, owner: bool = False) -> dict[str, Any]:
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"] if owner else
                       ["operator.read", "operator.write"])
    try:
        acc = await c.call("chat.send", {"sessionKey": f"agent:main:chatgpt-{uuid.uuid4().hex[:6]}",
                                         "message": message, "idempotencyKey": str(uuid.uuid4())})
        return dict(await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 180_000}, timeout=190))
    finally:
        await c.close()


@pytest.mark.slow
async def test_the_real_codex_on_a_chatgpt_login_in_a_strangers_sandbox(tmp_path: Path) -> None:
    """Codex for real (skipped when not installed), a stranger's run without a network: its Responses calls reach
    the ChatGPT backend through the model gateway, with the login's bearer and account id."""
    with FakeChatGPT(ACCOUNT) as api:
        gw, login = real_codex_gateway(tmp_path, api)
        before = login.read_text()
        try:
            done = await turn(gw, "REPLY fronted on a ChatGPT login")
        finally:
            gw.stop()
    assert done["status"] == "ok" and "fronted on a ChatGPT login" in done["reply"], done
    assert api.calls and set(api.calls) == {(ACCESS, ACCOUNT)}, api.calls
    assert not any("rcm-" in json.dumps(h) for h in api.seen_headers)
    assert login.read_text() == before and api.refreshes == []  # nothing to refresh: the file is as it was


@pytest.mark.slow
async def test_a_token_that_expires_mid_conversation_is_refreshed_by_the_gateway(tmp_path: Path) -> None:
    """The real Codex calls a tool, and the backend refuses the login's token when its output comes back (it
    expired mid-turn): the gateway refreshes the login, retries with the new token, and the turn ends well; the
    host's ``auth.json`` holds the new tokens, so Codex on the host stays logged in."""
    with FakeChatGPT(ACCOUNT) as api:
        api.revoke_after = 1  # the first answer is the last this access token gets
        gw, login = real_codex_gateway(tmp_path, api)
        try:
            done = await turn(gw, "CALL exec_command " + json.dumps({"cmd": "echo from-the-tool"}))
        finally:
            gw.stop()
    assert done["status"] == "ok" and "from-the-tool" in done["reply"], done
    new = api.new_tokens
    assert api.calls[:3] == [(ACCESS, ACCOUNT), (ACCESS, ACCOUNT), (new["access_token"], ACCOUNT)], api.calls
    assert api.refreshes == [{"grant_type": "refresh_token", "refresh_token": REFRESH, "client_id": CODEX_CLIENT_ID}]
    tokens = json.loads(login.read_text())["tokens"]
    assert tokens["access_token"] == new["access_token"] and tokens["refresh_token"] == new["refresh_token"]
    assert tokens["account_id"] == ACCOUNT and oct(login.stat().st_mode & 0o777) == "0o600"
