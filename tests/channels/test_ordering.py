"""KeyedLocks: one chat's messages in order, other chats meanwhile, and nothing kept once done."""

from __future__ import annotations

import asyncio

import pytest

from channels.ordering import KeyedLocks


async def test_one_key_in_order_other_keys_meanwhile_and_nothing_left_behind() -> None:
    locks = KeyedLocks()
    order: list[str] = []
    release_first = asyncio.Event()

    async def handle(key: str, name: str, slow: bool = False) -> None:
        async with locks.hold(key):
            if slow:
                await release_first.wait()
            order.append(name)

    tasks = [asyncio.create_task(handle("a", "a1", slow=True)), asyncio.create_task(handle("a", "a2")),
             asyncio.create_task(handle("a", "a3")), asyncio.create_task(handle("b", "b1"))]
    await asyncio.sleep(0.05)
    assert order == ["b1"]  # "b" did not wait for "a"; a2 and a3 wait behind a1
    assert len(locks) == 1
    release_first.set()
    await asyncio.gather(*tasks)
    assert order == ["b1", "a1", "a2", "a3"]
    assert len(locks) == 0  # no lock kept per chat once its messages are handled


async def test_a_failing_handler_releases_its_key() -> None:
    locks = KeyedLocks()

    async def boom() -> None:
        async with locks.hold("x"):
            raise RuntimeError("handler failed")

    with pytest.raises(RuntimeError):
        await boom()
    async with locks.hold("x"):  # not stuck
        pass
    assert len(locks) == 0
