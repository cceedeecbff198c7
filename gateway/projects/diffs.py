"""What a turn changed in a git project: a snapshot of the work tree before and after, and the diff between.

A snapshot is the tree object of the whole work tree as it stands, untracked files included (ignored ones
not): the repository's index is copied to a temporary index file, ``git add -A`` fills it, ``git write-tree``
names it. Neither the user's index nor the stash nor any ref is touched, so a turn may leave half-staged work
exactly as it was; the only trace is a few loose objects that ``git gc`` collects. Comparing the two trees
gives the turn's own change even when the work tree was already dirty before it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from gateway.paths import OUTBOUND, outbound_dir, outbound_session
from gateway.projects.workdir import GitError, branch_of, filters_off, git, session_slug

__all__ = ["EMPTY_TREE", "Diff", "diff_trees", "file_entries", "last_diff", "save_diff", "session_diff", "snapshot",
           "unavailable", "uncommitted"]

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""git's well-known id of the empty tree: the "before" of a repository without a commit."""


@dataclass(frozen=True, slots=True)
class Diff:
    text: str  # unified diff, as ``git diff`` prints it (binary files as one line)
    files: int
    added: int
    removed: int

    @property
    def empty(self) -> bool:
        return self.files == 0

    def summary(self) -> str:
        """``3 files changed, +40 -7`` (with a true minus sign): one line for the end of a reply."""
        noun = "file" if self.files == 1 else "files"
        return f"{self.files} {noun} changed, +{self.added} \N{MINUS SIGN}{self.removed}"


async def snapshot(path: Path) -> str:
    """The tree id of ``path``'s work tree now, untracked files included (``GitError`` if git fails)."""
    index = Path((await git(path, "rev-parse", "--git-path", "index")).strip())
    if not index.is_absolute():
        index = path / index
    fd, tmp = tempfile.mkstemp(prefix="remoteclaw-index-")
    os.close(fd)
    try:
        if index.is_file():  # a copy keeps git's stat cache: only changed files are hashed again
            shutil.copyfile(index, tmp)
        else:
            os.unlink(tmp)  # no index yet (fresh repository): git makes one
        env = {"GIT_INDEX_FILE": tmp}
        off = await filters_off(path)  # no filter driver of the repository's runs (add and write-tree run them)
        await git(path, *off, "add", "-A", "--", ".", env=env)
        return (await git(path, *off, "write-tree", env=env)).strip()
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


async def diff_trees(path: Path, before: str, after: str) -> Diff:
    """The change from tree ``before`` to tree ``after``, with its line counts (binary files count 0 lines)."""
    if before == after:
        return Diff(text="", files=0, added=0, removed=0)
    off = await filters_off(path)
    numstat = await git(path, *off, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--numstat", "-M",
                        before, after)
    files = added = removed = 0
    for line in numstat.splitlines():
        parts = line.split("\t", 2)
        if len(parts) < 3:
            continue
        files += 1
        added += int(parts[0]) if parts[0].isdigit() else 0
        removed += int(parts[1]) if parts[1].isdigit() else 0
    text = await git(path, *off, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", before, after)
    return Diff(text=text, files=files, added=added, removed=removed)


_STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "added", "T": "modified"}


async def file_entries(path: Path, before: str, after: str, *, untracked: frozenset[str] = frozenset(),
                       max_patch: int = 200_000) -> tuple[list[dict[str, object]], bool]:
    """Per changed file, OpenClaw's ``sessions.diff`` entry: ``{path, oldPath?, status, additions, deletions,
    binary?, untracked?, patch?, truncated?}``; and whether any patch was cut to fit ``max_patch`` in all."""
    if before == after:
        return [], False
    opts = ("--no-color", "--no-ext-diff", "--no-textconv", "-M", "-z")
    off = await filters_off(path)
    status = (await git(path, *off, "diff", "--name-status", *opts, before, after)).split("\0")
    numstat = (await git(path, *off, "diff", "--numstat", *opts, before, after)).split("\0")
    counts: dict[str, tuple[int | None, int | None]] = {}
    i = 0
    while i < len(numstat) and numstat[i]:  # "<add>\t<del>\t<path>" or, renamed, "<add>\t<del>\t" old new
        add, dele, name = numstat[i].split("\t", 2)
        if not name:
            name, i = numstat[i + 2], i + 2
        counts[name] = (int(add) if add.isdigit() else None, int(dele) if dele.isdigit() else None)
        i += 1
    entries: list[dict[str, object]] = []
    i = 0
    while i + 1 < len(status) and status[i]:
        code = status[i][0]
        if code in "RC":
            entry: dict[str, object] = {"path": status[i + 2], "oldPath": status[i + 1]}
            i += 3
        else:
            entry = {"path": status[i + 1]}
            i += 2
        plus, minus = counts.get(str(entry["path"]), (0, 0))
        entry.update(status=_STATUS.get(code, "modified"), additions=plus or 0, deletions=minus or 0)
        if plus is None:
            entry["binary"] = True
        if entry["path"] in untracked:
            entry["untracked"] = True
        entries.append(entry)
    budget, cut = max_patch, False
    for entry in entries:
        if budget <= 0:
            entry["truncated"] = cut = True
            continue
        names = [str(entry["path"])] + ([str(entry["oldPath"])] if "oldPath" in entry else [])
        patch = await git(path, *off, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", before, after,
                          "--", *names)
        if len(patch) > budget:
            patch, entry["truncated"], cut = patch[:budget], True, True
        entry["patch"] = patch
        budget -= len(patch)
    return entries, cut


