"""Project folders on this node: an agent placed here may have ``projects`` whose paths are this machine's.

The gateway asks where a session works (``agent.project``) and sends the same ``project`` block with the turn
(``agent.run``); the answer is worked out here, by the gateway's own helpers (``gateway.projects.workdir``,
``gateway.projects.diffs``) run on this machine: the folder itself, or, with ``worktrees``, the session's git
worktree beside the repository (``<repo>.worktrees/<slug>``, branch ``remoteclaw/<slug>``), made on first use and
reused after; the snapshots before and after the turn and the diff between them are taken here too, and only the
diff's text goes back.

Every path is checked against what the node's owner lends: the project folder, its repository's top, the
worktree and the repository's git folder must be inside a lent folder, and nothing below a lent folder may be a
symlink on the way (a lent folder that is itself a link is the owner's choice and is followed; a link inside one,
made by a turn or a checkout, is not).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodes.errors import CommandError

__all__ = ["ACTIONS", "MAX_DIFF_CHARS", "ProjectAsk", "Resolved", "act", "diff_since", "lent_path", "parse_project",
           "resolve", "snapshot_of"]

MAX_DIFF_CHARS = 1_000_000
"""A turn's diff text sent back at most (the rest cut, and said so)."""
MAX_KEY = 512
ACTIONS = ("describe", "prepare", "uncommitted", "sessionDiff", "worktrees", "remove")
DIFF_SCOPES = ("all", "uncommitted", "commit")


@dataclass(frozen=True, slots=True)
class ProjectAsk:
    """The gateway's ``project`` block: the project's folder here, whether it wants a worktree, and for which
    session (its slug names the worktree and the branch)."""

    path: Path
    worktrees: bool
    session_key: str


@dataclass(frozen=True, slots=True)
class Resolved:
    """Where the session's turns run in that project."""

    path: Path
    branch: str | None
    git: bool
    worktree: bool
    git_dir: Path | None = None
    """A worktree's repository git folder (its commits go there): writable in the turn's sandbox."""
    exists: bool = True
    """False when only described: the worktree is made at the first turn."""

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "branch": self.branch, "git": self.git, "worktree": self.worktree,
                "exists": self.exists}


def parse_project(value: Any, command: str) -> ProjectAsk:
    """The ``project`` block of ``command``, with errors naming the field."""
    if not isinstance(value, dict):
        raise CommandError("INVALID_REQUEST", f"{command}: project must be an object {{path, worktrees, sessionKey}}")
    path, worktrees, key = value.get("path"), value.get("worktrees", False), value.get("sessionKey")
    if not isinstance(path, str) or not path.startswith("/") or ".." in Path(path).parts:
        raise CommandError("INVALID_REQUEST", f"{command}: project.path must be an absolute folder on this node")
    if not isinstance(worktrees, bool):
        raise CommandError("INVALID_REQUEST", f"{command}: project.worktrees must be true or false")
    if not isinstance(key, str) or not key or len(key) > MAX_KEY:
        raise CommandError("INVALID_REQUEST", f"{command}: project.sessionKey must be the session's key")
    return ProjectAsk(Path(path), worktrees, key)


def lent_path(path: Path, folders: list[str]) -> Path | None:
    """``path`` as it lies in a lent folder (named the way the owner lent it), or None when it is not in one or
    something below the lent folder is a symlink. ``path`` need not exist (a worktree before it is made)."""
    real = Path(os.path.realpath(path))
    for folder in folders:
        root = Path(folder)
        real_root = Path(os.path.realpath(root))
        for base in (root, real_root):  # git names folders by their real path; the gateway by the lent one
            if path == base or base in path.parents:
                rel = path.relative_to(base)
                if real == real_root / rel:  # no link below the lent folder on the way
                    return root / rel
    return None


def _refuse(what: str, path: Path, folders: list[str]) -> CommandError:
    return CommandError("FORBIDDEN", f"{what} {path} is not in a folder this node lends (or a symlink leads out "
                                     f"of one; it lends: {', '.join(folders) or 'none'}; remoteclaw node agents set "
                                     "folders ...)")


async def resolve(ask: ProjectAsk, folders: list[str], *, create: bool) -> Resolved:
    """The session's folder in the project: checked against ``folders``, its worktree made when ``create``."""
    from gateway.projects import workdir as projects

    folder = lent_path(ask.path, folders)
    if folder is None:
        raise _refuse("the project folder", ask.path, folders)
    if not folder.is_dir():
        raise CommandError("INVALID_REQUEST", f"the project folder {folder} is not a folder on this node")
    top_real = await projects.git_toplevel(folder)
    if top_real is None:
        return Resolved(path=folder, branch=None, git=False, worktree=False)
    top = lent_path(top_real, folders)
    if top is None:
        raise _refuse(f"the git repository {top_real} of the project", top_real, folders)
    common = await _common_dir(top)
    if lent_path(common, folders) is None:
        raise _refuse(f"the git folder {common} of the project", common, folders)
    if not ask.worktrees:
        if create:
            await projects.ensure_excluded(top)
        return Resolved(path=folder, branch=await projects.branch_of(folder), git=True, worktree=False)
    tree = projects.worktree_path(top, ask.session_key)
    if lent_path(tree, folders) is None:
        if lent_path(top.parent, folders) is None:
            raise CommandError("FORBIDDEN", f"the worktree {tree} would be outside the folders this node lends (it "
                                            f"sits beside the repository: lend {top.parent}, not only {top})")
        raise _refuse("the worktree", tree, folders)
    if not (tree / ".git").exists():
        if not create:
            return Resolved(path=tree, branch=projects.BRANCH_PREFIX + projects.session_slug(ask.session_key),
                            git=True, worktree=True, exists=False)
        try:
            tree, branch = await projects.ensure_worktree(top, ask.session_key)
        except (projects.GitError, OSError) as exc:
            raise CommandError("UNAVAILABLE", f"the worktree could not be made in {top}: {exc}") from None
    else:
        branch = (await projects.branch_of(tree)) or projects.BRANCH_PREFIX + projects.session_slug(ask.session_key)
    if lent_path(tree, folders) is None:  # made, or found: still no link on the way
        raise _refuse("the worktree", tree, folders)
    git_dir = projects.shared_git_dir(tree)
    if git_dir is not None and lent_path(git_dir, folders) is None:
        raise _refuse("the worktree's git folder", git_dir, folders)
    if create:
        await projects.ensure_excluded(tree)
    return Resolved(path=tree, branch=branch, git=True, worktree=True, git_dir=git_dir)


