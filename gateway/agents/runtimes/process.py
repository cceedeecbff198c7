"""Spawning an agent CLI, reading its NDJSON, the no-output watchdog, and a clean stop.

The CLI runs in its own process group so a stop reaches the MCP shim and anything else it started (``spawn``
starts it with vfork, at a cost that does not grow with the gateway's memory). Stopping is SIGTERM to the
group, a grace period, then SIGKILL: it happens on abort (task cancelled), on the watchdog (no stdout line for
``no_output_timeout`` seconds) and when a run times out. Lines that are not JSON are kept as diagnostics, never
fatal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import signal
import stat
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson
import structlog

from gateway.agents.runtimes.base import Invocation
from gateway.agents.runtimes.spawn import Child, spawn
from gateway.sandbox.env import child_env
from gateway.sandbox.open_beneath import (
    MAX_READ_BYTES,
    LinkRefused,
    link_beneath,
    open_beneath,
    read_fd,
    readlink_beneath,
    remove_beneath,
    write_beneath,
)

log = structlog.get_logger("gateway.agents")

__all__ = ["LINGER_S", "Pipe", "ProcessResult", "StdinFeed", "run_process", "stop_process"]

LINGER_S = 3.0
"""How long a CLI whose stdin we closed (every message answered) may stay up before it is stopped: Gemini's
``--acp`` does not exit on end of input while its MCP server runs."""

STREAM_LIMIT = 32 * 1024 * 1024
"""Longest single NDJSON line we accept (a tool result with an image can be large)."""


@dataclass(slots=True)
class ProcessResult:
    returncode: int | None
    stderr_tail: str
    stdout_noise: list[str] = field(default_factory=list)
    watchdog_fired: bool = False


class Pipe(Protocol):
    """Where a feed's bytes go: the child's stdin here (an ``asyncio.StreamWriter``), or the stdin of a CLI a node
    runs (``gateway.agent_hosts.stdin``), whose bytes travel to the node in order. ``hold(n)``, where a pipe has
    it, hears how many of the CLI's requests wait on the person (the node's watchdog is held meanwhile)."""

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class StdinFeed:
    """The open stdin of a CLI that answers one user message after another (steering, ``keep_stdin``).

    Every message sent is owed an answer (the CLI's ``done``); when all are answered stdin is closed, which
    ends the CLI. Both happen on the event loop's thread between two reads, so a message either goes in
    before the close (and is answered by this process) or is refused (and waits for the next turn). The pipe
    is the process's stdin, here or on a node: the adapters write to a feed and never know which.
    """

    def __init__(self) -> None:
        self._pipe: Pipe | None = None
        self.sent = 0
        self.answered = 0
        self.closed = False
        self._holds = 0
        self.on_close: Callable[[], None] | None = None
        """Called once when stdin closes (the runner's read loop: a read already waiting gets the linger's deadline,
        as the feed may be closed from another task, e.g. the ACP conversation's, while the runner waits on stdout)."""

    @property
    def holds(self) -> int:
        """How many of the CLI's requests wait on the person: the CLI is silent meanwhile, so no watchdog."""
        return self._holds

    @holds.setter
    def holds(self, n: int) -> None:
        self._holds = n
        hold = getattr(self._pipe, "hold", None)
        if hold is not None:
            hold(n)

    def attach(self, pipe: Pipe) -> None:
        """The process started with its first message already written (``pipe`` is its stdin)."""
        self._pipe, self.sent, self.answered, self.closed = pipe, 1, 0, False

    def send(self, data: bytes) -> bool:
        """Write one more user message (an answer is owed); False when stdin is closed (or not open yet)."""
        if not self.write(data):
            return False
        self.sent += 1
        return True

    def write(self, data: bytes) -> bool:
        """Write protocol bytes (a JSON-RPC request or answer: no answer owed); False when stdin is closed."""
        if self.closed or self._pipe is None:
            return False
        try:
            self._pipe.write(data)
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            self.close()
            return False
        return True

    def answered_one(self) -> None:
        self.answered += 1
        if self.answered >= self.sent:
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._pipe is not None:
            with contextlib.suppress(Exception):
                self._pipe.close()
        if self.on_close is not None:
            self.on_close()


async def stop_process(proc: Child, grace: float = 3.0) -> None:
    """SIGTERM the process group, wait ``grace`` seconds, then SIGKILL it."""
    if proc.returncode is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(proc.wait(), wait)
            break
        except TimeoutError:
            continue
    # The leader is gone; take stragglers in the group (e.g. an MCP server that ignored SIGTERM) with it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_process(inv: Invocation, on_object: Callable[[dict[str, Any]], None], *,
                      no_output_timeout: float, grace: float = 3.0,
                      on_spawn: Callable[[float], None] | None = None,
                      feed: StdinFeed | None = None) -> ProcessResult:
    """Run ``inv`` to the end, handing each decoded JSON line to ``on_object``.

    With ``inv.keep_stdin``, stdin stays open after ``inv.stdin``: ``feed`` (attached here) writes further
    user messages and closes it once every message is answered.

    The per-run files are taken back afterwards: a file that was there before gets its old content again, a
    new one is removed. In a throw-away workspace that changes nothing; in a project folder it keeps a
    project's own ``AGENTS.md`` or ``GEMINI.md`` and leaves no token-bearing config behind to be committed.
    """
    before = _write_files(inv.files, inv.cwd)
    try:
        if inv.user is not None:
            await asyncio.to_thread(_hand_over, [*inv.hand_over, *inv.files], inv.user)
        return await _run(inv, on_object, no_output_timeout=no_output_timeout, grace=grace, on_spawn=on_spawn,
                          feed=feed)
    finally:
        _restore_files(before, inv.cwd)


@dataclass(frozen=True, slots=True)
class _Was:
    """What a per-run file's name held before the turn: a file's bytes, a symlink (kept, never followed), or
    nothing."""

    content: bytes | None = None
    link: str | None = None
    mode: int = 0o644


def _below(root: Path, path: Path) -> str:
    return str(path.relative_to(root))


def _was(root: Path, rel: str) -> _Was:
    link = readlink_beneath(root, rel)
    if link is not None:
        return _Was(link=link)
    try:
        fd = open_beneath(root, rel, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except LinkRefused:
        raise
    except OSError:
        return _Was()
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    try:
        return _Was(content=read_fd(fd, rel, max_bytes=MAX_READ_BYTES).data, mode=mode)
    except OSError:  # a folder or a FIFO there: nothing of ours to give back
        return _Was()


def _write_files(files: dict[Path, str], root: Path) -> dict[Path, _Was]:
    """Write the per-run files below ``root`` (the run's folder, where the run may have planted links): each is a
    temp file renamed into a folder opened through no link, so a link at the name is replaced, never written
    through. What each name held before (to give back). A folder on the way that is a link: refused, logged."""
    before: dict[Path, _Was] = {}
    for path, text in files.items():
        rel = _below(root, path)
        try:
            before[path] = _was(root, rel)
            # 0600: these files (the per-run MCP config) carry the run's gateway token.
            write_beneath(root, rel, text.encode(), mode=0o600)
        except LinkRefused as exc:
            log.warning("per-run file not written: a folder on its way is a symlink", path=str(path), link=exc.filename)
            before.pop(path, None)
    return before


def _hand_over(paths: list[Path], user: str) -> None:
    """Give the run's own paths (and everything below them) to the Unix user it starts as."""
    entry = pwd.getpwnam(user)
    for top in paths:
        for path in (top, *(top.rglob("*") if top.is_dir() and not top.is_symlink() else ())):
            with contextlib.suppress(OSError):
                os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)


def _restore_files(before: dict[Path, _Was], root: Path) -> None:
    """Give each per-run file's name back what it held (a new one removed), through no link the run planted."""
    for path, was in before.items():
        rel = _below(root, path)
        try:
            if was.link is not None:
                link_beneath(root, rel, was.link)
            elif was.content is not None:
                write_beneath(root, rel, was.content, mode=was.mode)
            else:
                remove_beneath(root, rel)
        except LinkRefused as exc:
            log.warning("per-run file not given back: a folder on its way is now a symlink", path=str(path),
                        link=exc.filename)
        except OSError as exc:
            log.warning("per-run file not given back", path=str(path), error=str(exc))


async def _run(inv: Invocation, on_object: Callable[[dict[str, Any]], None], *, no_output_timeout: float,
               grace: float, on_spawn: Callable[[float], None] | None, feed: StdinFeed | None) -> ProcessResult:
    # The gateway's own REMOTECLAW_* variables (its token, database URL, channel tokens) and every other
    # secret-looking one stay with it: the agent gets its run's context (``inv.env``) and its CLI's credentials.
    env = child_env(os.environ, inv.env, allowed=inv.pass_env)
    proc = await spawn(inv.argv, cwd=inv.cwd, env=env, stdin=inv.stdin is not None, limit=STREAM_LIMIT,
                       user=inv.user)
    started = time.monotonic()
    if on_spawn is not None:
        on_spawn(started)
    stderr: deque[str] = deque(maxlen=40)
    result = ProcessResult(returncode=None, stderr_tail="")

    async def feed_stdin() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(inv.stdin or b"")
            await proc.stdin.drain()
            if not keep_open:
                proc.stdin.close()

    async def read_stderr() -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                stderr.append(line)

    keep_open = inv.keep_stdin and feed is not None
    if keep_open and feed is not None and proc.stdin is not None:
        feed.attach(proc.stdin)
    tasks = [asyncio.create_task(read_stderr())]
    if inv.stdin is not None:
        tasks.append(asyncio.create_task(feed_stdin()))
    lingered = False
    reading: asyncio.Timeout | None = None  # the deadline of the read waiting on stdout, while one waits

    def closed() -> None:
        """Stdin closed while a read waits (the feed closed from another task): the CLI has ``LINGER_S`` from now to
        end, as after a close between two reads, not what is left of the no-output watchdog's time."""
        if reading is not None:
            until = asyncio.get_running_loop().time() + LINGER_S
            when = reading.when()
            reading.reschedule(until if when is None else min(when, until))

    if feed is not None:
        feed.on_close = closed
    try:
        assert proc.stdout is not None
        while True:
            try:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the line and drops a
                # cancellation (an abort) that lands just as the line arrives, and CLIs stream constantly.
                async with asyncio.timeout(LINGER_S if feed is not None and feed.closed else no_output_timeout) \
                        as reading:
                    try:
                        raw = await proc.stdout.readline()
                    finally:
                        reading = None
            except TimeoutError:
                if feed is not None and feed.closed:  # every answer is in, stdin is closed, the CLI stays up: done
                    lingered = True
                    break
                if feed is not None and feed.holds:
                    continue  # the CLI waits for a person's decision, not stuck
                result.watchdog_fired = True
                break
            except ValueError:  # a line longer than STREAM_LIMIT: skip it, keep going
                result.stdout_noise.append("<line too long>")
                continue
            if not raw:
                break
            line = raw.strip()
            if not line:
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                if len(result.stdout_noise) < 40:
                    result.stdout_noise.append(line.decode("utf-8", "replace")[:500])
                continue
            if isinstance(obj, dict):
                on_object(obj)
        if result.watchdog_fired or lingered:
            await stop_process(proc, grace)
        else:
            try:
                async with asyncio.timeout(30):
                    await proc.wait()
            except TimeoutError:
                await stop_process(proc, grace)
    except BaseException:
        await asyncio.shield(stop_process(proc, grace))
        raise
    finally:
        if feed is not None:
            feed.on_close = None
            feed.close()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(t, 2)
        result.stderr_tail = "\n".join(stderr)
        result.returncode = proc.returncode
    return result
