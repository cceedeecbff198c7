"""No client can hold the loop (issue #51, item 7): a real gateway, one authenticated client pipelining ``health``
as fast as it can over a raw socket (``bench.flood``'s flooder, a process of its own), and a second client
connecting and calling ``health`` beside it. Timings are bounded generously here; the real figures are in
docs/benchmarks.md ("Fairness")."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from bench.flood import start_flooder, stop_flooder
from gateway.config.model import ConfigError, validate
from gateway.server.request_rate import RequestRate, rate_limited
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

ROUNDS = 30
"""Connect + ``health`` rounds of the second client under the flood."""
BOUND_S = 1.0
"""What the second client's p99 must stay under here (the bench's figure is ~100 times lower)."""


async def _connect_and_health(gw: GatewayProcess) -> float:
    t0 = time.perf_counter()
    client = await asyncio.wait_for(operator(gw.url, gw.token or ""), 5)
    try:
        assert (await client.req("health", timeout=5))["ok"] is True
        return time.perf_counter() - t0
    finally:
        await client.close()


async def test_a_health_flood_from_one_client_neither_stalls_another_nor_goes_unlimited(tmp_path: Path) -> None:
    with GatewayProcess(tmp_path / "gw") as gw:
        flooder = start_flooder(gw.url, gw.token or "")
        try:
            await asyncio.sleep(1.0)  # the flood is under way: the gateway's socket buffers are full
            took: list[float] = []
            deadline = time.monotonic() + 20
            while len(took) < ROUNDS and time.monotonic() < deadline:
                try:
                    took.append(await _connect_and_health(gw))
                except TimeoutError:
                    took.append(float("inf"))
        finally:
            counts = stop_flooder(flooder)
        assert gw.proc is not None and gw.proc.poll() is None
        took.sort()
        p99 = took[min(len(took) - 1, int(0.99 * len(took)))]
        assert len(took) == ROUNDS and p99 < BOUND_S, (f"{len(took)} rounds, p99 {p99:.3f} s", counts)
        # The flooder was answered, then refused for its rate, not left waiting in its socket.
        assert counts["ok"] > 0 and counts["limited"] > 0, counts


def test_the_bucket_allows_a_burst_then_the_sustained_rate_and_says_how_long_to_wait() -> None:
    now = [0.0]
    rate = RequestRate(10, 3, clock=lambda: now[0])
    assert [rate.take() for _ in range(3)] == [0, 0, 0]
    assert rate.wait() == pytest.approx(0.1) and rate.take() == pytest.approx(0.1)  # nothing taken
    now[0] += 0.1
    assert rate.take() == 0 and rate.take() > 0
    now[0] += 60  # a quiet minute refills the burst, no more
    assert [rate.take() == 0 for _ in range(4)] == [True, True, True, False]
    err = rate_limited(0.0004, rate).shape()
    assert err["code"] == "UNAVAILABLE" and err["retryable"] is True and err["retryAfterMs"] == 1
    assert err["details"] == {"code": "RATE_LIMITED"} and "gateway.requestRate" in err["message"]
    assert RequestRate(0, 1).take() == 0  # 0: no limit


def test_a_bad_request_rate_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match="/gateway/requestRate/burst"):
        validate({"gateway": {"requestRate": {"burst": 0}}})