async def _common_dir(top: Path) -> Path:
    from gateway.projects import workdir as projects

    common = Path((await projects.git(top, "rev-parse", "--git-common-dir")).strip())
    return common if common.is_absolute() else top / common  # a link or .. on the way: lent_path refuses it


async def snapshot_of(where: Resolved) -> str | None:
    """The work tree's snapshot before a turn (None outside git, or when git fails: then no diff)."""
    from gateway.projects import diffs
    from gateway.projects import workdir as projects

    if not where.git:
        return None
    try:
        return await diffs.snapshot(where.path)
    except (projects.GitError, OSError):
        return None


async def diff_since(where: Resolved, before: str | None) -> dict[str, Any] | None:
    """What the turn changed since ``before``: ``{text, files, added, removed, cut}``, or None (nothing, or no
    snapshot)."""
    from gateway.projects import diffs
    from gateway.projects import workdir as projects

    if before is None:
        return None
    try:
        diff = await diffs.diff_trees(where.path, before, await diffs.snapshot(where.path))
    except (projects.GitError, OSError):
        return None
    return _diff_json(diff)


def _diff_json(diff: Any) -> dict[str, Any] | None:
    if diff.empty:
        return None
    cut = len(diff.text) > MAX_DIFF_CHARS
    return {"text": diff.text[:MAX_DIFF_CHARS] + ("\n… (cut)\n" if cut else ""), "files": diff.files,
            "added": diff.added, "removed": diff.removed, "cut": cut}


def diff_ask(params: dict[str, Any]) -> tuple[str, str | None]:
    """``sessionDiff``'s ``scope`` and ``commit``, with errors naming the field."""
    scope, commit = params.get("scope", "all"), params.get("commit")
    if scope not in DIFF_SCOPES:
        raise CommandError("INVALID_REQUEST", f"agent.project: scope must be one of {', '.join(DIFF_SCOPES)}")
    if commit is not None and (not isinstance(commit, str) or not 0 < len(commit) <= 200):
        raise CommandError("INVALID_REQUEST", "agent.project: commit must be a commit's name (at most 200 chars)")
    if scope == "commit" and commit is None:
        raise CommandError("INVALID_REQUEST", "agent.project: commit is required with scope 'commit'")
    return scope, commit


async def act(action: str, ask: ProjectAsk, folders: list[str],
              diff: tuple[str, str | None] = ("all", None)) -> dict[str, Any]:
    """``agent.project``'s answer: ``describe`` (nothing made), ``prepare`` (the worktree made), ``uncommitted``
    (everything not committed there now, as a diff), ``sessionDiff`` (``sessions.diff``'s answer for ``diff``'s
    scope and commit, as the gateway gives it for its own folders), ``worktrees`` (the conversations' worktrees of
    the repository), ``remove`` (this session's worktree; git refuses one with uncommitted changes)."""
    from gateway.projects import diffs
    from gateway.projects import workdir as projects

    where = await resolve(ask, folders, create=action == "prepare")
    out = where.to_json()
    if action == "sessionDiff":
        if not where.git or not where.exists:
            out["sessionDiff"] = diffs.unavailable("not_git")
            return out
        try:
            out["sessionDiff"] = await diffs.session_diff(where.path, scope=diff[0], commit=diff[1],
                                                          base_of=ask.path if where.worktree else None)
        except (projects.GitError, OSError) as exc:
            out["refused"] = f"git could not diff {where.path}: {exc}"
    elif action == "uncommitted" and where.git and where.exists:
        try:
            out["diff"] = _diff_json(await diffs.uncommitted(where.path))
        except (projects.GitError, OSError) as exc:
            out["refused"] = str(exc)
    elif action == "worktrees" and where.git:
        trees = await projects.worktrees_in(ask.path)
        out["worktrees"] = [{"path": str(path), "branch": branch} for path, branch in trees]
    elif action == "remove" and where.worktree:
        try:
            removed = await projects.remove_worktree_in(ask.path, ask.session_key) if where.exists else None
        except (projects.GitError, OSError) as exc:
            out["refused"] = str(exc)
        else:
            out["removed"] = str(removed) if removed is not None else None
    return out
