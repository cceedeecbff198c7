"""The chat-command registry: each slash command declared once, beside what it serves, with ``@command``.

The chat twin of ``@method`` (``gateway.dispatch.registry``). A declaration gives the command's word (and
aliases), its help line, what it acts on (``gateway.access.Access``: the inbound side asks ``may`` before the
handler runs, as the dispatcher does for a method) and the stage that answers it:

- ``door``: the inbound door (``gateway.platforms.door``), before the channel's access rules, for commands a
  sender the gateway does not know yet may need (``/whoami``, ``/link <code>``). A refused or declined door
  command (its handler answers None) goes on as an ordinary message.
- ``session``: the inbound router (``gateway.agents.router``), once the message has a session; the agent never
  sees the command.

The router and the door only route (``parse``, decide, call); ``/help``, the Telegram menu and the access table
(docs/security.md) are generated from here. A handler is ``async (ctx, rest) -> str | None`` with ``ctx`` a
``DoorContext`` or a ``CommandContext`` (what a handler may use, and nothing else) and ``rest`` the text after
the command.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from gateway.access import Access, Obj, Principal, may

if TYPE_CHECKING:
    from gateway.agents.invocation import Desk
    from gateway.composition.ports import ChatDecisions, ChatRecorder
    from gateway.config import ConfigStore
    from gateway.people.service import PeopleService, PersonView
    from gateway.platforms.messages import Inbound
    from gateway.runs import Origin, RunQueue
    from gateway.sessions.service import SessionsService
    from gateway.store import Database

__all__ = ["CORE_MODULES", "CommandContext", "CommandRegistry", "CommandReplies", "CommandSpec", "DoorContext",
           "Speaker", "Stage", "command", "commands"]

Stage = Literal["door", "session"]
CommandHandler = Callable[[Any, str], Awaitable["str | None"]]
"""``async def handler(ctx: CommandContext | DoorContext, rest: str) -> str | None``."""

CORE_MODULES = ("gateway.agents.commands", "gateway.projects.handoff", "gateway.usage.chat",
                "gateway.projects.commands", "gateway.people.chat")
"""The core's command modules, in help order; each capability names its own (``Capability.commands``)."""

