"""/stop ends the turn at once on every runtime, even when the CLI ignores SIGTERM (openclaw#20600, #82479).

A real gateway process, its Telegram bot talking to the loopback fake, and for each runtime driver (claude,
codex, gemini, opencode) the stand-in ``stubborn_cli.py`` in that runtime's output format: it ignores SIGTERM
and so does its child. /stop must answer at once, the CLI and its child must be gone (SIGKILL to the process
group after the grace), and the next message must run and be answered.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import SUPPORT
from tests.support.fake_telegram import FakeTelegram, telegram_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.procs import alive, host_pid
from tests.support.waiting import until

OWNER = 111
STUBBORN = str(SUPPORT / "stubborn_cli.py")


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    server = FakeTelegram().start()
    yield server
    server.stop()


def gateway(tmp: Path, fake: FakeTelegram, runtime: str) -> GatewayProcess:
    agents = {
        "list": [{"id": "main", "runtime": runtime, "command": [sys.executable, STUBBORN]}],
        "noOutputTimeoutSeconds": 300,
        "timeoutSeconds": 600,
    }
    proc = telegram_gateway(tmp / "gw", fake, ownerAllowFrom=[OWNER], config={"agents": agents})
    proc.extra_env.update(STUBBORN_RUNTIME=runtime, STUBBORN_PIDS=str(tmp / "pids"))
    return proc


async def reply(fake: FakeTelegram, text: str, want: Any, timeout: float = 20.0) -> str:
    before = len(fake.calls)
    fake.user_message(chat_id=OWNER, user_id=OWNER, text=text)
    call = await fake.wait_call(
        "sendMessage", lambda c: any(c is x for x in fake.calls[before:]) and want(c.params["text"]), timeout=timeout
    )
    return str(call.params["text"])


def last_pids(pid_file: Path) -> dict[str, int] | None:
    """The last started CLI and its child, by the machine's process ids (the CLI reports its sandbox's)."""
    lines = pid_file.read_text().splitlines() if pid_file.exists() else []
    if not lines:
        return None
    entry = json.loads(lines[-1])
    # Codex's CLI is not given the run's context: one run at a time here, so the test's variable finds it.
    marker = f"REMOTECLAW_RUN_ID={entry['run']}" if entry["run"] else f"STUBBORN_PIDS={pid_file}"
    return {k: host_pid(entry[k], marker) for k in ("cli", "child")}


@pytest.mark.parametrize("runtime", ["claude", "codex", "gemini", "opencode"])
async def test_stop_kills_a_cli_that_ignores_sigterm(tmp_path: Path, fake: FakeTelegram, runtime: str) -> None:
    with gateway(tmp_path, fake, runtime) as gw:
        await fake.wait_polling()
        fake.user_message(chat_id=OWNER, user_id=OWNER, text="hang-forever please")
        pids = await until(lambda: last_pids(tmp_path / "pids"), 20, "the stand-in CLI to start")
        assert all(alive(p) for p in pids.values())
        asked = time.monotonic()
        assert await reply(fake, "/stop", lambda t: "Stopped" in t) == "⏹ Stopped."
        assert time.monotonic() - asked < 3.0, "the answer to /stop waited for the CLI"
        await until(lambda: not any(alive(p) for p in pids.values()), 10, f"{runtime}: the processes to die")
        # The session is free again: the next message runs and is answered.
        answer = await reply(fake, "and now something quick", lambda t: t.startswith("done:"))
        assert "something quick" in answer
        assert not any("hang-forever" in c.params.get("text", "") for c in fake.calls if c.method == "sendMessage")
        assert gw.proc is not None and gw.proc.poll() is None
