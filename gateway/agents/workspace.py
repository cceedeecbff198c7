"""The folder an agent CLI runs in, the files copied into it, and the side-effects file it leaves."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import structlog

if TYPE_CHECKING:
    from gateway.runs import Run

__all__ = ["ATTACHMENTS_DIR", "copy_attachments", "private_dir", "read_effects", "runs_folder"]

log = structlog.get_logger("gateway.agents")

ATTACHMENTS_DIR = "attachments"  # inside the run's workspace


def runs_folder(state_dir: Path) -> Path:
    """Where this gateway's runs work: one folder per state dir in the temp dir, since two gateways on one
    machine may hold the same session key and each removes its workspaces after every turn."""
    state_id = hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "remoteclaw-runs" / state_id


def private_dir(path: Path) -> None:
    """Make ``path`` a 0700 directory of ours; refuse one another user owns (the temp dir is shared)."""
    path.mkdir(mode=0o700, exist_ok=True)
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise RuntimeError(f"{path} is not a directory owned by this user: refusing to run agents in it")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


def copy_attachments(run: Run, dest: Path) -> None:
    """Copy every request's files into the workspace (CLIs may read only below their working directory)."""
    for source in (f for req in run.requests for f in req.files):
        try:
            dest.mkdir(mode=0o700, exist_ok=True)
            shutil.copyfile(source, dest / Path(source).name)
        except OSError as exc:
            log.warning("attachment not copied into the workspace", run_id=run.id, file=source, error=str(exc))


def read_effects(path: Path) -> list[dict[str, Any]]:
    """The side-effect records the run's shim appended (one JSON object a line; bad lines skipped)."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out
