"""``sessions.project``: switch a conversation's project from a client (the chat's ``/project <name>``);
``sessions.diff``: what the session's project changed, in OpenClaw's shape.

Chats switch with the ``/project`` command (``gateway/projects/commands.py``); the web chat and API clients
have no chat commands, so this method does the same for them. ``status {sessionKey}`` reads the project and branch
back. See docs/projects.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from gateway.access import Access
from gateway.composition.ports import AGENT_HOSTS
from gateway.dispatch.dispatcher import READ, WRITE, CallContext, Params, method
from gateway.projects.commands import switch_project
from gateway.projects.diffs import session_diff, unavailable
from gateway.projects.workdir import GitError, describe, git_toplevel
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


async def project_place(ctx: CallContext, agent: AgentConfig, project: str | None, key: str) -> dict[str, Any]:
    """``{project, path, branch}`` of the session's project as its turns see it: on the gateway's machine, or on
    the agent's node as that node describes it (the conversation's worktree there; ``note`` while it is away)."""
    hosts = ctx.services.find(AGENT_HOSTS) if agent.node is not None else None
    if hosts is not None:
        return dict(await hosts.describe(agent, project, key))
    return dict(await describe(agent, project, key))


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
    where = await project_place(ctx, agent, p.project, key)
    if where.get("refused"):  # a folder the agent's node does not lend: its turns would be refused there
        raise InvalidRequest(f"project {p.project!r} cannot be used on node {agent.node}: {where['refused']}",
                             details={"field": "project"})
    await switch_project(ctx.db, key, p.project)
    out = {"ok": True, "sessionKey": key, "project": where["project"], "projectPath": where["path"],
           "branch": where["branch"], "projects": names}
    if agent.node is not None:
        out["node"] = agent.node
    return out


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
    return {"sessionKey": key, **unavailable(reason)}


async def _node_diff(ctx: CallContext, agent: AgentConfig, project: str | None, key: str,
                     p: DiffParams) -> dict[str, Any]:
    """``sessions.diff`` of a session whose agent is on a node: the node diffs its folder (``agent.project``'s
    ``sessionDiff``), as the gateway diffs its own."""
    hosts = ctx.services.find(AGENT_HOSTS)
    if hosts is None or agent.project(project) is None:
        return _unavailable(key, "not_git")
    where = await hosts.describe(agent, project, key, "sessionDiff", {"scope": p.scope, "commit": p.commit})
    if where.get("refused") or where.get("note"):
        why = where.get("refused") or where.get("note")
        return {**_unavailable(key, "node_unavailable" if where.get("note") else "not_git"), "message": why}
    found = where.get("sessionDiff")
    if not isinstance(found, dict):
        return _unavailable(key, "not_git")
    out = {"sessionKey": key, "root": where["path"], "node": agent.node, **found}
    if where.get("branch") and "unavailableReason" not in found:
        out.setdefault("branch", where["branch"])
    return out


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
    if agent.node is not None:  # its project is a folder on the node: the node runs git there, not the gateway
        return await _node_diff(ctx, agent, row.project, key, p)
    where = await describe(agent, row.project, key)
    root = Path(where["path"]) if where["path"] else None
    if root is None or await git_toplevel(root) is None:
        return _unavailable(key, "not_git")
    project = agent.project(row.project)
    base = Path(project.path) if project is not None and project.worktrees and where["path"] != project.path else None
    try:
        found = await session_diff(root, scope=p.scope, commit=p.commit, base_of=base)
    except (GitError, OSError) as exc:
        raise InvalidRequest(f"git could not diff {root}: {exc}", details={"field": "sessionKey"}) from None
    if where["branch"] and "unavailableReason" not in found:
        found = {"branch": where["branch"], **found}
    return {"sessionKey": key, "root": str(root), **found}
