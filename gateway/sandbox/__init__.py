"""The agent runs' sandbox: what a run may see of the gateway's machine (docs/sandbox.md).

An agent run is untrusted: whatever a chat message can talk it into (read a file, run a command) must not reach
the gateway's state, its process or another person's files. The operating system enforces it: bubblewrap where
it can run, a Unix user of the run's own where it cannot, else non-owner runs are refused.
"""

from __future__ import annotations

from pathlib import Path

from gateway.sandbox.relay import GatewayRelay
from gateway.sandbox.service import RunConfinement, Sandbox, SandboxRefused

__all__ = ["GatewayRelay", "RunConfinement", "Sandbox", "SandboxRefused", "private_paths"]


def private_paths(config_path: Path, database_url: str) -> tuple[Path, ...]:
    """The gateway's own files outside its state dir, when it was told to keep them elsewhere: the config file
    and an SQLite database with its journal files."""
    paths = [config_path]
    if database_url.startswith("sqlite"):
        db = Path(database_url.split(":///", 1)[1])
        paths += [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"),
                  db.with_name(db.name + "-journal")]
    return tuple(paths)
