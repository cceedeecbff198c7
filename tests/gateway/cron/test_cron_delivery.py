"""Where cron results go: a webhook (bearer token, SSRF guard), the transcript, failure alerts, heartbeats."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gateway.cron.delivery import WebhookRefused, post_webhook
from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

_later = datetime.now(UTC) + timedelta(hours=3)
QUIET_HOURS = {"start": _later.strftime("%H:00"), "end": (_later + timedelta(hours=1)).strftime("%H:00"), "tz": "UTC"}

GATEWAY_CONFIG = {
    "agents": {"list": [
        {"id": "main", "command": [sys.executable, FAKE_CLI], "heartbeat": {"every": "2s"}},
        {"id": "quiet", "command": [sys.executable, FAKE_CLI],
         "heartbeat": {"every": "2s", "activeHours": QUIET_HOURS}},
    ]},
    "cron": {"webhookAllowPrivate": True},
}


class Receiver:
    """A loopback webhook endpoint that records each POST (headers and JSON body)."""

    def __init__(self) -> None:
        self.posts: list[tuple[dict[str, str], Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.posts.append((dict(self.headers), json.loads(body)))
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


async def finished_runs(c: RawClient, job_id: str, n: int = 1, timeout: float = 30) -> list[dict[str, Any]]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        entries = (await c.call("cron.runs", {"id": job_id}))["entries"]
        done = [e for e in entries if e["status"] != "running"]
        if len(done) >= n:
            return done
        assert loop.time() < deadline, f"only {len(done)} of {n} runs finished: {entries}"
        await asyncio.sleep(0.1)


async def test_webhook_delivery_posts_the_result_with_its_bearer_token(gateway: GatewayProcess,
                                                                       receiver: Receiver) -> None:
    c = await operator(gateway.url, gateway.token or "")
    try:
        job = await c.call("cron.add", {"name": "to the hook", "schedule": {"kind": "at", "at": "2020-01-01T00:00Z"},
                                        "payload": {"kind": "agentTurn", "message": "status report"},
                                        "delivery": {"mode": "webhook", "to": receiver.url, "token": "hook-secret"}})
        (run,) = await finished_runs(c, job["id"])
        assert run["status"] == "ok" and run["deliveryStatus"] == "webhook:204", run
        ((headers, body),) = receiver.posts
        assert headers["Authorization"] == "Bearer hook-secret"
        assert body["jobId"] == job["id"] and body["summary"] == "echo: status report" and body["status"] == "ok"
    finally:
        await c.close()


async def test_webhooks_to_private_addresses_are_refused_unless_allowed(receiver: Receiver) -> None:
    with pytest.raises(WebhookRefused, match="private"):
        await post_webhook(receiver.url, {"x": 1})
    with pytest.raises(WebhookRefused, match="private"):
        await post_webhook("http://169.254.169.254/latest/meta-data", {"x": 1})  # cloud metadata
    assert receiver.posts == []
    assert await post_webhook(receiver.url, {"x": 1}, allow_private=True) == 204


async def test_a_job_failing_repeatedly_alerts_the_owner_once(gateway: GatewayProcess) -> None:
    c = await operator(gateway.url, gateway.token or "")
    try:
        job = await c.call("cron.add", {"name": "flaky export", "schedule": {"kind": "cron", "expr": "0 0 1 1 *"},
                                        "payload": {"kind": "agentTurn", "message": "crash please"},
                                        "failureAlert": {"after": 2}})
        for n in (1, 2, 3):
            assert (await c.call("cron.run", {"id": job["id"]}))["ran"] is True
            runs = await finished_runs(c, job["id"], n)
            assert runs[0]["status"] == "error" and "crashed on purpose" in runs[0]["error"]
        got = await c.call("cron.get", {"id": job["id"]})
        assert got["state"]["consecutiveErrors"] == 3
        history = await c.call("chat.history", {"sessionKey": "agent:main:main", "limit": 200})
        alerts = [m for m in history["messages"] if "flaky export" in (m.get("text") or "")]
        assert len(alerts) == 1 and "failed 2 times in a row" in alerts[0]["text"], alerts
    finally:
        await c.close()


async def test_heartbeats_run_in_the_main_session_and_stay_quiet_outside_active_hours(
        gateway: GatewayProcess) -> None:
    c = await operator(gateway.url, gateway.token or "")
    try:
        listed = await c.call("cron.list", {"query": "heartbeat"})
        beats = {j["id"]: j for j in listed["jobs"]}
        assert set(beats) == {"heartbeat-main", "heartbeat-quiet"}
        assert beats["heartbeat-main"]["declarationKey"] == "agents.main.heartbeat"
        assert beats["heartbeat-main"]["sessionTarget"] == "main"
        main = await finished_runs(c, "heartbeat-main", 2)
        assert all(r["status"] == "ok" and r["sessionKey"] == "agent:main:main" for r in main), main
        quiet = await finished_runs(c, "heartbeat-quiet", 1)
        assert quiet[0]["status"] == "skipped" and quiet[0]["summary"] == "outside active hours"
        refused = await c.req("cron.remove", {"id": "heartbeat-main"})
        assert not refused["ok"] and "agents.<id>.heartbeat" in refused["error"]["message"]
    finally:
        await c.close()
