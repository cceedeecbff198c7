"""Exec approvals: the node's own list of what ``system.run`` may execute. Empty means nothing runs.

The list lives on the node (``exec-approvals.json`` in its state dir) and only someone at the node can
change it (``remoteclaw node approvals``): the gateway owner asks, the machine's owner decides. A pattern
with a ``/`` matches the resolved executable's full path (``/usr/bin/*``), one without matches its name
(``git``, ``python3*``); ``*`` alone allows everything.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from nodes.state import read_json, write_private

__all__ = ["ExecApprovals", "Verdict"]


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    executable: str | None
    """The resolved path of argv[0] (None when it is not found)."""
    pattern: str | None = None
    """The pattern that allowed it."""


class ExecApprovals:
    """The allowlist file, read fresh at every check (an edit applies to the next command, no restart)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def patterns(self) -> list[str]:
        entries = read_json(self.path).get("allow") or []
        return [str(e["pattern"] if isinstance(e, dict) else e) for e in entries]

    def _write(self, patterns: list[str]) -> None:
        now = int(time.time() * 1000)
        write_private(self.path, {"version": 1, "allow": [{"pattern": p, "addedAtMs": now} for p in patterns]})

    def add(self, pattern: str) -> bool:
        patterns = self.patterns()
        if pattern in patterns:
            return False
        self._write([*patterns, pattern])
        return True

    def remove(self, pattern: str) -> bool:
        patterns = self.patterns()
        if pattern not in patterns:
            return False
        self._write([p for p in patterns if p != pattern])
        return True

    def check(self, argv0: str, env: dict[str, str] | None = None, cwd: str | None = None) -> Verdict:
        """Whether ``argv0`` may run: resolved on PATH (or relative to ``cwd``), then matched."""
        executable = _resolve(argv0, env, cwd)
        if executable is None:
            return Verdict(False, None)
        # The path as found and the file it links to both count: ``sh`` allows /usr/bin/sh -> dash.
        paths = {executable, os.path.realpath(executable)}
        names = {os.path.basename(p) for p in paths}
        for pattern in self.patterns():
            targets = paths if "/" in pattern else names
            if pattern == "*" or any(fnmatchcase(t, pattern) for t in targets):
                return Verdict(True, executable, pattern)
        return Verdict(False, executable)

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path), "allow": self.patterns()}


def _resolve(argv0: str, env: dict[str, str] | None, cwd: str | None) -> str | None:
    if "/" in argv0:
        path = Path(argv0) if os.path.isabs(argv0) else Path(cwd or ".").absolute() / argv0
        return os.path.normpath(path) if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(argv0, path=(env or {}).get("PATH") or os.environ.get("PATH"))
    return os.path.abspath(found) if found else None
