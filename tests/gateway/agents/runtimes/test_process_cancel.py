"""An abort must stop a CLI that never stops talking.

A turn is cancelled exactly once (a second cancel could cut its clean-up short), so the process
runner must never lose that one cancellation, even when it lands just as an output line arrives:
``asyncio.wait_for`` on Python 3.11 does lose it then. A real CLI streams events all the time; this one
floods stdout (for a few seconds at most), so nearly every cancellation lands on a completed read.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from gateway.agents.runtimes.base import Invocation
from gateway.agents.runtimes.process import run_process

FLOOD = (
    "import sys, time\n"
    "end = time.monotonic() + 6\n"
    "while time.monotonic() < end:\n"
    "    sys.stdout.write('{\"type\": \"noise\"}\\n'); sys.stdout.flush()\n"
)


async def cancel_while_it_talks(tmp_path: Path) -> asyncio.Task[Any]:
    """Start the flooding CLI under the runner, cancel once after 200 lines; the task when it has ended."""
    talking = asyncio.Event()
    lines = 0

    def on_line(_obj: dict[str, Any]) -> None:
        nonlocal lines
        lines += 1
        if lines >= 200:
            talking.set()

    inv = Invocation(argv=[sys.executable, "-c", FLOOD], env={}, cwd=tmp_path)
    task = asyncio.create_task(run_process(inv, on_line, no_output_timeout=30, grace=1.0))
    await asyncio.wait_for(talking.wait(), 10)
    task.cancel()
    await asyncio.wait({task}, timeout=15)
    return task


async def test_one_cancel_stops_a_flooding_cli(tmp_path: Path) -> None:
    for _ in range(3):  # each try must end on its single cancel
        task = await cancel_while_it_talks(tmp_path)
        # Lost, the runner would have read on until the CLI stopped by itself, and returned normally.
        assert task.cancelled(), "the cancellation was lost: the runner kept reading"
