"""Chat commands: what a Telegram or Discord user types to steer the agent rather than talk to it.

A chat has no Stop button and no "new conversation" menu, so these few words do that job. The
executor's side answers them itself, at once, even while a turn is running; they never reach the agent.
``/new`` followed by text starts the new conversation with that text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.access import Access

__all__ = ["COMMANDS", "Command", "help_text", "parse"]

_SESSION_READ = Access("session", "read")
_SESSION_WRITE = Access("session", "write")


@dataclass(frozen=True, slots=True)
class Command:
    """A chat command, with what it acts on (``gateway.access``): the chat's own session unless it says more.

    The inbound router asks the access model before answering one, as the dispatcher does for a method."""

    name: str
    description: str
    access: Access
    aliases: tuple[str, ...] = ()


COMMANDS: tuple[Command, ...] = (
    Command("stop", "Stop the current answer and drop the messages waiting for it", _SESSION_WRITE, ("abort",)),
    Command("new", "Start a new conversation (the agent forgets this one)", _SESSION_WRITE, ("reset",)),
    Command("status", "What the agent is doing and what this conversation has used", _SESSION_READ),
    Command("project", "List the projects, or switch this conversation to one: /project <name>", _SESSION_WRITE),
    Command("diff", "The last turn's changes as a file; /diff all: everything uncommitted", _SESSION_READ),
    Command("queue", "Show the messages waiting for the next turn; /queue clear drops them", _SESSION_WRITE),
    Command("usage", "Tokens and cost today, this week and in this conversation", Access("usage", "read")),
    Command("handoff", "The command that continues this conversation in the agent's CLI on the machine", _SESSION_READ),
    Command("record", "Record what the agent does on your desktop node: /record start, /record stop (sends the zip)",
            Access("node", "exec")),
    Command("approve", "Decide what the agent asked: /approve <id> allow-once|allow-always|deny",
            Access("approval", "write")),
    # /start is the first thing Telegram sends
    Command("help", "List these commands", Access("gateway", "read"), ("start",)),
)
_BY_WORD = {word: cmd for cmd in COMMANDS for word in (cmd.name, *cmd.aliases)}
# "/stop", "/stop@MyBot" (Telegram groups), then optional text after whitespace.
_COMMAND = re.compile(r"^/([A-Za-z]+)(?:@\w+)?(?:\s+(.*))?$", re.DOTALL)


def parse(text: str) -> tuple[Command, str] | None:
    """The command at the start of ``text`` and the text after it; None for an ordinary message."""
    m = _COMMAND.match(text.strip())
    if m is None:
        return None
    cmd = _BY_WORD.get(m.group(1).lower())
    return (cmd, (m.group(2) or "").strip()) if cmd else None


PEOPLE_HELP = (
    "/whoami — Who the gateway takes you for",
    "/link — Link another chat of yours: /link here, then /link <code> from the other chat",
    "/login — A one-time link that signs you in to the web chat",
)
"""The people commands (``gateway.people.chat``), answered at the inbound door before these."""


def help_text() -> str:
    lines = [f"/{c.name} — {c.description}" for c in COMMANDS] + list(PEOPLE_HELP)
    return "Anything else you write goes to the agent. Commands:\n" + "\n".join(lines)
