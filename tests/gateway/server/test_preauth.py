"""``PreAuthSockets`` on plain values: who is dropped at the caps, and who is safe (issue #28)."""

from __future__ import annotations

from gateway.server.preauth import PreAuthSockets


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_strangers_younger_than_the_grace_are_let_in_over_the_cap_and_dropped_once_old() -> None:
    clock = Clock()
    waiting = PreAuthSockets(max_total=100, max_per_address=2, grace_s=2.0, clock=clock)
    assert [waiting.admit(f"k{i}", "10.0.0.1", f"c{i}") for i in range(4)] == [[], [], [], []]
    assert len(waiting) == 4 and waiting.overdue_in() is not None
    clock.now += 1.0
    assert waiting.sweep() == []  # a busy gateway may not even have sent their challenge yet
    clock.now += 1.5
    assert waiting.sweep() == ["c0", "c1"]  # the oldest, down to the cap
    assert len(waiting) == 2 and waiting.overdue_in() is None


def test_a_stranger_whose_connect_arrived_is_never_dropped() -> None:
    clock = Clock()
    waiting = PreAuthSockets(max_total=2, max_per_address=10, grace_s=1.0, clock=clock)
    waiting.admit("spoke", "a", "talker", spoke=lambda: True)
    waiting.admit("idle", "b", "idler", spoke=lambda: False)
    waiting.admit("new", "c", "newcomer")
    clock.now += 5
    assert waiting.sweep() == ["idler"]  # the talker is older, but it waits on us


def test_release_forgets_and_other_addresses_are_not_counted_against_one() -> None:
    clock = Clock()
    waiting = PreAuthSockets(max_total=10, max_per_address=1, grace_s=0.0, clock=clock)
    assert waiting.admit("a1", "a", "x") == []
    assert waiting.admit("b1", "b", "y") == []
    waiting.release("a1", "a")
    assert waiting.admit("a2", "a", "z") == [] and len(waiting) == 2
    assert waiting.admit("a3", "a", "w") == ["z"]
