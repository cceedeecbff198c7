"""``sessions.project``: switch a conversation's project from a client (the chat's ``/project <name>``);
``sessions.diff``: what the session's project changed, in OpenClaw's shape.

Chats switch with the ``/project`` command (``gateway/projects/commands.py``); the web chat and API clients
have no chat commands, so this method does the same for them. ``status {sessionKey}`` reads the project and branch
back. See docs/projects.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import Field, model_validator

from gateway.access import Access
from gateway.dispatch.dispatcher import READ, WRITE, CallContext, Params, method
from gateway.projects.commands import switch_project
from gateway.projects.diffs import EMPTY_TREE, file_entries, snapshot
from gateway.projects.workdir import GitError, branch_of, describe, git, git_toplevel
from gateway.protocol import Forbidden, InvalidRequest
from gateway.sessions.methods import check_visible, is_owner
from gateway.sessions.service import parse_key

if TYPE_CHECKING:
    from gateway.config import AgentConfig


class ProjectParams(Params):
    sessionKey: str = Field(min_length=1, max_length=512)
    project: str | None = Field(description="A name in the session's agent's projects; null: no project (a "
                                            "fresh private folder per turn).")


def open_projects(ctx: CallContext, agent: AgentConfig, session_person: str | None) -> list[str]:
    """The agent's projects this conversation may work in (``projects[].people``): its person decides; a
    conversation that is nobody's, the caller (the owner, or a person signed in). The executor holds every turn
    to the same rule, so a project switched to here is one its turns will run in."""
    who = session_person or ctx.caller.person_id
    person = ctx.people.peek(who) if who is not None else None
    owner = person.is_owner if person is not None else (session_person is None and is_owner(ctx))
    return [p.name for p in agent.projects if ctx.people.may_work_in(person, p.people, is_owner=owner)]


@method("sessions.project", access=Access("session", "write", ("sessionKey",)), params=ProjectParams, scope=WRITE)
async def sessions_project(p: ProjectParams, ctx: CallContext) -> dict[str, Any]:
    """Set the session's project; the agent starts a fresh conversation there (CLIs file sessions by folder)."""
    sessions = ctx.sessions
    key = await sessions.resolve(key=p.sessionKey)
    await check_visible(ctx, key)
    agent = sessions.agent(parse_key(key)[0], field="sessionKey")
    row = await sessions.get(key)
    names = open_projects(ctx, agent, row.person_id if row is not None else None)
    if p.project is not None and p.project not in names:
        if agent.project(p.project) is not None:
            raise Forbidden(f"project {p.project!r} is not open to this conversation (projects[].people)",
                            details={"code": "PROJECT_FORBIDDEN", "field": "project"})
        known = f"one of {', '.join(names)}" if names else f"agent {agent.id} has no projects (docs/projects.md)"
        raise InvalidRequest(f"unknown project {p.project!r}: {known}", details={"field": "project"})
    await switch_project(ctx.db, key, p.project)
    where = await describe(agent, p.project, key)
    return {"ok": True, "sessionKey": key, "project": where["project"], "projectPath": where["path"],
            "branch": where["branch"], "projects": names}


class DiffParams(Params):
    sessionKey: str = Field(min_length=1, max_length=512)
    agentId: str | None = Field(None, min_length=1)  # OpenClaw's; the session key names the agent already
    scope: Literal["all", "uncommitted", "commit"] = Field(
        "all", description="all: the session's branch since it left its base, uncommitted work included; "
                           "uncommitted: the work tree against HEAD; commit: one commit (``commit``).")
    commit: str | None = Field(None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _commit_for_commit_scope(self) -> DiffParams:
        if self.scope == "commit" and not self.commit:
            raise ValueError("commit is required with scope 'commit'")
        return self


def _unavailable(key: str, reason: str) -> dict[str, Any]:
    return {"sessionKey": key, "files": [], "additions": 0, "deletions": 0, "unavailableReason": reason}


async def _commit_ref(root: Path, ref: str) -> dict[str, str]:
    sha, _, subject = (await git(root, "log", "-1", "--format=%H%x00%s", ref)).strip().partition("\0")
    return {"sha": sha, "subject": subject}


@method("sessions.diff", access=Access("session", "read", ("sessionKey", "agentId")), params=DiffParams, scope=READ)
async def sessions_diff(p: DiffParams, ctx: CallContext) -> dict[str, Any]:
    """What the session's project holds that its base does not (OpenClaw's ``sessions.diff``): per file, with
    its patch. In a worktree project the base is the branch the repository itself has checked out."""
    key = ctx.sessions.normalize_key(p.sessionKey)
    await check_visible(ctx, key)
    row = await ctx.sessions.get(key)
    if row is None:
        return _unavailable(key, "unknown_session")
    agent = ctx.sessions.agent(row.agent_id, field="sessionKey")
    if agent.node is not None:  # its project is the node's folder: no git of the gateway's runs there
        return _unavailable(key, "not_git")
    where = await describe(agent, row.project, key)
    root = Path(where["path"]) if where["path"] else None
    if root is None or await git_toplevel(root) is None:
        return _unavailable(key, "not_git")
    out: dict[str, Any] = {"sessionKey": key, "root": str(root)}
    if where["branch"]:
        out["branch"] = where["branch"]
    try:
        if p.scope == "commit":
            assert p.commit is not None
            try:
                sha = (await git(root, "rev-parse", "--verify", "--quiet", f"{p.commit}^{{commit}}")).strip()
            except GitError:
                return {**_unavailable(key, "unknown_commit"), "root": str(root)}
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
            project = agent.project(row.project)
            in_worktree = project is not None and project.worktrees and where["path"] != project.path
            if p.scope == "all" and head and project is not None and in_worktree:
                base_ref = await branch_of(Path(project.path))
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
    except (GitError, OSError) as exc:
        raise InvalidRequest(f"git could not diff {root}: {exc}", details={"field": "sessionKey"}) from None
    out["files"] = files
    out["additions"] = sum(cast(int, f["additions"]) for f in files)
    out["deletions"] = sum(cast(int, f["deletions"]) for f in files)
    if cut:
        out["truncated"] = True
    return out
