"""A message sent while the agent works, per steering mode, through a real gateway and the loopback Telegram.

The stand-in CLI (``fake_cli.py``) works slowly on ``sleep:<s>`` and records each run (prompt, pid), so the
tests see which turns ran with which messages: ``queue`` keeps the message for the next turn (and ``/queue``
shows and drops it), ``interrupt`` kills the running CLI and restarts with both messages, ``steer`` falls back
to ``queue`` on runtimes that cannot take input mid-turn, and on Claude Code (the stand-in speaks its
stream-json input) hands the message to the running CLI.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.config.model import Config
from gateway.runs.steering import effective_mode, mode_for
from tests.support.fake_telegram import FAKE_CLI, FakeTelegram, cli_runs, module_fake, telegram_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.procs import alive, host_pid
from tests.support.waiting import until

OWNER = 111

fake = module_fake()


def start(tmp: Path, fake: FakeTelegram, steering: str | None) -> GatewayProcess:
    agent: dict[str, Any] = {"id": "main", "command": [sys.executable, FAKE_CLI]}
    if steering:
        agent["steering"] = steering
    return telegram_gateway(tmp / "gw", fake, ownerAllowFrom=[OWNER], config={"agents": {"list": [agent]}})


@pytest.fixture
def gw_factory(tmp_path: Path, fake: FakeTelegram) -> Iterator[Any]:
    started: list[GatewayProcess] = []

    def make(steering: str | None) -> GatewayProcess:
        proc = start(tmp_path, fake, steering).start()
        started.append(proc)
        return proc

    yield make
    for proc in started:
        proc.stop()


def send(fake: FakeTelegram, text: str) -> int:
    """Send ``text`` as the owner; the index in ``fake.calls`` from which its answers count."""
    before = len(fake.calls)
    fake.user_message(chat_id=OWNER, user_id=OWNER, text=text)
    return before


async def answer(fake: FakeTelegram, since: int, want: Any, timeout: float = 20.0) -> str:
    call = await fake.wait_call(
        "sendMessage",
        lambda c: any(c is x for x in fake.calls[since:]) and want(c.params["text"]),
        timeout=timeout,
    )
    return str(call.params["text"])


def runs_with(gw: GatewayProcess, word: str) -> list[dict[str, Any]]:
    return [r for r in cli_runs(gw.state_dir) if word in r["prompt"]]


async def test_queue_keeps_the_message_for_the_next_turn(gw_factory: Any, fake: FakeTelegram) -> None:
    gw = gw_factory(None)
    await fake.wait_polling()
    first = send(fake, "sleep:3 first job")
    await until(lambda: runs_with(gw, "first job"), 20, "the first turn to start")
    send(fake, "second thought")
    send(fake, "third thought")
    at = send(fake, "/queue")
    shown = await answer(fake, at, lambda t: "wait" in t)
    assert "2 message(s)" in shown and "1. second thought" in shown and "2. third thought" in shown
    at = send(fake, "/queue clear")
    assert await answer(fake, at, lambda t: "Dropped" in t) == "🗑 Dropped 2 waiting message(s)."
    at = send(fake, "/queue")
    assert await answer(fake, at, lambda t: "waiting" in t) == "Nothing is waiting."
    # The running turn was not touched, and the dropped messages never reached the agent.
    assert await answer(fake, first, lambda t: t.startswith("echo:")) == "echo: sleep:3 first job"
    # A message sent mid-turn and kept waits for the next turn, which answers it alone.
    first = send(fake, "sleep:2 job one")
    await until(lambda: runs_with(gw, "job one"), 20, "the turn to start")
    later = send(fake, "job two")
    assert await answer(fake, first, lambda t: "job one" in t) == "echo: sleep:2 job one"
    assert await answer(fake, later, lambda t: "job two" in t) == "echo: job two"
    assert not runs_with(gw, "thought")
    assert len(runs_with(gw, "job one")) == 1


async def test_interrupt_restarts_the_turn_with_both_messages(gw_factory: Any, fake: FakeTelegram) -> None:
    gw = gw_factory("interrupt")
    await fake.wait_polling()
    first = send(fake, "sleep:3 write the report")
    started = await until(lambda: runs_with(gw, "write the report"), 20, "the first turn to start")
    pid = host_pid(started[0]["pid"], "REMOTECLAW_RUN_ID=" + started[0]["env"]["REMOTECLAW_RUN_ID"])
    send(fake, "in French please")
    await until(lambda: not alive(pid), 10, "the interrupted CLI to be stopped")
    reply = await answer(fake, first, lambda t: "French" in t)
    assert "2 messages arrived" in reply and "[1] sleep:3 write the report" in reply and "[2] in French please" in reply
    runs = runs_with(gw, "write the report")
    assert len(runs) == 2 and "in French please" in runs[1]["prompt"]
    texts = [c.params["text"] for c in fake.calls[first:] if c.method == "sendMessage"]
    assert "echo: sleep:3 write the report" not in texts  # the stopped turn answered nothing
    assert not any("didn't work" in t for t in texts)


async def test_steer_hands_the_message_to_the_running_cli(gw_factory: Any, fake: FakeTelegram) -> None:
    gw = gw_factory("steer")
    await fake.wait_polling()
    first = send(fake, "sleep:3 draft the plan")
    started = await until(lambda: runs_with(gw, "draft the plan"), 20, "the turn to start")
    assert "--input-format" in started[0]["argv"]  # Claude Code's stream-json input: stdin stays open
    await asyncio.sleep(0.5)  # the CLI is up and working
    send(fake, "with a budget section")
    reply = await answer(fake, first, lambda t: "budget" in t)
    assert reply == "echo: sleep:3 draft the plan\n\necho: with a budget section"  # one reply, both answers
    assert len(cli_runs(gw.state_dir)) == 1  # no second turn was started


def test_steer_falls_back_to_queue_where_the_runtime_cannot_take_more_input() -> None:
    config = Config.model_validate(
        {
            "agents": {
                "list": [
                    {"id": "main", "runtime": "claude", "steering": "steer"},
                    {"id": "cx", "runtime": "codex", "steering": "steer"},
                    {"id": "gm", "runtime": "gemini"},
                ]
            },
            "messages": {"queue": {"mode": "steer-backlog"}},
        }
    )
    assert [effective_mode(config, a) for a in ("main", "cx", "gm")] == ["steer", "queue", "queue"]
    assert mode_for(config, "gm") == "steer"  # OpenClaw's steer-backlog
    config = Config.model_validate({"messages": {"queue": {"mode": "collect"}}})
    assert mode_for(config, "main") == "queue"
