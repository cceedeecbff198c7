"""Whether this machine can sandbox agent runs with bubblewrap, and what in ``/etc`` an agent must not read.

Both are facts of the machine: the probe starts ``bwrap`` with the namespaces every run gets (user, PID) and
reports why not when it cannot (not installed, user namespaces disabled, a container's seccomp profile); a
success is kept for the process's life, a failure asked again later. ``doctor`` prints the same with the fix.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["BwrapProbe", "etc_secrets", "probe_bwrap"]


@dataclass(frozen=True, slots=True)
class BwrapProbe:
    """``path``: the bwrap executable (None: not installed); ``ok``: it started a confined process here;
    ``why``: what failed, in words (empty when ok); ``fix``: the command or setting that mends it."""

    path: str | None
    ok: bool
    why: str = ""
    fix: str = ""


RETRY_S = 30.0
"""A failed probe is tried again after this long: a machine under load may have failed it once."""

_found: list[tuple[float, BwrapProbe]] = []
_probing = threading.Lock()
"""One probe at a time: the first runs of a busy gateway all ask at once, from worker threads."""


def probe_bwrap() -> BwrapProbe:
    """Whether bubblewrap can confine a process here: found once when it can, asked again after ``RETRY_S``
    when it could not (a timeout under load must not refuse strangers' runs for the gateway's whole life)."""
    with _probing:
        if _found and (_found[0][1].ok or time.monotonic() - _found[0][0] < RETRY_S):
            return _found[0][1]
        found = _probe()
        _found[:] = [(time.monotonic(), found)]
        return found


def _probe() -> BwrapProbe:
    path = os.environ.get("REMOTECLAW_BWRAP") or shutil.which("bwrap")
    if path is None:
        return BwrapProbe(None, False, "bubblewrap (bwrap) is not installed",
                          "apt-get install bubblewrap (Debian, Ubuntu) or dnf install bubblewrap (Fedora)")
    argv = [path, "--unshare-user", "--unshare-pid", "--die-with-parent",
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return BwrapProbe(path, False, f"bwrap could not run: {exc}", "reinstall bubblewrap")
    if done.returncode == 0:
        return BwrapProbe(path, True)
    err = done.stderr.decode("utf-8", "replace").strip().splitlines()
    detail = err[-1] if err else f"exit code {done.returncode}"
    fix = ("allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu "
           "kernel.apparmor_restrict_unprivileged_userns=0); in Docker run the container with "
           "--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt "
           "systempaths=unconfined (deploy/compose.yaml sets all three; the last lets bwrap mount /proc); or set "
           "agents.defaults.sandbox.user to a Unix user of its own for agent runs")
    return BwrapProbe(path, False, f"bwrap cannot create a sandbox here: {detail}", fix)


@functools.cache
def etc_secrets(root: str = "/etc") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Files and folders under ``/etc`` that other users may not read (``/etc/shadow``, SSH host keys, …).

    Inside the sandbox the agent keeps the gateway's user id, so what only that user may read must be
    hidden explicitly: files are covered with an empty file, folders with an empty tmpfs.
    """
    files: list[str] = []
    dirs: list[str] = []
    for top, subdirs, names in os.walk(root, followlinks=False):
        for name in list(subdirs):
            if _unreadable(os.path.join(top, name), stat.S_ISDIR):
                dirs.append(os.path.join(top, name))
                subdirs.remove(name)  # all of it is hidden
        files += [os.path.join(top, n) for n in names if _unreadable(os.path.join(top, n), stat.S_ISREG)]
    return tuple(files), tuple(dirs)


def _unreadable(path: str, kind: Callable[[int], bool]) -> bool:
    """``path`` is of ``kind`` (a file, a folder) and other users may not read it."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return kind(mode) and not mode & stat.S_IROTH
