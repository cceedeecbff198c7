"""``MissThrottle``: look-ups of stand-ins nobody issued, counted per address, stop past the limit for the window."""

from __future__ import annotations

from gateway.access.misses import MissThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_address_is_blocked_past_its_misses_until_the_window_passes() -> None:
    clock = Clock()
    throttle = MissThrottle(limit=3, window_s=60, clock=clock)
    for _ in range(3):
        assert not throttle.blocked("10.0.0.9")
        throttle.miss("10.0.0.9")
    assert throttle.blocked("10.0.0.9")
    assert not throttle.blocked("10.0.0.10")  # another address is not
    clock.now += 59
    assert throttle.blocked("10.0.0.9")
    clock.now += 1
    assert not throttle.blocked("10.0.0.9")  # a new window
    throttle.miss("10.0.0.9")
    assert not throttle.blocked("10.0.0.9")


def test_many_addresses_at_once_keep_the_table_bounded() -> None:
    clock = Clock()
    throttle = MissThrottle(limit=1, window_s=60, clock=clock, max_addresses=100)
    for n in range(1000):
        throttle.miss(f"10.0.{n // 256}.{n % 256}")
    assert sum(throttle.blocked(f"10.0.{n // 256}.{n % 256}") for n in range(1000)) == 100  # the newest hundred
    assert throttle.blocked("10.0.3.231")  # the last one seen
