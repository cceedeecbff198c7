"""A fork server for the suite's gateways: one process per test worker that has already imported what a gateway
start imports, and forks a gateway from there for each ``GatewayProcess.start``.

Why: the suite starts about 300 gateways, and each spent most of its 0.7-0.9 s of CPU importing the same 900
modules (SQLAlchemy, pydantic, uvicorn, our own). A forked gateway skips only that: it runs ``python -m
gateway.cli gateway run`` as a process of its own, with its own environment, working folder, log file and port,
serving real sockets. What only a fresh interpreter shows (what a start imports, its time, a bare install) is
tested by starting one (``tests/test_core_install.py``, ``tests/gateway/cli/``, ``scripts/check-first-run``).

The gateway is the fork server's child, not the test worker's, so ``ForkedGateway`` stands in for
``subprocess.Popen``: signals go straight to the pid, and the exit status comes back from the fork server, which
reaps its children. Protocol, one JSON object per line: the worker sends ``{"id", "argv", "env", "cwd", "log"}``;
the server answers ``{"id", "pid"}`` (or ``{"id", "error"}``), and ``{"exited": pid, "code": returncode}`` when a
child ends (``returncode`` as ``Popen`` has it: negative for a signal).
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import json
import os
import runpy
import selectors
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

PRELOAD = (
    "gateway.cli", "gateway.server.serve", "gateway.composition.wiring", "gateway.composition.gateway",
    "uvloop", "aiosqlite", "sqlalchemy.dialects.sqlite.aiosqlite", "gateway.runs", "gateway.runs.recovery",
    "gateway.runs.replicas", "gateway.sessions.service", "gateway.agents.executor", "gateway.people.service",
    "gateway.devices.service", "gateway.approvals.chat", "gateway.cron.heartbeat", "gateway.cron.delivery",
    "gateway.plugin_host.discovery", "gateway.webchat", "gateway.canvas.page", "gateway.desktop.tools",
    "mcp_shim.tools", "jsonschema",
)
"""Roots of what a default start imports (``python -X importtime -m gateway.cli gateway run``). Only a matter of
speed: a module not named here is imported by the forked gateway itself, as a fresh start would. None of them
reads the environment or the clock when imported (a forked gateway must see its own)."""


# -- the server side: ``python -m tests.support.gateway_forkserver`` ---------------------------------------------

def _child(request: dict[str, Any], closing: list[int]) -> None:
    """In the forked process: become ``python -m gateway.cli <argv>`` with the request's environment, and exit."""
    code = 1
    try:
        for fd in closing:
            os.close(fd)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        sys.argv = ["gateway.cli", *request["argv"]]
        try:
            runpy.run_module("gateway.cli", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:
            import traceback

            traceback.print_exc()
        import atexit

        atexit._run_exitfuncs()  # what a normal interpreter exit runs (logging's flush among them)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    """Import the gateway, then fork one per request until the worker closes our stdin."""
    requests = os.dup(0)
    replies = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: set[int] = set()

    def say(message: dict[str, Any]) -> None:
        os.write(replies, (json.dumps(message) + "\n").encode())

    def reap() -> None:
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                children.discard(pid)
                say({"exited": pid, "code": os.waitstatus_to_exitcode(status)})

    selector = selectors.DefaultSelector()
    selector.register(requests, selectors.EVENT_READ, "request")
    selector.register(wake_r, selectors.EVENT_READ, "signal")
    pending = b""
    try:
        while True:
            for key, _ in selector.select():
                if key.data == "signal":
                    os.read(wake_r, 512)
                    reap()
                    continue
                chunk = os.read(requests, 65536)
                if not chunk:  # the worker is gone: take our gateways with us
                    return
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    request = json.loads(line)
                    try:
                        sys.stdout.flush()
                        sys.stderr.flush()
                        pid = os.fork()
                    except OSError as exc:
                        say({"id": request["id"], "error": str(exc)})
                        continue
                    if pid == 0:
                        _child(request, [requests, replies, wake_r, wake_w, selector.fileno()])
                    children.add(pid)
                    say({"id": request["id"], "pid": pid})
            reap()
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# -- the worker side ---------------------------------------------------------------------------------------------

class ForkedGateway:
    """The part of ``subprocess.Popen`` the tests use, for a gateway forked by the fork server."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self._server = server
        self.pid = pid
        self.args = ["gateway.cli", "(forked)"]

    @property
    def returncode(self) -> int | None:
        return self._server.exit_code(self.pid)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        code = self._server.wait_exit(self.pid, timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServer:
    """This worker's fork server, started on first use and stopped when the worker exits (its stdin closes)."""

    def __init__(self) -> None:
        env = os.environ.copy()
        self._python_env = {k: v for k, v in env.items() if k.startswith("PYTHON")}
        """The ``PYTHON*`` variables our interpreter started with: a fork has these, whatever it is given."""
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.gateway_forkserver"], cwd=Path(__file__).resolve().parents[2],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
        )
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._answers: dict[int, dict[str, Any]] = {}
        self._exits: dict[int, int] = {}
        self._reader = threading.Thread(target=self._read, name="forkserver-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            message = json.loads(line)
            with self._changed:
                if "exited" in message:
                    self._exits[message["exited"]] = message["code"]
                else:
                    self._answers[message["id"]] = message
                self._changed.notify_all()
        with self._changed:  # the server died: nothing more will come
            self._answers[-1] = {"error": f"the fork server exited ({self._proc.wait()})"}
            self._changed.notify_all()

    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: Path, log: Path,
              timeout: float = 60.0) -> ForkedGateway:
        """Fork ``python -m gateway.cli <argv>``; its output is appended to ``log``."""
        request_id = next(self._ids)
        request = {"id": request_id, "argv": argv, "env": env, "cwd": str(cwd), "log": str(log)}
        assert self._proc.stdin is not None
        with self._lock:
            self._proc.stdin.write((json.dumps(request) + "\n").encode())
            self._proc.stdin.flush()
        with self._changed:
            if not self._changed.wait_for(lambda: request_id in self._answers or -1 in self._answers, timeout):
                raise TimeoutError("the fork server did not answer (still importing the gateway?)")
            answer = self._answers.pop(request_id, None) or self._answers[-1]
        if "error" in answer:
            raise RuntimeError(f"fork server: {answer['error']}")
        return ForkedGateway(self, answer["pid"])

    def starts_like(self, env: dict[str, str]) -> bool:
        """Whether a gateway forked with ``env`` is the one a fresh interpreter would start with it: no
        ``PYTHON*`` variable differs from the fork server's (those act only when an interpreter starts)."""
        names = {k for k in (*env, *self._python_env) if k.startswith("PYTHON")}
        return all(env.get(k) == self._python_env.get(k) for k in names)

    def exit_code(self, pid: int) -> int | None:
        with self._changed:
            return self._exit_of(pid)

    def wait_exit(self, pid: int, timeout: float | None) -> int | None:
        with self._changed:
            self._changed.wait_for(lambda: pid in self._exits or -1 in self._answers, timeout)
            return self._exit_of(pid)

    def _exit_of(self, pid: int) -> int | None:
        if pid not in self._exits and -1 in self._answers and not _exists(pid):
            self._exits[pid] = -signal.SIGKILL  # the fork server died, and killed its gateways as it went
        return self._exits.get(pid)

    def alive(self) -> bool:
        return self._proc.poll() is None


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_server: ForkServer | None = None
_server_lock = threading.Lock()


def fork_server() -> ForkServer:
    """This worker's fork server (started now if it is not running)."""
    global _server
    with _server_lock:
        if _server is None or not _server.alive():
            _server = ForkServer()
        return _server


if __name__ == "__main__":
    serve()
