"""The folder an agent CLI runs in, the files copied into it, and the side-effects file it leaves."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from gateway.sandbox.open_beneath import remove_tree_beneath, write_beneath

if TYPE_CHECKING:
    from gateway.runs import Run

__all__ = ["ATTACHMENTS_DIR", "copy_attachments", "own_folder", "private_dir", "read_effects", "remove_own",
           "runs_folder", "safe_name"]

log = structlog.get_logger("gateway.agents")

ATTACHMENTS_DIR = "attachments"  # inside the run's workspace


def safe_name(name: str) -> str:
    """A file name fit to be written in a run's folder: its last component only, letters, digits and ``._-``
    (anything else ``_``), no leading dot. The names the gateway gives its copies (``<id>.jpg``, an upload's
    ``<random>-<name>``) pass unchanged; what a node writes for a turn is always passed through it."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    clean = "".join(c if c.isalnum() or c in "._-" else "_" for c in base).lstrip(".")
    return clean[-200:] or "file"


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


def own_folder(workspace: Path, name: str) -> None:
    """``workspace/name`` as a 0700 folder of ours (a project's ``.remoteclaw/``). A run works in that project and
    may have left a symlink (or a file) at the name, aimed where it cannot see: it is never followed, and the turn
    is refused with a message that says so (``RuntimeError``). The end of every turn removes a link left there."""
    top = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            st = os.stat(name, dir_fd=top, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISDIR(st.st_mode):  # a link a run (or a cloned repository) put there
            log.warning("the gateway's per-run folder is a link or a file: refusing the turn", folder=str(workspace),
                        name=name, link=stat.S_ISLNK(st.st_mode))
            raise RuntimeError(f"{workspace / name} is not a directory owned by this user (a symlink or a file): "
                               "refusing to run agents in it; remove it")
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=top)
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=top)
        try:
            if os.fstat(fd).st_uid != os.getuid():
                raise RuntimeError(f"{workspace / name} is not a directory owned by this user: refusing to run "
                                   "agents in it")
            os.fchmod(fd, 0o700)
        finally:
            os.close(fd)
    finally:
        os.close(top)


def remove_own(workspace: Path, name: str) -> None:
    """Remove ``workspace/name`` and all in it, following no link the run planted there (a link goes itself)."""
    try:
        remove_tree_beneath(workspace, name)
    except OSError as exc:
        log.warning("the gateway's per-run folder not removed", folder=str(workspace / name), error=str(exc))


def copy_attachments(run: Run, workspace: Path, dest: str) -> None:
    """Copy every request's files into ``dest`` below the workspace (CLIs may read only below their working
    directory), through no link a run left on the way."""
    for source in (f for req in run.requests for f in req.files):
        try:
            data = Path(source).read_bytes()  # the gateway's own copy of an upload
            write_beneath(workspace, f"{dest}/{Path(source).name}", data, mode=0o600)
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
