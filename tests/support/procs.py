"""Process checks for tests that must see an agent CLI really stopped."""

from __future__ import annotations

import os

__all__ = ["alive", "host_pid"]


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def host_pid(pid: int, marker: str) -> int:
    """The gateway machine's id of a process a stand-in CLI reported as ``pid`` from inside its run.

    A sandboxed run has a PID namespace of its own, so what it reports as its pid is that namespace's (the last
    number of ``NSpid`` in ``/proc/<pid>/status``); unsandboxed, the two are the same. The process must still
    be running: it is found by its pid there and ``marker`` (``NAME=value``) in its environment, e.g. its run's
    ``REMOTECLAW_RUN_ID=…`` (Claude Code's context; Codex's CLI is not given it) or the test's own variable.
    """
    wanted = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                nspid = next((line.split()[1:] for line in fh if line.startswith("NSpid:")), [])
            if not nspid or int(nspid[-1]) != pid:
                continue
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if wanted in fh.read().split(b"\0"):
                    return int(entry)
        except (OSError, ValueError):
            continue
    raise AssertionError(f"no running process {pid} with {marker}")
