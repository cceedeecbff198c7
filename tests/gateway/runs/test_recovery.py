"""After ``kill -9``: every accepted message is answered or explained, once (real processes, the loop channel).

The scenario a user met: a three-second turn running, four more messages queued behind it, the gateway
killed. After the restart the interrupted turn is explained in the chat and the transcript and started
again (it had sent nothing), and the queued messages get their turn: each message answered once.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import urllib.request
from pathlib import Path

import pytest

from gateway.runs.recovery import INTERRUPTED_NOTICE, RETRY_NOTICE
from tests.support import FAKE_CLI, SUPPORT
from tests.support.gateway_proc import GatewayProcess
from tests.support.postgres import pg_url  # noqa: F401
from tests.support.waiting import until
from tests.support.ws import operator

KEY = "agent:main:loop:direct:pat"


def make(tmp: Path, *, retry: bool = True, env: dict[str, str] | None = None) -> GatewayProcess:
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}], "retryInterrupted": retry},
           "session": {"dmScope": "per-channel-peer"},
           "channels": {"loop": {"dmPolicy": "open", "outbox": str(tmp / "outbox.ndjson"), "slowText": "SLOWPOKE"}}}
    gw = GatewayProcess(tmp / "gw", config=cfg, env={"PYTHONPATH": str(SUPPORT / "loop_site"), **(env or {})})
    gw.outbox = tmp / "outbox.ndjson"  # type: ignore[attr-defined]
    return gw


def post(gw: GatewayProcess, text: str, msg_id: str) -> None:
    body = {"sender": "pat", "text": text, "id": msg_id}
    req = urllib.request.Request(f"{gw.http}/channels/loop/default/webhook", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200


def sends(gw: GatewayProcess) -> list[str]:
    path: Path = gw.outbox  # type: ignore[attr-defined]
    lines = path.read_text().splitlines() if path.exists() else []
    return [r["text"] for r in map(json.loads, lines) if r["op"] == "send"]




async def start_turn(gw: GatewayProcess, text: str, msg_id: str) -> None:
    """Send a chat message and return once its turn has started."""
    watcher = await operator(gw.url, gw.token or "")
    await asyncio.to_thread(post, gw, text, msg_id)
    await watcher.next_event("agent", timeout=10)
    await watcher.close()


async def crash_mid_turn(gw: GatewayProcess) -> None:
    """One 3-second turn running and four messages queued behind it, then kill -9."""
    gw.start()
    await start_turn(gw, "sleep:3 first", "m1")
    for i in range(2, 6):
        await asyncio.to_thread(post, gw, f"later {i}", f"m{i}")
    gw.stop(signal.SIGKILL)


async def test_after_a_crash_the_interrupted_turn_is_explained_and_retried_and_the_queued_one_runs(
        tmp_path: Path) -> None:
    gw = make(tmp_path)
    try:
        await crash_mid_turn(gw)
        assert sends(gw) == []  # nothing was answered before the crash
        gw.start()
        await until(lambda: any("later 5" in t for t in sends(gw)))
        texts = sends(gw)
        assert texts.count(RETRY_NOTICE) == 1
        assert sum("first" in t for t in texts) == 1  # the interrupted turn, run again once
        assert sum("later 2" in t for t in texts) == 1  # the four queued messages: one turn, one answer
        client = await operator(gw.url, gw.token or "")
        history = await client.call("chat.history", {"sessionKey": KEY, "limit": 100})
        said = [m.get("text") for m in history["messages"]]
        assert said.count(RETRY_NOTICE) == 1
        assert sum(1 for m in history["messages"] if m.get("role") == "user") == 5  # stored once each
        status = await client.call("status")
        assert status["recoveredAtStart"] == {"interrupted": 0, "retried": 1, "requeued": 1}
        await client.close()
        await asyncio.sleep(1)
        assert sends(gw) == texts  # and nothing more arrives later
    finally:
        gw.stop()


async def test_without_retries_the_interrupted_turn_is_only_explained(tmp_path: Path) -> None:
    gw = make(tmp_path, retry=False)
    try:
        await crash_mid_turn(gw)
        gw.start()
        await until(lambda: any("later 5" in t for t in sends(gw)))
        texts = sends(gw)
        assert texts.count(INTERRUPTED_NOTICE) == 1 and not any("first" in t for t in texts)
    finally:
        gw.stop()


@pytest.mark.postgres
async def test_recovery_on_postgresql(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    gw = make(tmp_path, env={"REMOTECLAW_DATABASE_URL": pg_url})
    try:
        await crash_mid_turn(gw)
        gw.start()
        await until(lambda: any("later 5" in t for t in sends(gw)))
        assert sends(gw).count(RETRY_NOTICE) == 1
    finally:
        gw.stop()


async def test_sigterm_lets_a_short_turn_finish_and_leaves_a_long_one_for_the_next_start(tmp_path: Path) -> None:
    gw = make(tmp_path)
    gw.start()
    try:
        await start_turn(gw, "sleep:1.5 short", "s1")
        assert gw.stop() == 0  # SIGTERM: the running turn gets its grace period and its reply goes out
        assert sum("short" in t for t in sends(gw)) == 1
        gw.start()
        await start_turn(gw, "sleep:60 long", "s2")
        gw.stop()  # past the grace period: cut, and recorded as still running
        assert not any("long" in t for t in sends(gw))
        gw.start()
        await until(lambda: RETRY_NOTICE in sends(gw))
    finally:
        gw.stop(timeout=15)


async def test_a_reply_being_sent_as_the_gateway_dies_is_delivered_after_the_restart_once(tmp_path: Path) -> None:
    gw = make(tmp_path)
    gw.start()
    try:
        watcher = await operator(gw.url, gw.token or "")
        await asyncio.to_thread(post, gw, "SLOWPOKE please", "r1")
        while True:  # the agent answered: its reply goes into the outbox and on its (3 s) way to the chat
            ev = await watcher.next_event("agent", timeout=15)
            if ev["payload"].get("stream") == "assistant":
                break
        await watcher.close()
        await asyncio.sleep(1.5)
        gw.stop(signal.SIGKILL)
        assert not any("SLOWPOKE" in t for t in sends(gw))  # it never reached the chat
        gw.start()
        await until(lambda: any("SLOWPOKE" in t for t in sends(gw)))
        await asyncio.sleep(4)
        assert sum("SLOWPOKE" in t for t in sends(gw)) == 1
    finally:
        gw.stop()


async def test_a_message_delivered_twice_by_its_platform_is_answered_once(tmp_path: Path) -> None:
    gw = make(tmp_path)
    with gw:
        await asyncio.to_thread(post, gw, "hello once", "dup-1")
        await until(lambda: any("hello once" in t for t in sends(gw)))
        await asyncio.to_thread(post, gw, "hello once", "dup-1")  # the same update again, same platform id
        await asyncio.to_thread(post, gw, "and then", "dup-2")
        await until(lambda: any("and then" in t for t in sends(gw)))
        assert sum("hello once" in t for t in sends(gw)) == 1
