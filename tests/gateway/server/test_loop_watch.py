"""The loop watch names the code that held the event loop, and stays quiet when nothing does."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from gateway.server.loop_watch import LoopWatch
from tests.support import SUPPORT
from tests.support.gateway_proc import GatewayProcess
from tests.support.waiting import until
from tests.support.ws import operator

RECORDER = SUPPORT / "plugins" / "recorder"


def hold_the_loop(seconds: float) -> None:
    time.sleep(seconds)  # a blocking call on the loop: what the watch is for


async def _watched(body, threshold_s: float) -> LoopWatch:
    watch = LoopWatch(asyncio.get_running_loop(), threshold_s=lambda: threshold_s, interval_s=0.02)
    watch.start()
    try:
        await body()
        await asyncio.sleep(0.1)  # the watch logs once the loop answers its heartbeat again
    finally:
        watch.stop()
    return watch


def test_a_blocking_callback_is_reported_with_its_place() -> None:
    async def body() -> None:
        await asyncio.sleep(0.05)
        hold_the_loop(0.4)

    watch = asyncio.run(_watched(body, 0.1))
    assert len(watch.stalls) == 1
    stall = watch.stalls[0]
    assert 300 <= stall.blocked_ms < 2000
    assert stall.cpu_ms < stall.blocked_ms / 2  # time.sleep holds the loop without working: not CPU-bound
    place, samples = stall.places[0]
    assert "hold_the_loop" in place and "time.sleep" not in place, place  # the frame of ours, by name
    assert samples >= 5


def test_a_busy_but_responsive_loop_is_not_a_stall() -> None:
    async def body() -> None:
        for _ in range(40):  # 40 short slices of work with the loop free in between
            hold_the_loop(0.01)
            await asyncio.sleep(0.005)

    watch = asyncio.run(_watched(body, 0.1))
    assert watch.stalls == []


def test_a_threshold_of_zero_turns_the_watch_off() -> None:
    async def body() -> None:
        await asyncio.sleep(0.05)
        hold_the_loop(0.3)

    assert asyncio.run(_watched(body, 0)).stalls == []


async def test_a_gateway_names_the_plugin_hook_that_held_its_loop(tmp_path: Path) -> None:
    """A real gateway with a plugin whose hook blocks the loop (``time.sleep`` in an async handler): the log
    says for how long and that it was the plugin's handler; a request sent meanwhile is still answered."""
    events = tmp_path / "events.ndjson"
    config = {"logging": {"loopStallMs": 300},
              "plugins": {"load": {"paths": [str(RECORDER)]},
                          "entries": {"recorder": {"config": {"file": str(events), "holdIn": ["before_tool_call"]}}}}}
    with GatewayProcess(tmp_path / "gw", config=config) as gw:
        c = await operator(gw.url, gw.token or "")
        try:
            held, health = await asyncio.gather(
                c.call("hooks.tool.before", {"toolName": "anything", "params": {}}), c.call("health"))
            assert held["ok"] and health["ok"]
            log_file = gw.state_dir / "logs" / "gateway.log"

            def stalls() -> list[dict[str, Any]]:
                lines = log_file.read_text().splitlines() if log_file.exists() else []
                return [json.loads(line) for line in lines if '"loop.stalled"' in line]

            found = await until(lambda: stalls() or None, what="a loop.stalled line in the gateway log", timeout=10)
        finally:
            await c.close()
    stall = found[0]
    assert stall["level"] == "warning" and 600 <= stall["blocked_ms"] < 5000, stall
    assert stall["seen_at"][0].startswith("remoteclaw_plugin_recorder.plugin:"), stall  # not the loop's caller
    assert " handler " in stall["seen_at"][0] and stall["cpu_ms"] < stall["blocked_ms"] / 2, stall
