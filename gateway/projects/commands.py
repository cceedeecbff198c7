"""``/project`` and ``/diff``: which folder a conversation works in, and what the agent changed there.

``/project`` lists the agent's projects (the current one marked), ``/project <name>`` switches, ``/project none``
goes back to a private folder per turn, ``/project worktrees`` lists the conversations' worktrees of the current
project and ``/project remove`` removes this conversation's one (git refuses while it has uncommitted changes).
Switching starts a fresh agent conversation: the CLIs file their sessions by working directory, so the old one
could not be resumed in the new folder anyway.

``/diff`` sends the last turn's diff again; ``/diff all`` everything not committed in the project now.

For an agent placed on a node (``agents.list[].node``) the projects are the node's folders: ``/project`` asks the
node where the session works (``AgentHosts.describe``) and refuses a folder it does not lend; the diffs are made
there, with the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.access import Access
from gateway.agents.strangers import strangers_conversation
from gateway.dispatch.commands import CommandContext, command
from gateway.projects import diffs
from gateway.projects import workdir as projects
from gateway.sessions.service import parse_key
from gateway.sessions.store import SessionRepo

if TYPE_CHECKING:
    from gateway.config import AgentConfig, ProjectConfig
    from gateway.runs import Origin
    from gateway.store import Database

SendFile = Callable[["Origin", Path, str], Awaitable[bool]]
"""``AgentExecutor.send_file``: a file the gateway made, attached in the chat behind an origin."""
Describe = Callable[..., Awaitable[dict[str, Any]]]
"""Where a session works in a project, ``(agent, project name, session key)``: ``projects.describe`` here,
``AgentHosts.describe`` on a node (which takes an ``action`` too: ``worktrees``, ``remove``, ``uncommitted``)."""
OpenTo = Callable[["ProjectConfig"], bool]
"""Whether the conversation asking may work in a project (``PeopleService.may_work_in`` for its person)."""


def _everyone(_project: ProjectConfig) -> bool:
    return True

__all__ = ["answer_diff", "answer_project", "no_projects_text", "switch_project"]


@command("project", access=Access("session", "write"),
         help="List the projects, or switch this conversation to one: /project <name>")
async def project_command(ctx: CommandContext, rest: str) -> str:
    """The projects offered are the session's agent's that are open to the sender (``projects[].people``)."""
    agent = ctx.sessions.agent(parse_key(ctx.key)[0])
    people, person = ctx.people, ctx.person

    def open_to(project: ProjectConfig) -> bool:
        if strangers_conversation(is_owner=ctx.is_owner, person_id=person.id if person is not None else None,
                                  chat_type=ctx.origin.chat_type):
            return False  # a project folder is someone's checkout: never a stranger's to work in
        return people is None or people.may_work_in(person, project.people, is_owner=ctx.is_owner)

    where = ctx.agent_hosts.describe if agent.node is not None and ctx.agent_hosts is not None else None
    return await answer_project(ctx.db, agent, ctx.key, rest, open_to, where)


@command("diff", access=Access("session", "read"),
         help="The last turn's changes as a file; /diff all: everything uncommitted")
async def diff_command(ctx: CommandContext, rest: str) -> str:
    agent = ctx.sessions.agent(parse_key(ctx.key)[0])
    return await answer_diff(ctx.db, ctx.state_dir, ctx.replies.send_file, agent, ctx.key, rest, ctx.origin,
                             ctx.agent_hosts)

MAX_INLINE_DIFF = 3000  # characters of a diff shown in the web chat's answer (other chats get the file)


def no_projects_text(agent: AgentConfig) -> str:
    return (f"Agent {agent.id} has no projects. Give it some in the config, e.g.\n"
            f'agents.list[].projects: [{{"name": "web", "path": "/home/me/web", "worktrees": true}}]\n'
            "then /project web switches this conversation there (see docs/projects.md).")


async def _current(db: Database, key: str) -> str | None:
    async with db.session() as s:
        row = await SessionRepo.get(s, key)
        return row.project if row is not None else None


async def switch_project(db: Database, key: str, name: str | None) -> None:
    """Store the session's project and forget its CLI sessions (they belong to the old folder)."""
    async with db.session() as s:
        row = await SessionRepo.get(s, key)
        if row is not None:
            row.project = name
            row.cli_sessions = "{}"


