"""Where a conversation's turns run: a project folder, a git worktree of it, or (no project) a private folder.

An agent may be given several folders (``agents.list[].projects``); ``/project <name>`` stores the choice on the
session. A project with ``worktrees: true`` that is a git repository gives every conversation its own worktree on
a branch ``remoteclaw/<session-slug>``, created on first use and reused after, so two conversations on one
repository never edit the same checkout. Worktrees live beside the repository, in ``<repo>.worktrees/``: outside
the gateway's state directory (whose files may not be sent to a chat) and outside the checkout (where they would
show as untracked files).

What the gateway itself writes into a project for a run (the CLI's MCP config under ``.remoteclaw/``) is kept out
of git through the repository's ``info/exclude``, never through the project's own ``.gitignore``.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from gateway.config import AgentConfig, ProjectConfig

__all__ = ["BRANCH_PREFIX", "PRIVATE_DIR", "GitError", "Workdir", "branch_of", "describe", "ensure_excluded",
           "ensure_worktree", "filters_off", "git", "git_toplevel", "remove_worktree", "remove_worktree_in",
           "resolve_workdir", "session_slug", "shared_git_dir", "worktree_path", "worktrees_in", "worktrees_of"]

log = structlog.get_logger("gateway.agents")

BRANCH_PREFIX = "remoteclaw/"
PRIVATE_DIR = ".remoteclaw"
"""The gateway's per-run files inside a project (MCP config, attachments): removed after each run, git-excluded."""

_SLUG = re.compile(r"[^a-z0-9]+")
_REPO_LOCKS: dict[Path, asyncio.Lock] = {}  # one worktree change at a time per repository (add, prune, remove)


class GitError(Exception):
    """A git command failed; the message is git's own first line of complaint."""


@dataclass(frozen=True, slots=True)
class Workdir:
    """The folder a turn runs in and what it is."""

    path: Path
    project: str
    branch: str | None = None  # the checked-out branch, in a git project
    git: bool = False  # a git work tree: the turn's changes can be diffed
    worktree: bool = False  # a per-session worktree (not the project folder itself)


def session_slug(session_key: str) -> str:
    """A name for a session that is safe as a folder and a branch: readable part plus a hash (keys may collide
    once lower-cased and stripped)."""
    readable = _SLUG.sub("-", session_key.lower()).strip("-")[-40:].strip("-")
    digest = hashlib.sha256(session_key.encode()).hexdigest()[:8]
    return f"{readable}-{digest}" if readable else digest


