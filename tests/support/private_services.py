"""A PostgreSQL server and a Redis server of the test's own, to stop and start at will.

The machine's shared PostgreSQL (5432) and Redis (6379) serve every other test at the same time, so a
fault test never touches them: it runs ``initdb`` into a temporary directory and ``redis-server`` on a
free port, and takes them down and up again as the fault needs. PostgreSQL refuses to run as root, so
as root the cluster belongs to the ``postgres`` user and every ``pg_ctl`` goes through ``runuser``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gateway_proc import free_port
from tests.support.requires import require

__all__ = ["PrivatePostgres", "PrivateRedis", "pg_bin", "private_pg"]


def pg_bin() -> Path | None:
    """The newest ``/usr/lib/postgresql/<n>/bin`` that has ``initdb`` (Debian keeps it off PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _wait_port(port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return True
        time.sleep(0.05)
    return False


class PrivatePostgres:
    """``initdb`` + ``pg_ctl`` on a free port with trust authentication; ``url`` for the gateway."""

    def __init__(self) -> None:
        bin_dir = pg_bin()
        require(bin_dir is not None, "PostgreSQL server binaries (initdb) are not installed")
        assert bin_dir is not None
        self.bin = bin_dir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="rc-faults-pg-"))
        self.data = self.root / "data"
        self.user: str | None = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                require(False, "running as root and there is no 'postgres' user to run a private PostgreSQL as")
            self.user = "postgres"
            shutil.chown(self.root, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bin / tool), *args]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, f"{tool} failed: {done.stdout}\n{done.stderr}"

    def start(self) -> PrivatePostgres:
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50"
        self._run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.root / "server.log"), "-w", "start")
        assert _wait_port(self.port, 20), "private PostgreSQL did not open its port"
        return self

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server; ``immediate`` drops every connection at once, as a crashed server does."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def close(self) -> None:
        with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


class PrivateRedis:
    """``redis-server`` on a free port, no persistence: a restart loses everything, as a crash does."""

    def __init__(self, root: Path) -> None:
        require(shutil.which("redis-server") is not None, "redis-server is not installed")
        self.root = root
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.root)], stdout=subprocess.DEVNULL)
        if not _wait_port(self.port, 10):
            self.close()
            raise AssertionError("private redis-server did not start")
        return self

    def stop(self) -> None:
        """Kill it (``start`` again brings it back on the same port, empty)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    close = stop


@pytest.fixture
def private_pg() -> Iterator[PrivatePostgres]:
    """A running private PostgreSQL for one test (import it into the test module so pytest finds it)."""
    server = PrivatePostgres().start()
    yield server
    server.close()
