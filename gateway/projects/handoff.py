"""``/handoff``: the shell command that continues this chat's conversation in the agent's CLI at the desk.

Each CLI files a conversation under its own id, which the gateway keeps per session and runtime
(``sessions.cli_sessions``), and most also by the folder it ran in: the session's project folder (or its
worktree), else one stable private path that the executor removes between turns, so the command recreates the
folder before it resumes there. A turn
taken afterwards from chat resumes the same id, so the conversation continues in the chat too (Claude Code
and Gemini CLI append to the same session file; Codex and OpenCode keep theirs in the gateway's state).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.access import Access
from gateway.agents.invocation import cli_argv
from gateway.dispatch.commands import CommandContext, command
from gateway.projects.workdir import GitError
from gateway.sessions.service import parse_key

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from gateway.agents.invocation import Desk
    from gateway.sessions.service import SessionsService

    HandoffPlace = Callable[[str], Awaitable[Desk]]
    """``AgentExecutor.handoff_place``: where and how the session's CLI is started by hand (``Desk``)."""

__all__ = ["DeskAway", "handoff", "handoff_command"]


class DeskAway(Exception):
    """The machine the session's turns run on cannot be asked now (its node is away): why."""


@command("handoff", access=Access("session", "read"),
         help="The command that continues this conversation in the agent's CLI on the machine")
async def handoff_text(ctx: CommandContext, rest: str) -> str:
    """``/handoff``: the shell line that resumes this conversation in the agent's CLI on the gateway's machine."""
    try:
        found = await handoff(ctx.sessions, ctx.replies.handoff_place, ctx.key)
    except DeskAway as exc:
        return f"Nothing to hand off now: {exc}"
    except (GitError, OSError) as exc:
        return f"The project's folder could not be prepared: {exc}"
    if found is None:
        return "Nothing to hand off yet: this conversation has no agent session (send a message first)."
    runtime, sid = found["runtime"], found["sessionId"]
    if found["command"] is None:
        return f"The {runtime} runtime cannot be resumed outside the gateway (session id {sid})."
    where = f"on node {found['node']}" if found.get("node") else "on the gateway's machine"
    return (f"Continue this conversation {where} ({runtime}, session {sid}):\n\n"
            f"{found['command']}\n\nWhat you do there is picked up here with the next message.")


async def handoff(sessions: SessionsService, place: HandoffPlace, key: str) -> dict[str, str | None] | None:
    """``{runtime, sessionId, cwd, command, node?}`` for session ``key`` (``command`` None for a runtime without a
    line; ``node``: the node its turns run on, where the line is run), or None before the CLI has a session. May
    prepare the session's project worktree, as its next turn would; raises ``GitError``/``OSError`` when that
    fails, ``DeskAway`` when the session's node cannot be asked now."""
    agent = sessions.agent(parse_key(key)[0], field="key")
    row = await sessions.get(key)
    resume_id = row.cli_session(agent.runtime) if row is not None else None
    if not resume_id:
        return None
    desk = await place(key)
    found: dict[str, str | None] = {
        "runtime": agent.runtime,
        "sessionId": resume_id,
        "cwd": str(desk.workspace),
        "command": handoff_command(agent.runtime, desk.argv or cli_argv(agent), resume_id, desk.workspace,
                                   desk.state_dir, desk.home),
    }
    if desk.node is not None:
        found["node"] = desk.node
    return found


def handoff_command(
    runtime: str, argv: list[str], resume_id: str, workspace: Path, state_dir: Path | None = None,
    home: Path | None = None,
) -> str | None:
    """A POSIX shell line resuming ``resume_id`` with the agent's CLI (``argv``), or None for an unknown runtime.

    ``state_dir`` is the session's directory that outlives runs (Codex keeps its sessions there); ``home`` the
    sandbox HOME of a session whose runs have one of their own (someone else's conversation: its CLI filed it
    there, docs/sandbox.md), set for the CLI at the desk too.
    """
    cli = shlex.join(argv)
    if home is not None and runtime != "codex":
        cli = f"HOME={shlex.quote(str(home))} {cli}"
    here = f"mkdir -p {shlex.quote(str(workspace))} && cd {shlex.quote(str(workspace))}"
    rid = shlex.quote(resume_id)
    if runtime == "claude":
        return f"{here} && {cli} --resume {rid}"
    if runtime == "gemini":
        return f"{here} && {cli} --resume {rid}"
    if runtime == "opencode":
        return f"{here} && {cli} --session {rid}"
    if runtime == "codex":
        if state_dir is None:
            return f"{here} && {cli} resume {rid}"
        # The executor gives Codex a CODEX_HOME per run whose sessions/ points at the session's state dir: make
        # one that does the same, with the desk's own login (auth.json) beside it.
        home = state_dir / "codex-home"
        q = shlex.quote
        return (
            f"mkdir -p {q(str(home))} && ln -sfn {q(str(state_dir / 'codex-sessions'))} {q(str(home / 'sessions'))}"
            f" && cp -n ~/.codex/auth.json {q(str(home))}/ 2>/dev/null; {here} && "
            f"CODEX_HOME={q(str(home))} {cli} resume {rid}"
        )
    return None
