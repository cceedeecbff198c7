"""An allowed chat message -> its session -> a chat command's answer, or (part of) an agent turn.

Platforms decide *whether* a sender may talk (access rules, pairing, the owner); this decides what
their message does: which session it belongs to (shaped by ``session.dmScope``), whether it is a
chat command the gateway answers at once (declared with ``@command`` beside what each serves,
``gateway.dispatch.commands``: this only parses, decides with the access model and calls), and otherwise
the run request it becomes, with its downloaded files named by their path in the run's workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import structlog

from gateway.agents.strangers import dm_scope_for, moves_route
from gateway.agents.workspace import ATTACHMENTS_DIR
from gateway.composition.ports import AGENT_HOSTS, CHAT_DECISIONS, RECORDER, VOICE
from gateway.dispatch.commands import CommandContext, CommandSpec, Speaker, commands
from gateway.people.service import person_key
from gateway.protocol import InvalidRequest
from gateway.runs import Origin, RunRequest
from gateway.sessions.service import inbound_key, main_key
from gateway.sessions.store import SessionRepo

if TYPE_CHECKING:
    from gateway.agents.invocation import Desk
    from gateway.composition.services import Services
    from gateway.config import AgentConfig, ConfigStore
    from gateway.hooks.runner import HookRunner
    from gateway.people.service import PeopleService, PersonView
    from gateway.platforms.messages import Inbound
    from gateway.runs import RunQueue
    from gateway.sessions.service import SessionsService
    from gateway.store import Database

__all__ = ["InboundRouter", "Replies"]

log = structlog.get_logger("gateway.agents")


class Replies(Protocol):
    """What the router uses of the agent executor (``executor.AgentExecutor``, which builds it): answering in the
    chat, typing, attaching a file the gateway made, and where a session's CLI works. A protocol, so the two
    modules do not import each other."""

    async def notify(self, origin: Origin, text: str, session_key: str, *, reply_to_id: str | None = None) -> int: ...
    async def typing(self, origin: Origin) -> float | None: ...
    async def send_file(self, origin: Origin, path: Path, session_key: str, caption: str | None = None) -> bool: ...
    async def handoff_place(self, session_key: str) -> Desk: ...


class InboundRouter:
    """Turns allowed chat messages into run requests (or command answers) for one gateway."""

    def __init__(self, agents: Replies, *, db: Database, config: ConfigStore, sessions: SessionsService,
                 runs: RunQueue, hooks: HookRunner, services: Services, state_dir: Path,
                 people: PeopleService | None = None) -> None:
        self._agents = agents
        """The executor: answers (``notify``), typing, files it made, where a session's CLI works."""
        self._db = db
        self._config = config
        self._sessions = sessions
        self._runs = runs
        self._hooks = hooks
        self._services = services
        self._state_dir = state_dir
        self._people = people

    async def handle(self, msg: Inbound, *, is_owner: bool, tool_profile: str | None = None,
                     person: PersonView | None = None) -> None:
        """Queue a run for a message the platform already let through (access, owner and person decided).

        A direct chat of a known person is theirs (``sessions.person_id``): they alone see it, their budget pays
        for it. A person who chose one conversation has all their direct chats in ``agent:<id>:person:<them>``,
        and so has everyone but the owner under ``dmScope: main`` (the owner keeps ``agent:<id>:main``). A sender
        nobody has on record never shares a session: theirs is keyed by channel and sender whatever ``dmScope`` says,
        and only a session's owner moves where its deliveries go (``strangers``).
        """
        agent = self._agent_for(person)
        if agent.people is not None and not is_owner and (
                person is None or self._people is None or not self._people.may_use(person, agent.people)):
            origin = Origin(channel=msg.channel, account_id=msg.account_id, to=msg.chat_id, chat_type=msg.chat_type,
                            thread_id=msg.thread_id, reply_to_id=msg.message_id, sender_id=msg.sender_id)
            log.info("agent not for this sender", agent_id=agent.id, sender=msg.sender_id,
                     person=person.id if person else None)
            await self._agents.notify(origin, f"{agent.name or agent.id} is not open to you here; ask an admin.",
                                      f"agent:{agent.id}:main")
            return
        mine = person if msg.chat_type == "dm" else None
        dm_scope = self._config.config.session.dmScope
        # One conversation for the person: when they chose it, and when the operator's dmScope would otherwise
        # put everyone's direct chats in the one main session (fine for one owner, never for several people).
        shared = dm_scope == "main" and mine is not None and not mine.is_owner
        if mine is not None and (mine.one_conversation or shared) and not msg.thread_id:
            key = person_key(agent.id, mine.id)
        else:
            scope = dm_scope_for(dm_scope, is_owner=is_owner, person=mine) if msg.chat_type == "dm" else dm_scope
            key = inbound_key(agent.id, scope, channel=msg.channel,
                              account_id=msg.account_id, chat_type=msg.chat_type, chat_id=msg.chat_id,
                              sender_id=msg.sender_id, thread_id=msg.thread_id)
        await self._sessions.ensure(key, channel=msg.channel, account_id=msg.account_id, peer_id=msg.chat_id,
                                 chat_type=msg.chat_type, thread_id=msg.thread_id,
                                 person_id=mine.id if mine is not None else None)
        async with self._db.session() as s:  # remember the latest route: where deliver:true replies go
            row = await SessionRepo.get(s, key)
            if row is not None and moves_route(key, agent_id=agent.id, chat_type=msg.chat_type, is_owner=is_owner,
                                               person=mine, session_person=row.person_id):
                row.channel, row.account_id, row.peer_id = msg.channel, msg.account_id, msg.chat_id
                row.chat_type, row.thread_id = msg.chat_type, msg.thread_id
            if row is not None and mine is not None and row.person_id is None:  # from before its sender was linked
                row.person_id = mine.id
            main = await SessionRepo.get(s, main_key(agent.id)) if msg.chat_type == "dm" and not is_owner else None
            if main is not None and (main.channel, main.peer_id) == (msg.channel, msg.chat_id):
                # Someone else's chat was the owner's delivery target (a stranger who wrote last into a shared
                # main session before #51): the owner's answers wait for the owner's next message instead.
                main.channel = main.account_id = main.peer_id = main.chat_type = main.thread_id = None
        if mine is not None and self._people is not None:
            self._people.note_session(key, mine.id)
        self._hooks.fire("message_received", {
            "channel": msg.channel, "accountId": msg.account_id, "chatId": msg.chat_id, "chatType": msg.chat_type,
            "from": msg.sender_id, "senderName": msg.sender_name, "messageId": msg.message_id, "content": msg.text,
            "sessionKey": key, "isOwner": is_owner})
        origin = Origin(channel=msg.channel, account_id=msg.account_id, to=msg.chat_id, chat_type=msg.chat_type,
                        thread_id=msg.thread_id, reply_to_id=msg.message_id, sender_id=msg.sender_id,
                        sender_name=msg.sender_name)
        text = msg.text
        command = commands.parse(text, "session")
        if command is not None and not (self._config.config.messages.commands or command[0].always):
            command = None  # commands are off: an ordinary message
        chat = self._services.find(CHAT_DECISIONS)
        if chat is not None and (command is None or not command[0].always):
            # the answer to a pending question (whatever it looks like): never reaches the agent
            if msg.media and not text.strip() and chat.awaits_answer(key, is_owner=is_owner,
                                                                     chat_type=msg.chat_type):
                spoken = await self._spoken_answer(msg, origin, key)
                if spoken is None:
                    return
                text = spoken or text
            answer = await chat.handle(key, text, sender=msg.sender_id, channel=msg.channel, is_owner=is_owner,
                                       chat_type=msg.chat_type)
            if answer is not None:
                if answer:
                    await self._agents.notify(origin, answer, key)
                return
        if command is not None:
            spec, rest = command
            if not await self._answer_command(spec, rest, msg, key, origin, is_owner=is_owner, person=mine):
                return
            text = rest  # "/new <text>": the first message of the new conversation
        files: list[str] = []
        voice_in = False
        for m in msg.media:
            if m.path:  # downloaded: the agent reads its copy in the workspace
                files.append(m.path)
                where = f"{ATTACHMENTS_DIR}/{Path(m.path).name}"
            else:
                where = m.url or "(not downloaded)"
            text += f"\n[attachment: {m.kind} {where}]"
            if m.kind in ("voice", "audio") and m.path:
                voice_in = voice_in or m.kind == "voice"
                text += await self._transcript(m.path, origin, key)
        if msg.chat_type != "dm" and msg.sender_name:
            text = f"[{msg.sender_name}] {text}"
        await self._runs.submit(RunRequest(session_key=key, agent_id=agent.id, message=text, source="channel",
                                        is_owner=is_owner, tool_profile=tool_profile, origin=origin,
                                        deliver=True, files=tuple(files), inbound=msg.ref, voice_in=voice_in))
        await self._agents.typing(origin)

    def _agent_for(self, person: PersonView | None) -> AgentConfig:
        """A person's own agent when they have one that is still configured, else the default agent."""
        if person is not None and person.agent_id:
            try:
                return self._sessions.agent(person.agent_id)
            except InvalidRequest:
                log.warning("a person's agent is no longer configured: the default answers", person=person.id,
                            agent_id=person.agent_id)
        return self._sessions.agent(None)

    async def _spoken_answer(self, msg: Inbound, origin: Origin, key: str) -> str | None:
        """The words of a voice note sent while a question waits for its sender: they are the free answer.
        "" when there is nothing to hear (not a voice note, speech to text off): the message stays a message.
        None when it could not be heard: the person is told to type the answer, and nothing else happens."""
        voice = next((m for m in msg.media if m.kind in ("voice", "audio") and m.path), None)
        speech = self._services.find(VOICE)
        if voice is None or voice.path is None or speech is None:
            return ""
        heard, why = await speech.listen(voice.path)
        if heard is None and why is None:
            return ""
        if heard is not None and heard.text.strip():
            return heard.text.strip()
        await self._agents.notify(origin, f"⚠️ I could not take your voice message as the answer "
                                            f"({why or 'no words recognised'}); please type it.", key)
        return None

    async def _transcript(self, path: str, origin: Origin, key: str) -> str:
        """The words of a voice message for the prompt; a failure is told to the user (the message still goes
        through, with the audio in the workspace)."""
        voice = self._services.find(VOICE)
        if voice is None:
            return ""
        note, error = await voice.hear(path)
        if error:
            await self._agents.notify(origin, f"⚠️ I could not transcribe your voice message ({error}); "
                                                "the agent gets the audio file instead.", key)
        return note

    async def _answer_command(self, spec: CommandSpec, rest: str, msg: Inbound, key: str, origin: Origin, *,
                              is_owner: bool, person: PersonView | None) -> bool:
        """Decide ``spec`` for its sender with the access model, answer it; True when the message goes on to the
        agent after the answer (``/new <text>``, or ``/new`` with files)."""
        log.info("chat command", command=spec.name, session_key=key, sender=msg.sender_id)
        speaker = Speaker(msg.channel, msg.chat_id, msg.chat_type, person_id=person.id if person else None,
                          owner=is_owner or (person is not None and person.is_owner), key=key)
        if not speaker.may_use(spec):  # decided by the one authorization model, as a method would be
            await self._agents.notify(origin, f"⛔ /{spec.name} is the owner's only.", key)
            return False
        ctx = CommandContext(msg=msg, key=key, origin=origin, person=person, is_owner=is_owner, speaker=speaker,
                             db=self._db, config=self._config, sessions=self._sessions, runs=self._runs,
                             people=self._people, state_dir=self._state_dir, replies=self._agents,
                             recorder=self._services.find(RECORDER), decisions=self._services.find(CHAT_DECISIONS),
                             agent_hosts=self._services.find(AGENT_HOSTS))
        answer = await spec.handler(ctx, rest)
        if answer:
            await self._agents.notify(origin, answer, key)
        return spec.continues and bool(rest or msg.media)
