"""The loop watch names the code that held the event loop, and stays quiet when nothing does."""

from __future__ import annotations

import asyncio
import time

from gateway.loop_watch import LoopWatch


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
    assert watch.stalls == [] and watch.worst_ms == 0


def test_a_threshold_of_zero_turns_the_watch_off() -> None:
    async def body() -> None:
        await asyncio.sleep(0.05)
        hold_the_loop(0.3)

    assert asyncio.run(_watched(body, 0)).stalls == []
