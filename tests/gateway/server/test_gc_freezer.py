"""The collector's pauses at 10,000 clients (issue #45, ``gateway.server.gc_freezer``): the survivors of a slow full
collection are frozen, a frozen object is still freed by its reference count, and one that died in a cycle is
collected by ``reclaim`` (and by ``heap_trim.trim``, run when a crowd leaves)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.server.gc_freezer import SurvivorFreezer
from gateway.server.heap_trim import trim
from tests.support.gateway_proc import GatewayProcess
from tests.support.waiting import until


class _Node:
    """Something the cyclic collector tracks, which can point at itself."""

    def __init__(self) -> None:
        self.me: _Node | None = None


class _Clock:
    """Each full collection appears to take ``took`` seconds."""

    def __init__(self, took: float) -> None:
        self.took = took
        self.now = 0.0

    def __call__(self) -> float:  # read once as a collection starts and once as it stops
        self.now += self.took
        return self.now


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    """Only the tests' own collections run (an automatic one in between would count as one more slow collection
    under the fake clock), and the worker's collector is left as it was: nothing frozen."""
    was_enabled = gc.isenabled()
    gc.disable()
    gc.unfreeze()
    yield
    gc.unfreeze()
    if was_enabled:
        gc.enable()


def _cycle() -> tuple[_Node, weakref.ref[_Node]]:
    node = _Node()
    node.me = node
    return node, weakref.ref(node)


def test_the_survivors_of_a_slow_full_collection_are_frozen() -> None:
    freezer = SurvivorFreezer(slow_s=0.1, clock=_Clock(took=0.5))
    freezer.install()
    try:
        kept = [_Node() for _ in range(1000)]
        gc.collect()
        assert freezer.freezes == 1
        assert gc.get_freeze_count() >= len(kept)
    finally:
        freezer.close()


def test_a_quick_collection_freezes_nothing() -> None:
    freezer = SurvivorFreezer(slow_s=0.1, clock=_Clock(took=0.01))
    freezer.install()
    try:
        gc.collect()
        assert freezer.freezes == 0 and gc.get_freeze_count() == 0
    finally:
        freezer.close()


def test_a_frozen_object_is_freed_by_its_last_reference_and_a_frozen_cycle_by_reclaim() -> None:
    freezer = SurvivorFreezer(slow_s=0.1, clock=_Clock(took=0.5))
    freezer.install()
    try:
        plain = _Node()
        plain_ref = weakref.ref(plain)
        cycle, cycle_ref = _cycle()
        gc.collect()  # slow, so both are frozen now
        assert freezer.freezes == 1
        del plain, cycle
        assert plain_ref() is None  # no cycle: gone at once, frozen or not
        gc.collect()
        assert cycle_ref() is not None  # dead, but out of the collector's reach until reclaimed
        froze = freezer.freezes
        freezer.reclaim()
        assert cycle_ref() is None and freezer.reclaims == 1
        assert freezer.freezes == froze  # reclaim's own (slow-looking) collection is not one to freeze after
    finally:
        freezer.close()


def test_trim_after_a_crowd_left_collects_the_frozen_cycles_too() -> None:
    cycle, cycle_ref = _cycle()
    gc.collect()
    gc.freeze()
    del cycle
    gc.collect()
    assert cycle_ref() is not None
    trim()
    assert cycle_ref() is None


async def test_a_freeze_on_the_loop_schedules_the_reclaim() -> None:
    freezer = SurvivorFreezer(slow_s=0.1, reclaim_every_s=0.05, clock=_Clock(took=0.5))
    freezer.install()
    try:
        cycle, cycle_ref = _cycle()
        gc.collect()
        del cycle
        assert freezer.freezes == 1 and cycle_ref() is not None
        for _ in range(100):
            if freezer.reclaims:
                break
            await asyncio.sleep(0.02)
        assert freezer.reclaims == 1 and cycle_ref() is None
    finally:
        freezer.close()


async def test_a_gateway_settles_its_heap_after_it_starts_answering(tmp_path: Path) -> None:
    """``remoteclaw gateway run`` loads the server with the cyclic collector off; a second after it serves, one
    collection runs, what survived is frozen and the collector is back on (``gateway.server.gc_freezer.settle``)."""
    with GatewayProcess(tmp_path / "gw") as gw:
        await until(lambda: "heap settled" in gw.output(), timeout=10, what="the heap settled")
        line = next(x for x in gw.output().splitlines() if "heap settled" in x)
        frozen = int(line.split("frozen=")[1].split()[0])
        assert frozen > 10_000, line  # the modules, config and routes: out of the collector's reach


SWITCHES = {"freeze", "unfreeze", "enable", "disable", "collect", "set_threshold"}


def test_the_collector_is_switched_only_by_the_gc_freezer() -> None:
    """Turning the cyclic collector off and on, collecting and freezing: one module owns it
    (``gateway/server/gc_freezer.py``), so the moments it happens are read in one place."""
    import ast

    from tests.support import ROOT

    owner = ROOT / "gateway" / "server" / "gc_freezer.py"
    bad = []
    for path in sorted((ROOT / "gateway").rglob("*.py")):
        if path == owner:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Attribute) and node.attr in SWITCHES and isinstance(node.value, ast.Name)
                    and node.value.id == "gc"):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} gc.{node.attr}")
    assert not bad, "switch the collector through gateway.server.gc_freezer:\n" + "\n".join(bad)
