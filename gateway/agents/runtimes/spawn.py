"""Starting a child process at a cost that does not grow with the gateway's memory.

``asyncio.create_subprocess_exec`` under uvloop starts children with libuv's ``fork()``: the kernel copies the
parent's page tables, so the cost grows with the gateway's resident memory (measured here: 0.4 ms for a bare
interpreter, ~11 ms at 150 MiB). ``subprocess.Popen`` uses ``vfork()`` (or ``posix_spawn``), which shares the
parent's memory until ``exec``, so it stays at a fraction of a millisecond. Every agent turn starts a CLI, so this
is on the hot path: ``spawn`` starts the child with ``Popen`` and gives it asyncio streams on its pipes and an exit
wait through a pidfd (a thread where pidfds are missing), working the same on uvloop and the default loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["Child", "spawn"]


class Child:
    """A running child: ``pid``, ``stdin`` (a writer, or None), ``stdout``/``stderr`` readers, ``returncode``
    (None while it runs) and ``wait()``; the subset of ``asyncio.subprocess.Process`` the runtimes use."""

    def __init__(self, popen: subprocess.Popen[bytes], stdin: asyncio.StreamWriter | None,
                 stdout: asyncio.StreamReader, stderr: asyncio.StreamReader) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self._exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._watch()

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        """The exit status, once the child has exited (its pipes may still hold unread output)."""
        return await asyncio.shield(self._exited)

    def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # no pidfd here (old kernel, not Linux): a thread waits instead
            task = loop.create_task(asyncio.to_thread(self._popen.wait))
            task.add_done_callback(lambda t: self._done(t.result() if not t.cancelled() else -1))
            return

        def readable() -> None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
            self._done(self._popen.wait())  # already exited: reaps at once

        loop.add_reader(pidfd, readable)

    def _done(self, code: int) -> None:
        if not self._exited.done():
            self._exited.set_result(code)


async def spawn(argv: Sequence[str], *, cwd: Path | str, env: Mapping[str, str], stdin: bool = False,
                limit: int = 2 ** 16, user: str | None = None) -> Child:
    """Start ``argv`` in a new session (its own process group), with pipes for stdout and stderr (and stdin).

    Args:
        argv: the program and its arguments.
        cwd: the working directory.
        env: the whole environment of the child.
        stdin: a pipe for the child's stdin (else /dev/null).
        limit: the longest line ``readline`` accepts on stdout and stderr.
        user: start as this Unix user, with its own group and no others (the gateway must be root).

    Raises:
        OSError: the program could not be started (not found, not executable).
    """
    loop = asyncio.get_running_loop()
    # Popen on the loop on purpose: with vfork it returns in well under a millisecond, once the child has exec'd.
    gid = pwd.getpwnam(user).pw_gid if user else None
    popen = subprocess.Popen(  # noqa: ASYNC220
        list(argv), cwd=str(cwd), env=dict(env), start_new_session=True, close_fds=True,
        user=user, group=gid, extra_groups=[] if user else None,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        readers = []
        for pipe in (popen.stdout, popen.stderr):
            reader = asyncio.StreamReader(limit=limit, loop=loop)
            protocol = asyncio.StreamReaderProtocol(reader)
            await loop.connect_read_pipe(lambda p=protocol: p, pipe)  # type: ignore[misc]
            readers.append(reader)
        writer = None
        if popen.stdin is not None:
            transport, flow = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, popen.stdin)
            writer = asyncio.StreamWriter(transport, flow, None, loop)
        return Child(popen, writer, readers[0], readers[1])
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            popen.kill()
        raise