def unavailable(reason: str) -> dict[str, Any]:
    """``sessions.diff``'s answer when there is nothing to diff (OpenClaw's ``unavailableReason``)."""
    return {"files": [], "additions": 0, "deletions": 0, "unavailableReason": reason}


async def _commit_ref(root: Path, ref: str) -> dict[str, str]:
    sha, _, subject = (await git(root, "log", "-1", "--format=%H%x00%s", ref)).strip().partition("\0")
    return {"sha": sha, "subject": subject}


async def session_diff(root: Path, *, scope: str, commit: str | None, base_of: Path | None) -> dict[str, Any]:
    """What ``root`` holds that its base does not, in the shape of OpenClaw's ``sessions.diff`` (without the session's
    key and root): ``all`` (since the branch left the branch ``base_of`` has checked out, when ``root`` is a
    conversation's worktree of that repository, uncommitted work included), ``uncommitted`` (against HEAD) or one
    ``commit``. The gateway runs it on its own folders, a node on the folders it lends. Raises ``GitError``."""
    out: dict[str, Any] = {}
    if scope == "commit":
        try:
            sha = (await git(root, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")).strip()
        except GitError:
            return unavailable("unknown_commit")
        parents = (await git(root, "rev-list", "--parents", "-n", "1", sha)).split()
        before = f"{parents[1]}^{{tree}}" if len(parents) > 1 else EMPTY_TREE
        after = f"{sha}^{{tree}}"
        untracked: frozenset[str] = frozenset()
    else:
        after = await snapshot(root)
        listed = await git(root, "ls-files", "--others", "--exclude-standard", "-z")
        untracked = frozenset(n for n in listed.split("\0") if n)
        try:
            head = (await git(root, "rev-parse", "--verify", "--quiet", "HEAD")).strip()
        except GitError:
            head = ""
        before = f"{head}^{{tree}}" if head else EMPTY_TREE
        base_ref = await branch_of(base_of) if scope == "all" and head and base_of is not None else None
        if base_ref:
            base = (await git(root, "merge-base", "HEAD", base_ref)).strip()
            before = f"{base}^{{tree}}"
            log = await git(root, "log", "--max-count=50", "--format=%H%x00%s", f"{base}..HEAD")
            out["baseRef"] = base_ref
            out["aheadCount"] = int((await git(root, "rev-list", "--count", f"{base}..HEAD")).strip())
            out["commits"] = [{"sha": sha, "subject": subject} for sha, _, subject in
                              (line.partition("\0") for line in log.splitlines() if line)]
            out["mergeBase"] = await _commit_ref(root, base)
    files, cut = await file_entries(root, before, after, untracked=untracked)
    out["files"] = files
    out["additions"] = sum(cast(int, f["additions"]) for f in files)
    out["deletions"] = sum(cast(int, f["deletions"]) for f in files)
    if cut:
        out["truncated"] = True
    return out


async def uncommitted(path: Path) -> Diff:
    """Everything not committed in ``path``: the work tree (untracked files included) against HEAD."""
    try:
        head = (await git(path, "rev-parse", "--verify", "--quiet", "HEAD^{tree}")).strip()
    except GitError:
        head = EMPTY_TREE
    return await diff_trees(path, head or EMPTY_TREE, await snapshot(path))


def _diff_dir(state_dir: Path, session_key: str) -> Path:
    """``<state>/outbound/diffs/<session>``: in the one state folder whose files may be sent to a chat, in the
    session's own folder (a run may send only its own session's)."""
    return outbound_dir(state_dir, "diffs", session_key)


def _turn_of(path: Path) -> int:
    number = path.stem.rsplit("-", 1)[-1]
    return int(number) if number.isdigit() else 0


def save_diff(state_dir: Path, session_key: str, diff: Diff, *, name: str | None = None) -> Path:
    """Keep a turn's diff as ``<random>-<session-slug>-<turn>.diff`` (turns of the session counted from 1), or
    another diff as ``<random>-<session-slug>-<name>.diff``: 64 random bits, so no name is guessed."""
    folder = _diff_dir(state_dir, session_key)
    if name is None:
        name = str(max((_turn_of(p) for p in folder.glob("*.diff")), default=0) + 1)
    slug = session_slug(session_key)
    for old in folder.glob(f"*-{slug}-{name}.diff"):  # a named diff (``uncommitted``) is replaced, not piled up
        old.unlink(missing_ok=True)
    path = folder / f"{secrets.token_hex(8)}-{slug}-{name}.diff"
    path.write_text(diff.text)
    return path


def last_diff(state_dir: Path, session_key: str) -> Path | None:
    """The newest saved turn diff of the session, if any turn changed files."""
    folder = state_dir / OUTBOUND / "diffs" / outbound_session(session_key)
    turns = [p for p in folder.glob("*.diff") if _turn_of(p)] if folder.is_dir() else []
    return max(turns, key=_turn_of, default=None)
