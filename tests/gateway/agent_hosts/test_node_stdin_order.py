"""The node's side of a turn's stdin (``agent.input``), against a real CLI process it starts: what the gateway writes
reaches the CLI once and in order (a repeated ``seq`` is not written twice, a gap is refused), a turn that is not
running there takes nothing, and ``close`` ends the CLI's input."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from nodes.agents.runner import AgentRunner
from nodes.agents.settings import AgentHostSettings
from nodes.errors import CommandError

ECHO = """
import json, sys
for line in sys.stdin:
    print(json.dumps({"got": line.rstrip("\\n")}), flush=True)
print(json.dumps({"eof": True}), flush=True)
"""


async def test_the_node_writes_each_input_once_in_order_and_only_to_a_running_turn(tmp_path: Path) -> None:
    cli = tmp_path / "echo_cli.py"
    cli.write_text(ECHO)
    work = tmp_path / "work"
    work.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    AgentHostSettings(clis={"claude": [sys.executable, str(cli)]}, folders=[str(work)], sandbox="off").save(state)
    seen: list[Any] = []
    spawned = asyncio.Event()

    async def report(payload: dict[str, Any]) -> None:
        seen.extend(payload["lines"])
        if any(line.get("_spawned") for line in payload["lines"]):
            spawned.set()

    runner = AgentRunner(state, "ws://127.0.0.1:1/", report)
    with pytest.raises(CommandError) as refused:  # no such turn here
        await runner.input({"turnId": "t-1", "seq": 1, "data": "nobody\n"})
    assert refused.value.code == "NOT_FOUND"
    turn = asyncio.create_task(runner.turn({
        "turnId": "t-1", "agentId": "main", "runtime": "claude", "argv": [sys.executable, str(cli)], "env": {},
        "cwd": str(work), "files": {}, "stdin": "first\n", "keepStdin": True, "noOutputTimeoutS": 30,
        "logins": [], "session": "s1", "private": False, "passEnv": []}))
    await asyncio.wait_for(spawned.wait(), 30)  # the gateway writes once the node says the CLI runs (``_spawned``)
    answers = [await runner.input({"turnId": "t-1", "seq": 1, "data": "second\n"})]
    answers.append(await runner.input({"turnId": "t-1", "seq": 1, "data": "second\n"}))  # a retried call
    with pytest.raises(CommandError) as gap:
        await runner.input({"turnId": "t-1", "seq": 3, "data": "fourth\n"})
    assert gap.value.code == "INVALID_REQUEST" and "out of order" in gap.value.message
    with pytest.raises(CommandError):
        await runner.input({"turnId": "t-1", "seq": 2, "data": 5})
    answers.append(await runner.input({"turnId": "t-1", "seq": 2, "data": "third\n", "holds": 1, "close": True}))
    result = await asyncio.wait_for(turn, 30)
    assert result["returncode"] == 0, result
    assert answers[0]["written"] and answers[1]["repeat"] and answers[2]["closed"], answers
    got = [line.get("got") for line in seen if "got" in line]
    assert got == ["first", "second", "third"], seen  # each once, in order
    assert {"eof": True} in seen  # close: the CLI's input ended
    with pytest.raises(CommandError):  # the turn is over: nothing more goes in
        await runner.input({"turnId": "t-1", "seq": 3, "data": "late\n"})
