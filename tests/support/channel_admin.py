"""Switching a channel off and on the way an operator does (``config.patch``, ``plugins.setEnabled``), and
waiting for its first account's state in ``channels.status``."""

from __future__ import annotations

from typing import Any

from tests.support.waiting import until

__all__ = ["account_state", "set_enabled", "wait_state"]


async def account_state(c: Any, channel: str) -> str:
    """The state of the channel's first account (``running``, ``error``...), or ``absent``."""
    status = await c.call("channels.status")
    accounts = [a for ch in status["channels"].values() for a in ch["accounts"] if a["channel"] == channel]
    return str(accounts[0]["state"]) if accounts else "absent"


async def set_enabled(c: Any, channel: str, enabled: bool) -> None:
    """``channels.<channel>.enabled`` through ``config.patch``."""
    base = (await c.call("config.get"))["hash"]
    await c.call("config.patch", {"patch": {"channels": {channel: {"enabled": enabled}}}, "baseHash": base})


async def wait_state(c: Any, channel: str, want: str, what: str) -> None:
    async def reached() -> bool:
        return await account_state(c, channel) == want

    await until(reached, what=what)