async def git(cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    """Run git in ``cwd``; its stdout. Never prompts (no terminal), never pages, no user hooks' editors.

    Nothing the repository itself names is run: no hooks, no fsmonitor (and, where a command would run them,
    no filter drivers: ``filters_off``; no textconv in a diff). An agent run writes in its project, so what git
    would run from it must not run here, with the gateway's rights (docs/sandbox.md).
    """
    full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C", **(env or {})}
    proc = await asyncio.create_subprocess_exec(
        "git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args, cwd=str(cwd), env=full_env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    if check and proc.returncode != 0:
        first = next((ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()), "")
        raise GitError(first or f"git {args[0]} exited with {proc.returncode}")
    return out.decode("utf-8", "replace")


async def filters_off(cwd: Path) -> list[str]:
    """``-c`` options that switch off every filter driver the repository's config names (``filter.<name>.clean``,
    ``smudge``, ``process``): ``git add`` and a checkout would run them, and a turn may have written them into the
    repository's config, with a ``.gitattributes`` that applies them. They go before git's sub-command."""
    listed = await git(cwd, "config", "--name-only", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$",
                       check=False)
    out: list[str] = []
    for driver in sorted({line.rsplit(".", 1)[0] for line in listed.splitlines() if line.startswith("filter.")}):
        out += ["-c", f"{driver}.clean=", "-c", f"{driver}.smudge=", "-c", f"{driver}.process=",
                "-c", f"{driver}.required=false"]
    return out


async def git_toplevel(path: Path) -> Path | None:
    """The root of the git work tree ``path`` is in, or None outside git (or without git installed)."""
    try:
        out = await git(path, "rev-parse", "--show-toplevel")
    except (GitError, OSError):
        return None
    return Path(out.strip()) if out.strip() else None


async def branch_of(path: Path) -> str | None:
    """The branch checked out in ``path`` (None when detached or not git)."""
    try:
        name = (await git(path, "symbolic-ref", "--quiet", "--short", "HEAD")).strip()
    except (GitError, OSError):
        return None
    return name or None


async def ensure_excluded(path: Path, pattern: str = f"/{PRIVATE_DIR}/") -> None:
    """Add ``pattern`` to the repository's ``info/exclude`` (shared by its worktrees) unless it is there."""
    exclude = Path((await git(path, "rev-parse", "--git-common-dir")).strip())
    if not exclude.is_absolute():
        exclude = (path / exclude).resolve()
    exclude = exclude / "info" / "exclude"
    try:
        lines = exclude.read_text().splitlines()
    except OSError:
        lines = []
    if pattern in lines:
        return
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a") as fh:
        fh.write(("\n" if lines and lines[-1] else "") + f"# remoteclaw's per-run files\n{pattern}\n")


def shared_git_dir(worktree: Path) -> Path | None:
    """The repository's own ``.git`` that a worktree's ``.git`` file points into (where its commits go)."""
    try:
        text = (worktree / ".git").read_text()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    own = Path(text.split(":", 1)[1].strip())  # <repo>/.git/worktrees/<name>
    own = own if own.is_absolute() else worktree / own
    return own.parent.parent if own.parent.name == "worktrees" else None


def worktree_path(repo: Path, session_key: str) -> Path:
    """Where the session's worktree of ``repo`` lives: ``<repo>.worktrees/<session-slug>`` beside it."""
    return repo.parent / f"{repo.name}.worktrees" / session_slug(session_key)


async def ensure_worktree(repo: Path, session_key: str) -> tuple[Path, str]:
    """The session's worktree and branch, created on first use (``git worktree add``), reused after (by the
    gateway for its own projects, by a node for the projects of an agent placed on it: ``nodes.agents``)."""
    path = worktree_path(repo, session_key)
    branch = BRANCH_PREFIX + session_slug(session_key)
    if (path / ".git").exists():
        return path, (await branch_of(path)) or branch
    async with _REPO_LOCKS.setdefault(repo, asyncio.Lock()):  # a prune must not meet another session's add
        return await _add_worktree(repo, path, branch, session_key)


async def _add_worktree(repo: Path, path: Path, branch: str, session_key: str) -> tuple[Path, str]:
    await git(repo, "worktree", "prune")  # a worktree folder deleted by hand leaves a stale entry behind
    path.parent.mkdir(parents=True, exist_ok=True)
    has_branch = (await git(repo, "branch", "--list", branch)).strip() != ""
    off = await filters_off(repo)  # the checkout would run the repository's smudge filters
    if has_branch:  # the folder went away but the branch (and its commits) stayed: check it out again
        await git(repo, *off, "worktree", "add", str(path), branch)
    else:
        await git(repo, *off, "worktree", "add", "-b", branch, str(path))
    log.info("worktree created", repo=str(repo), path=str(path), branch=branch, session_key=session_key)
    return path, branch


async def resolve_workdir(agent: AgentConfig, project_name: str | None, session_key: str) -> Workdir | None:
    """The session's working folder, or None for no project (the caller uses a private temporary folder).

    Raises ``GitError`` when a worktree cannot be made (e.g. a repository without a first commit)."""
    project = agent.project(project_name)
    if project is None:
        return None
    return await _workdir(project, session_key)


async def _workdir(project: ProjectConfig, session_key: str) -> Workdir:
    folder = Path(project.path)
    top = await git_toplevel(folder)
    if top is None:
        return Workdir(path=folder, project=project.name)
    if project.worktrees:
        path, branch = await ensure_worktree(top, session_key)
        await ensure_excluded(path)
        return Workdir(path=path, project=project.name, branch=branch, git=True, worktree=True)
    await ensure_excluded(folder)
    return Workdir(path=folder, project=project.name, branch=await branch_of(folder), git=True)


async def describe(agent: AgentConfig, project_name: str | None, session_key: str) -> dict[str, str | None]:
    """``{project, path, branch}`` of a session for ``/status`` and the web chat header, without creating a
    worktree (before its first turn: where the worktree will be, and its branch)."""
    project = agent.project(project_name)
    if project is None:
        return {"project": None, "path": None, "branch": None}
    if agent.node is not None:  # a folder on the node: only the node runs git there (``/project`` asks it)
        return {"project": project.name, "path": project.path, "branch": None}
    folder = Path(project.path)
    top = await git_toplevel(folder)
    if top is not None and project.worktrees:
        tree = worktree_path(top, session_key)
        if not (tree / ".git").exists():
            return {"project": project.name, "path": str(tree), "branch": BRANCH_PREFIX + session_slug(session_key)}
        folder = tree
    return {"project": project.name, "path": str(folder), "branch": await branch_of(folder) if top else None}


async def worktrees_of(project: ProjectConfig) -> list[tuple[Path, str]]:
    """The conversations' worktrees of a project: ``(path, branch)`` for each on a ``remoteclaw/`` branch."""
    return await worktrees_in(Path(project.path))


async def worktrees_in(folder: Path) -> list[tuple[Path, str]]:
    """The conversations' worktrees of the repository ``folder`` is in (here, or on a node for its projects)."""
    top = await git_toplevel(folder)
    if top is None:
        return []
    out: list[tuple[Path, str]] = []
    path: Path | None = None
    for line in (await git(top, "worktree", "list", "--porcelain")).splitlines():
        if line.startswith("worktree "):
            path = Path(line[len("worktree "):])
        elif line.startswith("branch refs/heads/") and path is not None:
            branch = line[len("branch refs/heads/"):]
            if branch.startswith(BRANCH_PREFIX):
                out.append((path, branch))
    return out


async def remove_worktree(project: ProjectConfig, session_key: str) -> Path | None:
    """Remove the session's worktree of ``project`` (git refuses one with uncommitted changes: ``GitError``);
    the branch and its commits stay. None when the session has none."""
    return await remove_worktree_in(Path(project.path), session_key)


async def remove_worktree_in(folder: Path, session_key: str) -> Path | None:
    """``remove_worktree`` for the repository ``folder`` is in."""
    top = await git_toplevel(folder)
    if top is None:
        return None
    path = worktree_path(top, session_key)
    if not (path / ".git").exists():
        return None
    async with _REPO_LOCKS.setdefault(top, asyncio.Lock()):
        await git(top, *await filters_off(top), "worktree", "remove", str(path))  # its status check runs filters
    return path
