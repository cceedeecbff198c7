"""Stdin closed while the runner waits on stdout ends a CLI that stays up within ``LINGER_S``, not the watchdog's.

A ``runtime: acp`` turn closes its feed from the conversation's task (after the prompt's answer), while the runner
is already waiting on the next stdout line; Gemini CLI's ``--acp`` neither writes nor exits then (its MCP server
runs). The wait must take the linger's deadline at the close, or the turn hangs until the no-output watchdog.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from gateway.agents.runtimes.acp_turn import run_acp_turn
from gateway.agents.runtimes.base import Event, Invocation, McpServer, RunSpec
from gateway.agents.runtimes.process import LINGER_S, StdinFeed, run_process
from tests.support import SUPPORT

STAYS_UP = ("import sys, time\n"
            "sys.stdout.write('{\"ready\": true}\\n'); sys.stdout.flush()\n"
            "sys.stdin.read()\n"
            "time.sleep(3600)\n")
WATCHDOG_S = 60.0


async def test_a_feed_closed_from_another_task_ends_a_cli_that_stays_up(tmp_path: Path) -> None:
    feed = StdinFeed()
    ready = asyncio.Event()
    inv = Invocation(argv=[sys.executable, "-c", STAYS_UP], env={}, cwd=tmp_path, stdin=b"", keep_stdin=True)
    ran = asyncio.create_task(run_process(inv, lambda _o: ready.set(), no_output_timeout=WATCHDOG_S, grace=1.0,
                                          feed=feed))
    await asyncio.wait_for(ready.wait(), 10)
    await asyncio.sleep(0.2)  # the runner waits on its next line now
    started = time.monotonic()
    feed.close()
    result = await asyncio.wait_for(ran, WATCHDOG_S / 2)
    assert time.monotonic() - started < LINGER_S + 5
    assert not result.watchdog_fired
    assert result.returncode is not None and result.returncode != 0  # stopped, it did not end by itself


async def test_an_acp_turn_with_an_agent_that_stays_up_ends(tmp_path: Path) -> None:
    """The stand-in ACP agent with ``--linger`` (as Gemini's ``--acp``): the turn's answer and its end, promptly."""
    events: list[Event] = []
    inv = Invocation(argv=[sys.executable, str(SUPPORT / "fake_acp_agent.py"), "--linger"], env={}, cwd=tmp_path,
                     stdin=b"", keep_stdin=True)
    spec = RunSpec(prompt="hello there", system_prompt="", workspace=tmp_path,
                   mcp=McpServer(command=sys.executable, args=("-c", "pass"), env={}))
    started = time.monotonic()
    result: Any = await asyncio.wait_for(run_acp_turn(inv, spec, events.append, meta={},
                                                      no_output_timeout=WATCHDOG_S), WATCHDOG_S / 2)
    assert time.monotonic() - started < LINGER_S + 10
    assert not result.watchdog_fired
    assert "".join(e.text or "" for e in events if e.kind == "text") == "echo: hello there"
    assert [e for e in events if e.kind == "done" and not e.is_error]