async def answer_project(db: Database, agent: AgentConfig, key: str, arg: str, open_to: OpenTo = _everyone,
                         describe: Describe | None = None) -> str:
    """The answer to ``/project [arg]``: only the projects open to the conversation's person are listed or chosen."""
    if not agent.projects:
        return no_projects_text(agent)
    describe = describe or projects.describe
    current = agent.project(await _current(db, key))
    word = arg.strip()
    if not word:
        return await _listing(agent, current, key, open_to, describe)
    chosen = agent.project(word)
    if chosen is not None and not open_to(chosen):
        return f"Project {chosen.name} is not open to you (projects[].people); ask the owner."
    if chosen is not None:
        where = await describe(agent, chosen.name, key)
        if where.get("refused"):  # a node that does not lend the folder: its turns would be refused there
            return f"⚠️ Project {chosen.name} cannot be used on node {agent.node}: {where['refused']}"
        await switch_project(db, key, chosen.name)
        how = ("its own git worktree (made at the first message)" if chosen.worktrees
               else f"{where['path']}" + (f" on branch {where['branch']}" if where["branch"] else ""))
        on = f" on node {agent.node}" if agent.node is not None else ""
        note = f" (not checked now: {where['note']})" if where.get("note") else ""
        return f"📁 Now working in {chosen.name}{on}: {how}{note}. The agent starts a fresh conversation there."
    lowered = word.lower()
    if lowered in ("none", "off"):
        await switch_project(db, key, None)
        return "📁 No project: each turn runs in a fresh private folder again."
    if lowered in ("worktrees", "remove") and agent.node is not None:
        return await _on_node(agent, current, key, lowered, describe)
    if lowered == "worktrees":
        return await _worktrees(current)
    if lowered == "remove":
        return await _remove(current, key)
    names = ", ".join(p.name for p in agent.projects if open_to(p)) or "none open to you"
    return f"There is no project {word!r}. Projects: {names}."


async def _listing(agent: AgentConfig, current: object, key: str, open_to: OpenTo, describe: Describe) -> str:
    mine = [p for p in agent.projects if open_to(p)]
    if not mine:
        return "No project of this agent is open to you: each turn runs in a fresh private folder."
    lines = ["Projects (/project <name> switches):"]
    for p in mine:
        mark = "▶" if p is current else "•"
        lines.append(f"{mark} {p.name} — {p.path}" + (" (a worktree per conversation)" if p.worktrees else ""))
    if current is None:
        lines.append("This conversation has no project: each turn runs in a fresh private folder.")
    else:
        where = await describe(agent, getattr(current, "name", None), key)
        on = f" on node {agent.node}" if agent.node is not None else ""
        lines.append(f"Now: {where['project']} in {where['path']}{on}"
                     + (f" on branch {where['branch']}" if where["branch"] else ""))
        if where.get("refused") or where.get("note"):
            lines.append(f"⚠️ {where.get('refused') or where.get('note')}")
    return "\n".join(lines)


async def _worktrees(current: object) -> str:
    from gateway.config import ProjectConfig

    if not isinstance(current, ProjectConfig):
        return "Choose a project first (/project <name>)."
    try:
        trees = await projects.worktrees_of(current)
    except (projects.GitError, OSError) as exc:
        return f"⚠️ {exc}"
    if not trees:
        return f"{current.name} has no conversation worktrees."
    return f"Worktrees of {current.name}:\n" + "\n".join(f"• {branch} — {path}" for path, branch in trees)


async def _on_node(agent: AgentConfig, current: ProjectConfig | None, key: str, action: str,
                   describe: Describe) -> str:
    """``/project worktrees`` and ``/project remove`` for an agent on a node: the node lists or removes them."""
    if current is None:
        return "Choose a project first (/project <name>)."
    got = await describe(agent, current.name, key, action)
    if got.get("note"):
        return f"⚠️ {got['note']}"
    if action == "worktrees":
        if got.get("refused"):
            return f"⚠️ {got['refused']}"
        trees = got.get("worktrees") or []
        if not trees:
            return f"{current.name} has no conversation worktrees."
        return (f"Worktrees of {current.name} on node {agent.node}:\n"
                + "\n".join(f"• {t['branch']} — {t['path']}" for t in trees))
    if got.get("refused"):
        return f"⚠️ The worktree stays: {got['refused']} (commit or discard the changes first)."
    if not got.get("removed"):
        return "This conversation has no worktree of this project."
    return (f"🗑 Removed {got['removed']} on node {agent.node}; its branch and commits stay. The next message makes "
            "a fresh worktree.")


