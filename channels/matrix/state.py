"""The files one Matrix account keeps in its state dir: the login session, the sync position, the open choices.

Kept apart so every part that remembers something across a restart writes it the same way: atomically and
owner-only (the session file holds an access token). Without a state dir (a channel built alone, in a test)
nothing is read and nothing is written.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["StateFiles"]


class StateFiles:
    """Small text files under one account's state dir."""

    def __init__(self, state_dir: Path | None) -> None:
        self.dir = state_dir

    def load(self, name: str) -> str | None:
        """The file's text, stripped; None when there is no state dir, no file, or it is empty."""
        if self.dir is None:
            return None
        try:
            return (self.dir / name).read_text().strip() or None
        except OSError:
            return None

    def save(self, name: str, text: str) -> None:
        """Write atomically, owner-only (the session file holds a token)."""
        if self.dir is None:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, self.dir / name)
