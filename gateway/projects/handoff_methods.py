"""``sessions.handoff`` (ours): the shell line that resumes a session in its CLI on the gateway's machine.

The web chat's "At the desk" button reads it; chat apps get the same answer from ``/handoff``
(``gateway.projects.handoff``). Write scope, as sending a message: the web chat's owner may continue what it
may drive, and making the answer may prepare the session's project worktree as the next turn would.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.access import Access
from gateway.dispatch.dispatcher import WRITE, CallContext, Params, method
from gateway.projects.handoff import DeskAway, handoff
from gateway.projects.workdir import GitError
from gateway.protocol import InvalidRequest, Unavailable
from gateway.sessions.service import parse_key


class HandoffParams(Params):
    key: str = Field(min_length=1, description="The session to continue at the desk.")


@method("sessions.handoff", access=Access("session", "write", ("key",)), params=HandoffParams, scope=WRITE)
async def sessions_handoff(p: HandoffParams, ctx: CallContext) -> dict[str, Any]:
    """``{key, runtime, sessionId, cwd, command, node?}``; ``command`` is None for a runtime without a resume line;
    ``node`` names the node an agent placed on one runs on (the line is for that machine)."""
    try:
        parse_key(p.key)
    except InvalidRequest as exc:
        raise InvalidRequest(
            f"invalid key '{p.key}': expected agent:<agentId>:<name>", details={"field": "key"}
        ) from exc
    try:
        found = await handoff(ctx.sessions, ctx.agents.handoff_place, p.key)
    except DeskAway as exc:
        raise Unavailable(f"nothing to continue at the desk now: {exc}") from exc
    except (GitError, OSError) as exc:
        raise Unavailable(f"the project's folder could not be prepared: {exc}") from exc
    if found is None:
        raise InvalidRequest(f"key: nothing to continue at the desk yet: the conversation {p.key} has no agent "
                             "session until the agent has answered a message in it", details={"field": "key",
                                                                                      "code": "NO_AGENT_SESSION"})
    return {"key": p.key, **found}