async def _remove(current: object, key: str) -> str:
    from gateway.config import ProjectConfig

    if not isinstance(current, ProjectConfig):
        return "Choose a project first (/project <name>)."
    try:
        removed = await projects.remove_worktree(current, key)
    except (projects.GitError, OSError) as exc:
        return f"⚠️ The worktree stays: {exc} (commit or discard the changes first)."
    if removed is None:
        return "This conversation has no worktree of this project."
    return f"🗑 Removed {removed}; its branch and commits stay. The next message makes a fresh worktree."


async def _uncommitted_on_node(db: Database, agent: AgentConfig, key: str, hosts: Any) -> diffs.Diff | str:
    """``/diff all`` for an agent on a node: the node diffs its folder; the diff, or the answer saying why not."""
    name = await _current(db, key)
    if agent.project(name) is None:
        return no_projects_text(agent) if not agent.projects else "This conversation has no project."
    if hosts is None:
        return f"⚠️ No diff: agent {agent.id} runs on node {agent.node}, and this gateway has no node service."
    got = await hosts.describe(agent, name, key, "uncommitted")
    if got.get("note") or got.get("refused"):
        return f"⚠️ No diff: {got.get('note') or got.get('refused')}"
    if not got.get("git"):
        return f"{name} is not a git repository: no diff."
    if not got.get("exists", True):
        return f"Nothing yet: this conversation's worktree of {name} is made at its first message."
    made = got.get("diff")
    if not isinstance(made, dict):
        return f"Nothing uncommitted in {name}."
    return diffs.Diff(text=str(made.get("text") or ""), files=int(made.get("files") or 0),
                      added=int(made.get("added") or 0), removed=int(made.get("removed") or 0))


async def answer_diff(db: Database, state_dir: Path, send_file: SendFile, agent: AgentConfig, key: str, arg: str,
                      origin: Origin, hosts: Any = None) -> str:
    """The answer to ``/diff`` (the last turn's) or ``/diff all`` (everything uncommitted); the file is sent to
    the chat, except on the web chat, which gets (the start of) the diff in the answer. ``hosts``: the node
    service, for an agent on a node (its project is diffed there)."""
    if arg.strip().lower() in ("all", "uncommitted") and agent.node is not None:
        got = await _uncommitted_on_node(db, agent, key, hosts)
        if isinstance(got, str):
            return got
        name = await _current(db, key)
        path = diffs.save_diff(state_dir, key, got, name="uncommitted")
        summary = f"Uncommitted in {name} on node {agent.node}: {got.summary()}"
        text = got.text
    elif arg.strip().lower() in ("all", "uncommitted"):
        name = await _current(db, key)
        where = await projects.describe(agent, name, key)
        if where["path"] is None:
            return no_projects_text(agent) if not agent.projects else "This conversation has no project."
        folder = Path(where["path"])
        if not await asyncio.to_thread(folder.is_dir):
            return f"Nothing yet: this conversation's worktree of {name} is made at its first message."
        if await projects.git_toplevel(folder) is None:
            return f"{name} is not a git repository: no diff."
        try:
            diff = await diffs.uncommitted(Path(where["path"]))
        except (projects.GitError, OSError) as exc:
            return f"⚠️ No diff: {exc}"
        if diff.empty:
            return f"Nothing uncommitted in {name}."
        path = diffs.save_diff(state_dir, key, diff, name="uncommitted")
        summary = f"Uncommitted in {name}: {diff.summary()}"
        text = diff.text
    else:
        last = diffs.last_diff(state_dir, key)
        if last is None:
            return "No turn has changed files in this conversation yet."
        path = last
        text = last.read_text()
        summary = f"Last turn's diff ({last.name})"
    if origin.channel == "webchat":
        shown = text if len(text) <= MAX_INLINE_DIFF else text[:MAX_INLINE_DIFF] + "\n… (cut)"
        return f"{summary}\n```diff\n{shown}\n```"
    sent = await send_file(origin, path, key)
    return summary if sent else f"{summary}: the file could not be sent."
