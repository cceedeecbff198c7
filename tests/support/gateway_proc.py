"""Start the real gateway as a subprocess on a free port, with its own state dir."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.gateway_forkserver import ForkedGateway, fork_server

ROOT = Path(__file__).resolve().parents[2]

FORK_BY_DEFAULT = True
"""Cleared while a module that sets ``GATEWAY_EXEC = True`` runs (tests/conftest.py): its gateways start afresh."""


_PORT_BASE = 20_000
_PORTS_PER_WORKER = 2_000


def _worker_ports() -> Iterator[int]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    start = _PORT_BASE + (index % 6) * _PORTS_PER_WORKER
    offset = os.getpid() % _PORTS_PER_WORKER  # a rerun in the same worker slot starts elsewhere
    for i in range(_PORTS_PER_WORKER):
        yield start + (offset + i) % _PORTS_PER_WORKER


_ports = _worker_ports()


def free_port() -> int:
    """A port nothing listens on, from this test worker's own range.

    Asking the kernel for port 0 is racy across pytest-xdist workers: two workers can be handed the
    same just-freed port before either binds it, and one gateway then receives the other test's
    clients (seen as a token-mismatch storm and a lockout). Each worker takes ports from its own
    slice below the kernel's ephemeral range (32768+), so fakes that bind port 0 never collide either.
    """
    for port in _ports:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("this test worker used up its port range")


OBSERVED_FILES = ("FAKE_CLI_LOG", "HANG_CLI_PIDS", "STUBBORN_PIDS", "PROBE_LOG", "SPAN_LOG")
"""Variables naming a file a stand-in agent CLI writes for the test to read: shown writable in its sandbox."""


def show_observed_files(config_file: Path, env: dict[str, str]) -> None:
    """Add the stand-in CLI's log files to the agents' sandbox binds in ``config_file``, as an owner would show
    a folder to their agent (``agents.defaults.sandbox.binds``). Nothing else of the test is shown to a run."""
    files = [Path(env[name]) for name in OBSERVED_FILES if env.get(name)]
    if not files or not config_file.exists():
        return
    try:
        config = json.loads(config_file.read_text())
    except ValueError:  # JSON5 written by the test itself: it shows its own files
        return
    sandbox = config.setdefault("agents", {}).setdefault("defaults", {}).setdefault("sandbox", {})
    binds = sandbox.setdefault("binds", [])
    for file in files:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.touch()
        if not any(b.get("path") == str(file) for b in binds):
            binds.append({"path": str(file), "writable": True})
    config_file.write_text(json.dumps(config, indent=2))


class GatewayProcess:
    """A ``remoteclaw gateway run`` subprocess.

    Args:
        state_dir: its state dir (config, token, database, logs).
        config: written to ``remoteclaw.json`` before start, if given.
        env: extra environment (e.g. ``REMOTECLAW_DATABASE_URL``).
        python: the interpreter to run it with (default: this one).
        token: the gateway token (passed by env); ``None`` lets the gateway create one.
    """

    def __init__(self, state_dir: Path, *, config: dict[str, Any] | None = None,
                 env: dict[str, str] | None = None, token: str | None = "test-token-" + secrets.token_hex(8),
                 port: int | None = None, python: str = sys.executable, fork: bool | None = None) -> None:
        self.state_dir = Path(state_dir)
        self.python = python
        """The interpreter that runs it (another venv's, for an install with other extras)."""
        self.fork = fork
        """Fork it from this worker's fork server (``gateway_forkserver``) rather than start an interpreter:
        None decides by ``forkable`` (the default, unless the test module sets ``GATEWAY_EXEC = True``)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.token = token
        self.extra_env = env or {}
        self.proc: subprocess.Popen[bytes] | ForkedGateway | None = None
        self.log_path = self.state_dir / "stdout.log"
        if config is not None:
            (self.state_dir / "remoteclaw.json").write_text(json.dumps(config, indent=2))

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
        env["REMOTECLAW_STATE_DIR"] = str(self.state_dir)
        if self.token:
            env["REMOTECLAW_GATEWAY_TOKEN"] = self.token
        env.update(self.extra_env)
        return env

    def forkable(self, env: dict[str, str]) -> bool:
        """Whether a fork of this worker's fork server is the same gateway a fresh interpreter would be: the same
        interpreter, and no ``PYTHON*`` variable that differs from the fork server's (``starts_like``)."""
        if self.fork is not None:
            return self.fork
        if not FORK_BY_DEFAULT or os.environ.get("REMOTECLAW_TEST_FORK", "1") == "0":
            return False
        return self.python == sys.executable and fork_server().starts_like(env)

    def start(self, timeout: float = 20.0) -> GatewayProcess:
        show_observed_files(self.state_dir / "remoteclaw.json", self.extra_env)
        argv = ["gateway", "run", "--port", str(self.port)]
        env = self.env()
        if self.forkable(env):
            self.proc = fork_server().spawn(argv, env=env, cwd=ROOT, log=self.log_path)
        else:
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen([self.python, "-m", "gateway.cli", *argv], cwd=ROOT, env=env,
                                             stdout=log, stderr=subprocess.STDOUT)
        self.wait_healthy(timeout)
        token_file = self.state_dir / "gateway.token"
        if self.token is None and token_file.exists():  # absent when the config file sets the token
            self.token = token_file.read_text().strip()
        return self

    def wait_healthy(self, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited with {self.proc.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(self.http + "/healthz", timeout=1) as resp:
                    return json.loads(resp.read())
            except OSError as exc:
                last = exc
                time.sleep(0.05)
        raise TimeoutError(f"gateway not healthy after {timeout}s ({last}):\n{self.output()}")

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-8000:]
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code

    def __enter__(self) -> GatewayProcess:
        if self.proc is not None and self.proc.poll() is None:  # ``with gw.start(30):`` already started it
            return self
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