# "/stop", "/stop@MyBot" (Telegram groups), then optional text after whitespace.
_COMMAND = re.compile(r"^/([A-Za-z]+)(?:@\w+)?(?:\s+(.*))?$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class CommandSpec:
    name: str
    help: str
    """Its line in ``/help`` and the Telegram menu."""
    access: Access
    """What it acts on: the chat's own session (or its person, at the door) unless it says more."""
    handler: CommandHandler
    stage: Stage = "session"
    aliases: tuple[str, ...] = ()
    dm_only: bool = False
    """A command of direct chats only (codes and links are for one person's eyes): in a group it is an ordinary
    message, and the group's ``/help`` does not list it."""
    always: bool = False
    """Answered even when ``messages.commands`` is off (``/approve``: the approval buttons type it), and never
    taken for the free answer to a pending question."""
    continues: bool = False
    """After its answer, the text after it (or the message's files) goes on to the agent: ``/new <text>``."""


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who typed a command, and where: what the access model decides a chat command for."""

    channel: str
    chat_id: str
    chat_type: str
    person_id: str | None
    owner: bool
    key: str | None = None
    """The chat's session (None at the door: it has none yet)."""

    def may_use(self, spec: CommandSpec) -> bool:
        """Whether the access model lets this speaker use ``spec`` here (a direct-chat command in a group: no)."""
        if spec.dm_only and self.chat_type != "dm":
            return False
        who = Principal.for_chat(self.key, self.channel, self.chat_id, person_id=self.person_id, owner=self.owner)
        what = Obj(spec.access.kind, key=self.key, person_id=self.person_id, channel=self.channel,
                   peer_id=self.chat_id)
        return may(who, spec.access.action, what)


class CommandReplies(Protocol):
    """What a command uses of the agent executor: answering in the chat, files it made, where a session's CLI
    works (``gateway.agents.router.Replies`` is this and more)."""

    async def notify(self, origin: Origin, text: str, session_key: str, *, reply_to_id: str | None = None) -> int: ...
    async def send_file(self, origin: Origin, path: Path, session_key: str, caption: str | None = None) -> bool: ...
    async def handoff_place(self, session_key: str) -> Desk: ...


@dataclass(frozen=True, slots=True)
class DoorContext:
    """What a door command's handler may use: the message, who sent it, the people service, the sign-in base."""

    msg: Inbound
    person: PersonView | None
    people: PeopleService
    signin_base: Callable[[], str]
    speaker: Speaker


@dataclass(frozen=True, slots=True)
class CommandContext:
    """What a session command's handler may use: the message and its session, who sent it, and the services
    the gateway's commands act on (the capabilities' through their ports, None when the capability is off)."""

    msg: Inbound
    key: str
    origin: Origin
    person: PersonView | None
    """The sender's person in a direct chat (None in a group, or for a stranger)."""
    is_owner: bool
    speaker: Speaker
    db: Database
    config: ConfigStore
    sessions: SessionsService
    runs: RunQueue
    people: PeopleService | None
    state_dir: Path
    replies: CommandReplies
    recorder: ChatRecorder | None = None
    decisions: ChatDecisions | None = None
    agent_hosts: Any = None
    """Agent turns on nodes (``ports.AGENT_HOSTS``): an agent's projects on its node are described there."""

    async def say(self, text: str) -> None:
        """Answer in the chat now (for a handler that sends a file after its words)."""
        await self.replies.notify(self.origin, text, self.key)

    async def send_file(self, path: Path) -> bool:
        return await self.replies.send_file(self.origin, path, self.key)


class CommandRegistry:
    """Word -> CommandSpec. One process-wide instance, ``commands``, filled as the command modules are imported
    (``load_all``)."""

    def __init__(self) -> None:
        self._specs: dict[str, CommandSpec] = {}
        self._words: dict[str, CommandSpec] = {}
        self._modules: tuple[str, ...] = ()
        """The command modules in help order (``load_all``): a module imported earlier by something else (the
        executor imports ``agents.usage``) does not move its commands up."""
        self._loaded = False

    def add(self, spec: CommandSpec) -> None:
        if not isinstance(spec.access, Access):
            raise TypeError(f"/{spec.name}: declare what it acts on with access=Access(kind, action)")
        if not spec.help:
            raise TypeError(f"/{spec.name}: a command needs its help line (help=)")
        for word in (spec.name, *spec.aliases):
            if word in self._words:
                raise ValueError(f"chat command declared twice: /{word}")
        self._specs[spec.name] = spec
        for word in (spec.name, *spec.aliases):
            self._words[word] = spec

    def command(self, name: str, *, access: Access, help: str, stage: Stage = "session",
                aliases: tuple[str, ...] = (), dm_only: bool = False, always: bool = False,
                continues: bool = False) -> Callable[[CommandHandler], CommandHandler]:
        """Declare a chat command (see the module's docstring)."""

        def deco(fn: CommandHandler) -> CommandHandler:
            self.add(CommandSpec(name=name, help=help, access=access, handler=fn, stage=stage, aliases=aliases,
                                 dm_only=dm_only, always=always, continues=continues))
            return fn

        return deco

    def load_all(self) -> None:
        """Import every command module once: the core's, then each capability's."""
        if self._loaded:
            return
        from gateway.composition.capabilities import declared

        self._modules = (*CORE_MODULES, *(m for capability in declared() for m in capability.commands))
        for module in self._modules:
            importlib.import_module(module)
        self._loaded = True

    def _place(self, spec: CommandSpec) -> tuple[bool, int, int]:
        """Where ``spec`` stands in the help and the menu: ``/help`` last, else its module's place in
        ``load_all``'s order, then its line there."""
        module = spec.handler.__module__
        rank = self._modules.index(module) if module in self._modules else len(self._modules)
        return spec.name == "help", rank, getattr(getattr(spec.handler, "__code__", None), "co_firstlineno", 0)

    def specs(self, stage: Stage | None = None) -> list[CommandSpec]:
        """Every command (of one stage), in declaration order (``_place``) with ``/help`` last."""
        self.load_all()
        found = [s for s in self._specs.values() if stage is None or s.stage == stage]
        return sorted(found, key=self._place)

    def parse(self, text: str, stage: Stage | None = None) -> tuple[CommandSpec, str] | None:
        """The command at the start of ``text`` (of ``stage``) and the text after it; None for anything else."""
        m = _COMMAND.match(text.strip())
        if m is None:
            return None
        self.load_all()
        spec = self._words.get(m.group(1).lower())
        if spec is None or (stage is not None and spec.stage != stage):
            return None
        return spec, (m.group(2) or "").strip()

    def help_text(self, speaker: Speaker) -> str:
        """``/help``: the commands this speaker may use here, each with its help line."""
        lines = [f"/{s.name} — {s.help}" for s in self.specs() if speaker.may_use(s)]
        return "Anything else you write goes to the agent. Commands:\n" + "\n".join(lines)

    def __iter__(self) -> Iterator[CommandSpec]:
        return iter(self.specs())


commands = CommandRegistry()
command = commands.command
