"""Logging against a real gateway: JSON lines on disk, no secrets in them, logs.tail filters."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.openclaw_frames  # every frame received is checked against OpenClaw's schema

TTS_KEY = "tts-secret-5f1e2d3c4b"
NEW_KEY = "rotated-secret-9a8b7c6d"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {"logging": {"level": "debug"}, "messages": {"tts": {"apiKey": TTS_KEY}}}
    with GatewayProcess(tmp_path_factory.mktemp("logs"), config=config) as proc:
        yield proc


def log_text(gw: GatewayProcess) -> str:
    return "".join(p.read_text() for p in sorted((gw.state_dir / "logs").glob("gateway.log*")))


async def test_secrets_never_reach_the_log_file(gw: GatewayProcess) -> None:
    token = gw.token or ""
    good = await operator(gw.url, token)
    # Wrong tokens, including ones that contain the real token, and a token sent as a password.
    for wrong in ["wrong-token-000000", token + "x", "x" + token]:
        bad = await RawClient.open(gw.url)
        frame = await bad.handshake(wrong)
        assert frame["ok"] is False
        await bad.close()
    pw = await RawClient.open(gw.url)
    await pw.send_raw({"type": "req", "id": "c1", "method": "connect", "params": {"auth": {"token": token}}})
    await pw.recv()
    await pw.close()
    # A note that quotes secrets, and a patch that brings in a new one: both are logged as "config changed".
    h = (await good.call("config.get"))["hash"]
    await good.call("config.patch", {"patch": {"messages": {"tts": {"apiKey": NEW_KEY}}}, "baseHash": h,
                                     "note": f"rotate {TTS_KEY} -> {NEW_KEY}, token {token}"})
    await good.close()
    for _ in range(100):  # the writer thread writes behind the event loop
        text = log_text(gw)
        if "config changed" in text and "connect refused" in text:
            break
        await asyncio.sleep(0.05)
    assert "config changed" in text and "connect refused" in text
    for secret in (token, TTS_KEY, NEW_KEY):
        assert secret not in text
    for line in text.splitlines():
        json.loads(line)  # every line is one JSON record
    console = gw.output()
    assert "gateway started" in console and TTS_KEY not in console and NEW_KEY not in console
    assert not console.lstrip().startswith("{")  # readable lines, not JSON


async def _tail(client: RawClient, **params: Any) -> list[dict[str, Any]]:
    res = await client.call("logs.tail", params)
    assert res["file"] == "gateway.log" and res["cursor"] == res["size"] > 0
    return [json.loads(line) for line in res["lines"]]  # OpenClaw's shape: each record as a JSON line


async def test_logs_tail_filters(gw: GatewayProcess) -> None:
    client = await operator(gw.url, gw.token or "", scopes=["operator.read"])
    try:
        # An error record to find: a broken hand edit of the config file.
        path = gw.state_dir / "remoteclaw.json"
        good = path.read_text()
        path.write_text("{logging: ")
        for _ in range(50):
            errors = await _tail(client, level="error", search="last good config")
            if errors:
                break
            await asyncio.sleep(0.1)
        assert errors and all(r["level"] in ("error", "critical") for r in errors)
        path.write_text(good)

        everything = await _tail(client, limit=5000)
        assert {r["level"] for r in everything} >= {"info", "error"}
        assert [r["timestamp"] for r in everything] == sorted(r["timestamp"] for r in everything)  # oldest first
        assert len(await _tail(client, limit=2)) == 2
        # The newest match (a search keeps records logged meanwhile, e.g. by the reload, out of the comparison).
        started_all = await _tail(client, search="gateway started", limit=5000)
        assert await _tail(client, search="gateway started", limit=1) == started_all[-1:]
        warn_up = await _tail(client, level="warning", limit=5000)
        assert warn_up and all(r["level"] in ("warning", "error", "critical") for r in warn_up)
        started = await _tail(client, search="GATEWAY STARTED")  # case-insensitive
        assert started and all("gateway started" in r["event"] for r in started)
        assert await _tail(client, search="no-such-text-anywhere-42") == []
        bad = await client.req("logs.tail", {"level": "loud"})
        assert bad["error"]["code"] == "INVALID_REQUEST" and "/level" in bad["error"]["message"]
        bad = await client.req("logs.tail", {"limit": 0})
        assert "/limit" in bad["error"]["message"]
    finally:
        await client.close()
