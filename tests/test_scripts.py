"""``./scripts/gateway`` as a person runs it: ``--help`` answers before anything is installed, and Ctrl-C stops a
running gateway (with a web chat client connected) promptly."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.support.gateway_proc import ROOT, free_port
from tests.support.waiting import until
from tests.support.ws import operator


def test_help_is_printed_without_installing_anything(tmp_path: Path) -> None:
    """A fresh clone: no .venv yet. ``--help`` must not start the minute-long install to say how to use it."""
    clone = tmp_path / "clone"
    (clone / "scripts").mkdir(parents=True)
    for name in ("gateway", "_venv.sh"):
        shutil.copy2(ROOT / "scripts" / name, clone / "scripts" / name)
    for flag in ("--help", "-h"):
        started = time.monotonic()
        done = subprocess.run([str(clone / "scripts" / "gateway"), "--port", "19999", flag], cwd=clone,
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("usage: ./scripts/gateway [--port N] [--bind ADDR]")
        assert "REMOTECLAW_EXTRAS" in done.stdout and done.stderr == ""
        assert time.monotonic() - started < 2
    assert not (clone / ".venv").exists()  # nothing was installed


async def test_ctrl_c_stops_the_gateway_promptly_with_a_client_connected(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    env["REMOTECLAW_STATE_DIR"] = str(tmp_path / "state")
    log = (tmp_path / "gateway.log").open("wb")
    proc = subprocess.Popen([str(ROOT / "scripts" / "gateway"), "--port", str(port)], cwd=ROOT, env=env,  # noqa: ASYNC220
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        token_file = tmp_path / "state" / "gateway.token"
        await until(lambda: token_file.exists() and (tmp_path / "state" / "gateway.listen.json").exists(),
                    timeout=60, what="the gateway to listen")
        client = await operator(f"ws://127.0.0.1:{port}/", token_file.read_text().strip())
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)  # what Ctrl-C in the terminal sends
        await asyncio.to_thread(proc.wait, 10)
        took = time.monotonic() - started
        await client.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    assert proc.returncode == 0
    assert took < 1.0, f"stopping took {took:.2f} s"
