"""Process helpers for the benchmarks: free ports, resident memory of a process tree, clean stops."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["children_of", "free_port", "rss_mb", "stop_tree", "tree_rss_mb"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ppids() -> dict[int, int]:
    table: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: the ppid follows the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        table[int(entry.name)] = int(fields[1])
    return table


def children_of(pid: int) -> list[int]:
    """``pid`` and all its descendants (a gateway may fork helpers: their memory counts too)."""
    table = _ppids()
    found, frontier = [pid], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, pp in table.items() if pp == parent]
        found += kids
        frontier += kids
    return found


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_mb(pid: int) -> float:
    """Resident set size of the process alone, in MiB (not the agent CLIs and nodes it has running)."""
    return _rss_kb(pid) / 1024


def tree_rss_mb(pid: int) -> float:
    """Resident set size of a process and its descendants, in MiB (shared pages counted per process)."""
    return sum(_rss_kb(p) for p in children_of(pid)) / 1024


def tree_pss_mb(pid: int) -> float:
    """Proportional set size of a process and its descendants, in MiB: each shared page is split among the
    processes sharing it, so a multi-process program (Chromium) is not counted several times over."""
    total = 0
    for child in children_of(pid):
        try:
            with open(f"/proc/{child}/smaps_rollup") as fh:
                total += next((int(line.split()[1]) for line in fh if line.startswith("Pss:")), 0)
        except OSError:  # gone, or not ours to read
            continue
    return total / 1024


def stop_tree(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM the process group we started, then SIGKILL what is left."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
