"""``sessions.project``: switch a conversation's project from a client (the chat's ``/project <name>``).

Chats switch with the ``/project`` command (``gateway/agents/project_commands.py``); the web chat and API clients
have no chat commands, so this method does the same for them. ``status {sessionKey}`` reads the project and branch
back. See docs/projects.md.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.agents.project_commands import switch_project
from gateway.agents.projects import describe
from gateway.methods.sessions import check_visible
from gateway.protocol import InvalidRequest
from gateway.rpc import WRITE, CallContext, Params, method
from gateway.sessions import parse_key


class ProjectParams(Params):
    sessionKey: str = Field(min_length=1, max_length=512)
    project: str | None = Field(description="A name in the session's agent's projects; null: no project (a "
                                            "fresh private folder per turn).")


@method("sessions.project", params=ProjectParams, scope=WRITE)
async def sessions_project(p: ProjectParams, ctx: CallContext) -> dict[str, Any]:
    """Set the session's project; the agent starts a fresh conversation there (CLIs file sessions by folder)."""
    sessions = ctx.gateway.sessions
    key = await sessions.resolve(key=p.sessionKey)
    await check_visible(ctx, key)
    agent = sessions.agent(parse_key(key)[0], field="sessionKey")
    names = [proj.name for proj in agent.projects]
    if p.project is not None and agent.project(p.project) is None:
        known = f"one of {', '.join(names)}" if names else f"agent {agent.id} has no projects (docs/projects.md)"
        raise InvalidRequest(f"unknown project {p.project!r}: {known}", details={"field": "project"})
    await switch_project(ctx.gateway, key, p.project)
    where = await describe(agent, p.project, key)
    return {"ok": True, "sessionKey": key, "project": where["project"], "projectPath": where["path"],
            "branch": where["branch"], "projects": names}
