"""The compose file's "replicas" topology as processes: two gateway replicas on the real PostgreSQL and
Redis, with HAProxy running ``deploy/haproxy.cfg`` (its addresses pointed at loopback) as the one address
clients use. Connections spread over both replicas, a run's events reach clients on either, and when one
replica is killed new connections land on the other and find the same conversation.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import signal
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess, free_port
from tests.support.postgres import pg_url  # noqa: F401  (fixture)
from tests.support.requires import require
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.timeout(180)
DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
REDIS_URL = "redis://127.0.0.1:6379/0"


def balancer_config(port: int, a: int, b: int) -> str:
    """deploy/haproxy.cfg with compose's service names replaced by the loopback replicas."""
    cfg = (DEPLOY / "haproxy.cfg").read_text()
    cfg = cfg.replace("bind :18789", f"bind 127.0.0.1:{port}")
    cfg = cfg.replace("server-template a 8 gateway:18789", f"server a 127.0.0.1:{a}")
    cfg = cfg.replace("gateway-b:18789", f"127.0.0.1:{b}")
    return cfg.replace(" check", " check inter 500 fall 2 rise 1")  # faster than the default 2 s, for the test


@pytest.fixture
def topology(tmp_path: Path, pg_url: str) -> Iterator[tuple[GatewayProcess, GatewayProcess, int]]:  # noqa: F811
    haproxy = shutil.which("haproxy")
    require(haproxy is not None, "haproxy is not installed (apt-get install haproxy)")
    token = "shared-" + secrets.token_hex(16)
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    env = {"REMOTECLAW_DATABASE_URL": pg_url, "REMOTECLAW_REDIS_URL": REDIS_URL,
           "REMOTECLAW_REDIS_PREFIX": f"rc-lb-{secrets.token_hex(4)}", "FAKE_CLI_LOG": str(tmp_path / "cli.log")}
    a = GatewayProcess(tmp_path / "a", config=cfg, env=env, token=token).start(30)
    b = GatewayProcess(tmp_path / "b", config=cfg, env=env, token=token).start(30)
    port = free_port()
    (tmp_path / "haproxy.cfg").write_text(balancer_config(port, a.port, b.port))
    proxy = subprocess.Popen([str(haproxy), "-f", str(tmp_path / "haproxy.cfg")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    try:
        yield a, b, port
    finally:
        proxy.send_signal(signal.SIGTERM)
        proxy.wait(10)
        a.stop()
        b.stop()


def connections(gw: GatewayProcess) -> int:
    with urllib.request.urlopen(f"{gw.http}/healthz", timeout=5) as r:
        return int(json.loads(r.read())["connections"])


async def test_two_replicas_behind_one_address(topology: tuple[GatewayProcess, GatewayProcess, int]) -> None:
    a, b, port = topology
    url = f"ws://127.0.0.1:{port}/"

    async def through_balancer() -> RawClient:
        return await until(lambda: _try(url, a.token or ""), 20, "a connection through the balancer")

    clients = [await through_balancer() for _ in range(8)]
    on_a, on_b = await asyncio.to_thread(connections, a), await asyncio.to_thread(connections, b)
    assert on_a > 0 and on_b > 0 and on_a + on_b >= 8, (on_a, on_b)

    await asyncio.sleep(0.5)  # both replicas subscribed to the Redis channel
    key = "agent:main:balanced"
    sent = await clients[0].call("chat.send", {"sessionKey": key, "message": "hello through one address",
                                               "idempotencyKey": str(uuid.uuid4())})

    async def final(c: RawClient) -> dict[str, Any]:
        while True:
            event = await c.next_event("chat", timeout=20)
            if event["payload"].get("runId") == sent["runId"] and event["payload"].get("state") == "final":
                return event["payload"]

    finals = await asyncio.gather(*(final(c) for c in clients))
    assert {f["message"]["text"] for f in finals} == {"echo: hello through one address"}  # every client, both replicas
    for c in clients:
        await c.close()

    assert a.proc is not None
    a.proc.send_signal(signal.SIGKILL)  # one replica dies; the address stays
    a.proc.wait(10)
    a.proc = None
    survivor = await through_balancer()
    history = await survivor.call("chat.history", {"sessionKey": key})
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    assert await asyncio.to_thread(connections, b) >= 1
    await survivor.close()


async def _try(url: str, token: str) -> RawClient | None:
    try:
        client = await operator(url, token)
    except Exception:
        return None
    try:
        await client.call("health", timeout=5)
    except Exception:
        await client.close()
        return None
    return client
