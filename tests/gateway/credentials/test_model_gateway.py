"""No run holds a real credential: the model gateway adds it outside the sandbox (real gateway, real bubblewrap).

A prying agent (``prying_cli.py``) looks through its environment, ``/proc``, HOME and the login folder for the
agent's API key and the OAuth tokens of the subscription login on the host; it then calls the model API with
what it holds. The fake model API (``fake_anthropic``) records the headers that arrived: the real key, never the
stand-in. Owner and stranger alike.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import SUPPORT
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
              pytest.mark.timeout(120)]

PRY = str(SUPPORT / "prying_cli.py")
REAL_KEY = "sk-ant-real-" + uuid.uuid4().hex
ACCESS = "sk-ant-oat-access-" + uuid.uuid4().hex
REFRESH = "sk-ant-ort-refresh-" + uuid.uuid4().hex
OTHER_KEY = "sk-openai-real-" + uuid.uuid4().hex
READ_WRITE = ["operator.read", "operator.write"]


def login(home: Path, *, access: str = ACCESS, expires_in_ms: int = 3_600_000) -> Path:
    """A Claude Code subscription login on the host, as ``claude /login`` leaves it."""
    folder = home / ".claude"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "projects").mkdir(exist_ok=True)
    path = folder / ".credentials.json"
    path.write_text(json.dumps({"claudeAiOauth": {
        "accessToken": access, "refreshToken": REFRESH, "expiresAt": int(time.time() * 1000) + expires_in_ms,
        "scopes": ["user:inference"], "subscriptionType": "max"}}))
    path.chmod(0o600)
    return path


def gateway(tmp: Path, api_url: str, *, key: str | None = REAL_KEY, config: dict[str, Any] | None = None,
            network: str | None = None, gateway_env: dict[str, str] | None = None, **agent: Any) -> GatewayProcess:
    home = tmp / "home"
    login(home)
    env = {"HOME": str(home), "ANTHROPIC_BASE_URL": api_url, **({"ANTHROPIC_API_KEY": key} if key else {})}
    entry = {"id": "main", "runtime": "claude", "command": [sys.executable, PRY], "env": env, **agent}
    sandbox = {"network": network} if network else {}
    cfg = {**(config or {}), "agents": {"list": [entry], "defaults": {"sandbox": sandbox}}}
    return GatewayProcess(tmp / "state", config=cfg, env={"OPENAI_API_KEY": OTHER_KEY, **(gateway_env or {})}).start()


async def pry(gw: GatewayProcess, *, owner: bool, ok: bool = True, **ask: Any) -> dict[str, Any]:
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"] if owner else READ_WRITE)
    try:
        res = await c.call("chat.send", {"sessionKey": f"agent:main:pry:{uuid.uuid4().hex[:8]}",
                                         "message": json.dumps(ask), "idempotencyKey": str(uuid.uuid4())})
        done = await c.call("agent.wait", {"runId": res["runId"], "timeoutMs": 60000}, timeout=70)
    finally:
        await c.close()
    if not ok:
        return dict(done)
    assert done["status"] == "ok", done
    return dict(json.loads(done["reply"]))


def ask_model(text: str) -> dict[str, Any]:
    """The prying agent calls the model with what its run holds, as Claude Code would."""
    return {"url": "$ANTHROPIC_BASE_URL", "path": "/v1/messages",
            "headers": {"x-api-key": "$ANTHROPIC_API_KEY", "authorization": "Bearer $ANTHROPIC_AUTH_TOKEN",
                        "anthropic-version": "2023-06-01"},
            "body": {"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": f"REPLY {text}"}]}}


def pried(home: Path) -> dict[str, Any]:
    creds = str(home / ".claude" / ".credentials.json")
    return {"secrets": [REAL_KEY, ACCESS, REFRESH, OTHER_KEY], "cat": [creds], "paths": [str(home / ".claude")]}


@pytest.mark.parametrize("where", ["agent env", "gateway env"])
@pytest.mark.parametrize("owner", [True, False], ids=["owner", "stranger"])
async def test_a_run_holds_a_stand_in_and_the_real_key_arrives_upstream(tmp_path: Path, owner: bool,
                                                                       where: str) -> None:
    with FakeAnthropic() as api:
        gw = gateway(tmp_path, api.url, **({"key": None, "gateway_env": {"ANTHROPIC_API_KEY": REAL_KEY}}
                                          if where == "gateway env" else {}))
        try:
            found = await pry(gw, owner=owner, http=[ask_model("through the gateway")], **pried(tmp_path / "home"))
        finally:
            gw.stop()
    assert found["leaked"] == [], found["leaked"]  # env, /proc: neither the key nor the login's tokens
    text = found["cat"][str(tmp_path / "home" / ".claude" / ".credentials.json")]
    assert not text or (ACCESS not in text and REFRESH not in text), text  # the login file: empty or absent
    assert found["http"][0].startswith("200 ") and "through the gateway" in found["http"][0], found["http"]
    held = found["env"]["ANTHROPIC_API_KEY"]
    assert held.startswith("rcm-") and "/model/anthropic" in found["env"]["ANTHROPIC_BASE_URL"]
    upstream = [h for h in api.seen_headers if "anthropic-version" in h]
    assert [h.get("x-api-key") for h in upstream] == [REAL_KEY]  # the real key arrived, the stand-in did not
    assert all(held not in json.dumps(h) for h in api.seen_headers)


async def test_a_stand_in_is_dead_once_its_run_has_ended(tmp_path: Path) -> None:
    with FakeAnthropic() as api:
        gw = gateway(tmp_path, api.url)
        try:
            found = await pry(gw, owner=True)
            held, base = found["env"]["ANTHROPIC_API_KEY"], found["env"]["ANTHROPIC_BASE_URL"]
            async with httpx.AsyncClient() as client:  # the run's stand-in, kept and tried after the run
                late = await client.post(base + "/v1/messages", json=ask_model("late")["body"],
                                         headers={"x-api-key": held})
        finally:
            gw.stop()
    assert late.status_code == 401
    assert not [h for h in api.seen_headers if "anthropic-version" in h]  # nothing went upstream


async def test_the_subscription_login_is_used_and_refreshed_by_the_gateway(tmp_path: Path) -> None:
    """No API key: the host's OAuth login. Its token expires; the gateway refreshes it (the run never holds the
    refresh token) and writes the new one back to the host's file, so the host's CLI stays logged in."""
    with FakeAnthropic() as api:
        api.oauth_tokens = {"access_token": "sk-ant-oat-new-" + uuid.uuid4().hex, "refresh_token": REFRESH + "-2",
                            "expires_in": 3600}
        gw = gateway(tmp_path, api.url, key=None, config={"modelGateway": {"anthropicTokenUrl":
                                                                         api.url + "/v1/oauth/token"}})
        creds = tmp_path / "home" / ".claude" / ".credentials.json"
        try:
            first = await pry(gw, owner=False, http=[ask_model("fresh login")], **pried(tmp_path / "home"))
            login(tmp_path / "home", expires_in_ms=-1000)  # the access token has expired on the host
            second = await pry(gw, owner=False, http=[ask_model("after refresh")], **pried(tmp_path / "home"))
        finally:
            gw.stop()
    for found in (first, second):
        assert found["leaked"] == [] and "rcm-" in found["env"]["ANTHROPIC_AUTH_TOKEN"], found["leaked"]
        assert "ANTHROPIC_API_KEY" not in found["env"]
        assert REFRESH not in json.dumps(found)
    assert "after refresh" in second["http"][0], second["http"]
    bearers = [h.get("authorization") for h in api.seen_headers if "anthropic-version" in h]
    assert bearers == [f"Bearer {ACCESS}", f"Bearer {api.oauth_tokens['access_token']}"]
    assert all("oauth-2025-04-20" in h.get("anthropic-beta", "") for h in api.seen_headers if "anthropic-version" in h)
    assert api.refreshes == [{"grant_type": "refresh_token", "refresh_token": REFRESH,
                              "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e"}]
    on_host = json.loads(creds.read_text())["claudeAiOauth"]
    assert on_host["accessToken"] == api.oauth_tokens["access_token"] and on_host["refreshToken"] == REFRESH + "-2"
    assert on_host["expiresAt"] > time.time() * 1000 + 3_000_000 and oct(creds.stat().st_mode & 0o777) == "0o600"


async def test_a_stand_in_opens_the_model_calls_and_nothing_else_of_the_account(tmp_path: Path) -> None:
    """The real key opens the whole API (an account's files, batches, admin endpoints): a run's stand-in gets the
    model calls only, the rest refused at the gateway, never sent upstream with the real key."""
    def call(path: str, body: dict | None = None) -> dict[str, Any]:
        ask = {"url": "$ANTHROPIC_BASE_URL", "path": path,
               "headers": {"x-api-key": "$ANTHROPIC_API_KEY", "anthropic-version": "2023-06-01"}}
        return {**ask, "body": body} if body is not None else ask

    with FakeAnthropic() as api:
        gw = gateway(tmp_path, api.url)
        try:
            found = await pry(gw, owner=False, http=[call("/v1/organizations/users"), call("/v1/files", {}),
                                                     call("/v1/messages/batches", {"requests": []})])
        finally:
            gw.stop()
    assert all(r.startswith("403 ") and "not a model call" in r for r in found["http"]), found["http"]
    assert not [h for h in api.seen_headers if h.get("x-api-key") == REAL_KEY]


async def test_a_login_token_refused_upstream_is_refreshed_and_the_request_retried(tmp_path: Path) -> None:
    """The login says its token is good for an hour, but the API refuses it: the gateway refreshes the login once
    and the same request goes again with the new token; the run sees only the answer."""
    with FakeAnthropic() as api:
        api.oauth_tokens = {"access_token": "sk-ant-oat-again-" + uuid.uuid4().hex, "expires_in": 3600}
        api.revoked = {ACCESS}
        gw = gateway(tmp_path, api.url, key=None,
                     config={"modelGateway": {"anthropicTokenUrl": api.url + "/v1/oauth/token"}})
        try:
            found = await pry(gw, owner=True, http=[ask_model("after a 401")], **pried(tmp_path / "home"))
        finally:
            gw.stop()
    assert found["http"][0].startswith("200 ") and "after a 401" in found["http"][0], found["http"]
    assert found["leaked"] == [] and len(api.refreshes) == 1
    bearers = [h.get("authorization") for h in api.seen_headers if "anthropic-version" in h]
    assert bearers == [f"Bearer {ACCESS}", f"Bearer {api.oauth_tokens['access_token']}"]
    on_host = json.loads((tmp_path / "home" / ".claude" / ".credentials.json").read_text())["claudeAiOauth"]
    assert on_host["accessToken"] == api.oauth_tokens["access_token"] and on_host["refreshToken"] == REFRESH


class ForwardProxy:
    """A loopback HTTP forward proxy (absolute-URI requests, as a corporate proxy takes them): records each
    request line and passes it on to ``origin`` (the fake model API), its answer streamed back as it comes."""

    def __init__(self, origin: str) -> None:
        import http.client
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import urlsplit

        self.lines: list[str] = []
        target = urlsplit(origin)
        lines = self.lines

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                lines.append(f"{self.command} {self.path}")
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                up = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                up.request("POST", urlsplit(self.path).path, body=body,
                           headers={k: v for k, v in self.headers.items() if k.lower() != "host"})
                answer = up.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                self.send_header("content-type", answer.getheader("content-type") or "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                up.close()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ForwardProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


async def test_the_gateways_own_outbound_proxy_carries_the_upstream_requests(tmp_path: Path) -> None:
    """A gateway behind a corporate proxy (``HTTP_PROXY`` in its environment) reaches the model API through it;
    ``NO_PROXY`` keeps the run's own requests to the gateway direct."""
    with FakeAnthropic() as api, ForwardProxy(api.url) as proxy:
        port = api.url.rsplit(":", 1)[1]
        far = f"http://model-api.invalid:{port}"  # a name only the proxy can reach (it goes to the fake)
        gw = gateway(tmp_path, far, gateway_env={"HTTP_PROXY": proxy.url, "NO_PROXY": "127.0.0.1,localhost"})
        try:
            found = await pry(gw, owner=True, http=[ask_model("through the proxy")])
        finally:
            gw.stop()
    assert found["http"][0].startswith("200 ") and "through the proxy" in found["http"][0], found["http"]
    assert proxy.lines == [f"POST {far}/v1/messages"], proxy.lines
    assert [h.get("x-api-key") for h in api.seen_headers if "anthropic-version" in h] == [REAL_KEY]
