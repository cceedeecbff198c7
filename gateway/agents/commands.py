"""The conversation's chat commands: what a Telegram or Discord user types to steer the agent rather than talk to it.

A chat has no Stop button and no "new conversation" menu, so these few words do that job. The inbound router
answers them at once, even while a turn is running; they never reach the agent. ``/new`` followed by text starts
the new conversation with that text. Declared with ``@command`` (``gateway.dispatch.commands``), as every chat
command is beside what it serves.
"""

from __future__ import annotations

from gateway.access import Access
from gateway.dispatch.commands import CommandContext, command, commands

__all__ = ["SESSION_READ", "SESSION_WRITE"]

SESSION_READ = Access("session", "read")
SESSION_WRITE = Access("session", "write")


@command("stop", access=SESSION_WRITE, aliases=("abort",),
         help="Stop the current answer and drop the messages waiting for it")
async def stop(ctx: CommandContext, rest: str) -> str:
    stopped, _forwarded = await ctx.runs.abort_everywhere(ctx.key)
    return "⏹ Stopped." if stopped else "Nothing is running."


@command("new", access=SESSION_WRITE, aliases=("reset",), continues=True,
         help="Start a new conversation (the agent forgets this one)")
async def new(ctx: CommandContext, rest: str) -> str:
    """The text after it (or the message's files) is the new conversation's first message (``continues``)."""
    await ctx.sessions.reset(ctx.key)
    return "🆕 New conversation: the agent starts fresh."


@command("status", access=SESSION_READ, help="What the agent is doing and what this conversation has used")
async def status(ctx: CommandContext, rest: str) -> str:
    key = ctx.key
    st = await ctx.sessions.status(key)
    run = st["run"]
    doing = "idle"
    if run["active"]:
        doing = "working" + (f", {run['queued']} message(s) waiting" if run["queued"] else "")
    lines = [f"Agent: {st['agentId']} ({st['runtime']}{', ' + st['model'] if st['model'] else ''})",
             f"Now: {doing}",
             f"Tokens: {st['inputTokens']:,} in, {st['outputTokens']:,} out",
             f"Session: {key}"]
    agent = ctx.sessions.agent(st["agentId"], field="sessionKey")
    on = f" on node {agent.node}" if agent.node is not None else ""
    if st.get("project") and agent.node is not None and ctx.agent_hosts is not None:  # the node's worktree
        st["branch"] = (await ctx.agent_hosts.describe(agent, st["project"], key)).get("branch")
    if st.get("project"):
        lines.insert(2, f"Project: {st['project']}{on}" + (f" (branch {st['branch']})" if st.get("branch") else ""))
    elif on:
        lines.insert(2, f"Runs{on}")
    return "\n".join(lines)


@command("queue", access=SESSION_WRITE, help="Show the messages waiting for the next turn; /queue clear drops them")
async def queue(ctx: CommandContext, rest: str) -> str:
    """``/queue``: what waits for the next turn; ``/queue clear``: drop it."""
    if rest.lower() == "clear":
        dropped = ctx.runs.clear_waiting(ctx.key)
        return f"🗑 Dropped {dropped} waiting message(s)." if dropped else "Nothing is waiting."
    if rest:
        return "Usage: /queue shows what waits; /queue clear drops it."
    waiting = ctx.runs.waiting(ctx.key)
    if not waiting:
        return "Nothing is waiting."
    shown = [f"{i}. {m if len(m) <= 200 else m[:199] + '…'}" for i, m in enumerate(waiting, 1)]
    return f"{len(waiting)} message(s) wait for the next turn:\n" + "\n".join(shown)


# /start is the first thing Telegram sends
@command("help", access=Access("gateway", "read"), aliases=("start",), help="List these commands")
async def help_(ctx: CommandContext, rest: str) -> str:
    """Generated from the registry: the commands this sender may use in this chat."""
    return commands.help_text(ctx.speaker)
