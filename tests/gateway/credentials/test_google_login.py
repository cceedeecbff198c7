"""Gemini CLI's Google login fronted: the run holds a stand-in as its access token and Code Assist at the gateway;
the gateway holds the login (``~/.gemini/oauth_creds.json``), refreshes it with Google's token endpoint and writes
it back on the host. A prying run (the Gemini runtime) finds neither token."""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from tests.gateway.agents.runtimes.conftest import cli
from tests.gateway.credentials.test_model_gateway import PRY, pry
from tests.support.fake_http import FakeHTTPServer, Reply, json_reply
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

ACCESS = "ya29.old-" + uuid.uuid4().hex
REFRESH = "1//refresh-" + uuid.uuid4().hex
NEW = "ya29.new-" + uuid.uuid4().hex


class FakeCodeAssist(FakeHTTPServer):
    """Code Assist's ``v1internal:streamGenerateContent`` (its answer wrapped in ``response``) and Google's token
    endpoint (``/token``, form-encoded)."""

    def __init__(self) -> None:
        super().__init__()
        self.bearers: list[str] = []
        self.refreshes: list[dict[str, str]] = []

    def respond(self, method: str, path: str, raw: bytes) -> Reply | None:
        if path == "/token":
            self.record(self.refreshes, dict(parse_qsl(raw.decode())))
            return json_reply({"access_token": NEW, "expires_in": 3599, "token_type": "Bearer"})
        if method == "POST" and path.startswith("/v1internal:loadCodeAssist"):
            self.record(self.bearers, self.bearer)
            return json_reply({"currentTier": {"id": "standard-tier", "name": "Standard"},
                               "cloudaicompanionProject": "proj", "allowedTiers": [{"id": "standard-tier"}]})
        if method == "POST" and path.startswith("/v1internal:streamGenerateContent"):
            self.record(self.bearers, self.bearer)
            chunk = {"response": {"candidates": [{"content": {"role": "model", "parts": [{"text": "from code assist"}]},
                                                  "finishReason": "STOP"}], "modelVersion": "gemini-2.5-pro",
                                  "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 3}}}
            return 200, f"data: {json.dumps(chunk)}\r\n\r\n".encode(), "text/event-stream"
        if method == "POST" and path.startswith("/v1internal:"):  # quota, experiments: nothing to say
            return json_reply({})
        return json_reply({"error": {"code": 404, "message": "no"}}, 404)


def google_login(home: Path) -> Path:
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "oauth_creds.json"
    path.write_text(json.dumps({"access_token": ACCESS, "refresh_token": REFRESH, "token_type": "Bearer",
                                "scope": "https://www.googleapis.com/auth/cloud-platform",
                                "expiry_date": int(time.time() * 1000) - 1000}))  # expired: the gateway refreshes
    path.chmod(0o600)
    (folder / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "oauth-personal"}}}))
    return path


async def test_a_google_login_is_held_and_refreshed_by_the_gateway(tmp_path: Path) -> None:
    home = tmp_path / "home"
    creds = google_login(home)
    with FakeCodeAssist() as api:
        agent = {"id": "main", "runtime": "gemini", "command": [sys.executable, PRY],
                 "env": {"HOME": str(home), "CODE_ASSIST_ENDPOINT": api.url}}
        cfg: dict[str, Any] = {"agents": {"list": [agent]}, "modelGateway": {"googleTokenUrl": api.url + "/token"}}
        gw = GatewayProcess(tmp_path / "state", config=cfg).start()
        try:
            ask = {"url": "$CODE_ASSIST_ENDPOINT", "path": "/v1internal:streamGenerateContent?alt=sse",
                   "headers": {"authorization": "Bearer $GOOGLE_CLOUD_ACCESS_TOKEN"},
                   "body": {"model": "gemini-2.5-pro", "project": "p", "request": {"contents": []}}}
            found = await pry(gw, owner=False, http=[ask], secrets=[ACCESS, REFRESH, NEW], cat=[str(creds)])
        finally:
            gw.stop()
    assert found["leaked"] == [] and found["env"]["GOOGLE_CLOUD_ACCESS_TOKEN"].startswith("rcm-"), found["leaked"]
    assert not found["cat"][str(creds)], found["cat"]  # the login file: not shown
    assert found["http"][0].startswith("200 ") and "from code assist" in found["http"][0], found["http"]
    assert api.bearers == [NEW]  # refreshed by the gateway before the request went upstream
    assert api.refreshes and api.refreshes[0]["refresh_token"] == REFRESH and api.refreshes[0]["grant_type"] == \
        "refresh_token" and api.refreshes[0]["client_id"].endswith(".apps.googleusercontent.com")
    on_host = json.loads(creds.read_text())
    assert on_host["access_token"] == NEW and on_host["refresh_token"] == REFRESH
    assert on_host["expiry_date"] > time.time() * 1000 + 3_000_000


async def test_the_real_gemini_cli_on_a_google_login_in_a_strangers_sandbox(tmp_path: Path) -> None:
    """Gemini CLI for real (skipped when not installed), a stranger's run without a network: it talks to Code
    Assist through the model gateway, which sends the refreshed login's bearer."""
    gemini = cli("gemini")
    home = tmp_path / "home"
    google_login(home)
    with FakeCodeAssist() as api:
        env = {"HOME": str(home), "CODE_ASSIST_ENDPOINT": api.url, "GEMINI_CLI_NO_RELAUNCH": "true", "NO_COLOR": "1"}
        agent = {"id": "main", "runtime": "gemini", "command": [gemini], "model": "gemini-2.5-flash", "env": env}
        cfg: dict[str, Any] = {"agents": {"list": [agent]}, "modelGateway": {"googleTokenUrl": api.url + "/token"}}
        gw = GatewayProcess(tmp_path / "state", config=cfg).start()
        try:
            c = await operator(gw.url, gw.token or "", scopes=["operator.read", "operator.write"])
            acc = await c.call("chat.send", {"sessionKey": "agent:main:gca", "message": "say hi",
                                             "idempotencyKey": str(uuid.uuid4())})
            done = await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 120_000}, timeout=130)
            await c.close()
        finally:
            gw.stop()
    assert done["status"] == "ok" and "from code assist" in done["reply"], done
    assert api.bearers and set(api.bearers) == {NEW}, api.bearers  # loadCodeAssist, then the answer
    assert json.loads((home / ".gemini" / "oauth_creds.json").read_text())["access_token"] == NEW
