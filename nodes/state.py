"""Where the node host keeps its identity, its node token and its exec approvals.

``REMOTECLAW_NODE_STATE_DIR`` or ``~/.remoteclaw/node``; files are written owner-only (0600), since the
key and the token are the node's credentials.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["read_json", "state_dir", "write_private"]


def state_dir() -> Path:
    override = os.environ.get("REMOTECLAW_NODE_STATE_DIR")
    return Path(override).expanduser() if override else Path.home() / ".remoteclaw" / "node"


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; empty when it is missing (a corrupt file is an error, not silently reset)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object")
    return data


def write_private(path: Path, data: dict[str, Any]) -> None:
    """Write atomically and owner-only: a crash never leaves half a file, nobody else can read it."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)
