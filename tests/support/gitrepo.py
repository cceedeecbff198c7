"""Real git repositories for the projects tests: ``git`` runs a command, ``make_repo`` makes one commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["git", "make_repo"]


def git(cwd: Path, *args: str) -> str:
    """``git <args>`` in ``cwd``; its stdout (a failure raises with git's own message)."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_repo(path: Path, files: dict[str, str]) -> Path:
    """A new repository at ``path`` on branch ``main`` whose first commit holds ``files`` (name -> text)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "T")
    for name, text in files.items():
        (path / name).write_text(text)
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path
