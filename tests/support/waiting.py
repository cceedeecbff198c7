"""Waiting in tests for something another process does (a row, a file, a message at a fake)."""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any

__all__ = ["until"]


async def until(check: Any, timeout: float = 30, what: str = "condition") -> Any:
    """Poll ``check()`` (sync or async) every 0.1 s until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if inspect.isawaitable(got):
            got = await got
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)
