"""The suite's fork server (``tests/support/gateway_forkserver.py``): a forked gateway is a process of its own, with
its own environment and state, and its exit is reported as ``subprocess.Popen`` would report it."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.gateway_forkserver import ForkedGateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator


async def test_two_forked_gateways_are_separate_processes_with_their_own_state(tmp_path: Path) -> None:
    with GatewayProcess(tmp_path / "a", fork=True) as a, GatewayProcess(tmp_path / "b", fork=True) as b:
        assert isinstance(a.proc, ForkedGateway) and isinstance(b.proc, ForkedGateway)
        seen = []
        for gw in (a, b):
            client = await operator(gw.url, gw.token or "")
            status = await client.call("status")
            await client.close()
            seen.append((status["pid"], status["stateDir"]))
        assert seen == [(a.proc.pid, str(a.state_dir)), (b.proc.pid, str(b.state_dir))]
        assert (tmp_path / "a" / "remoteclaw.db").exists() and (tmp_path / "b" / "remoteclaw.db").exists()


def test_exit_codes_and_signals_are_reported_like_popen(tmp_path: Path) -> None:
    gw = GatewayProcess(tmp_path, fork=True).start()
    proc = gw.proc
    assert isinstance(proc, ForkedGateway)
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(0.2)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(10) == -signal.SIGKILL and proc.returncode == -signal.SIGKILL
    proc.kill()  # already gone: nothing happens, as with Popen
    again = GatewayProcess(tmp_path / "again", fork=True).start()
    assert again.stop() == 0  # SIGTERM: the gateway shuts down cleanly


def test_a_gateway_is_started_afresh_when_a_fork_would_differ(tmp_path: Path) -> None:
    with GatewayProcess(tmp_path / "env", env={"PYTHONMALLOC": "malloc"}) as gw:
        assert isinstance(gw.proc, subprocess.Popen)
    with GatewayProcess(tmp_path / "asked", fork=False) as gw:
        assert isinstance(gw.proc, subprocess.Popen)
