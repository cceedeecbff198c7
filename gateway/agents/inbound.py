"""An allowed chat message -> its session -> a chat command's answer, or (part of) an agent turn.

Platforms decide *whether* a sender may talk (access rules, pairing, the owner); this decides what
their message does: which session it belongs to (shaped by ``session.dmScope``), whether it is a
chat command the gateway answers at once (``/stop``, ``/new``, ``/status``, ``/queue``, ``/usage``, ``/handoff``,
``/help``), and otherwise
the run request it becomes, with its downloaded files named by their path in the run's workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import structlog

from gateway.access import Obj, Principal, may
from gateway.agents import commands, project_commands
from gateway.agents.handoff import handoff
from gateway.agents.projects import GitError
from gateway.agents.strangers import dm_scope_for, moves_route, strangers_conversation
from gateway.agents.usage import usage_text
from gateway.agents.workspace import ATTACHMENTS_DIR
from gateway.composition.ports import CHAT_DECISIONS, RECORDER, VOICE
from gateway.people.service import person_key
from gateway.protocol import InvalidRequest
from gateway.runs import Origin, RunRequest
from gateway.sessions import inbound_key, main_key, parse_key
from gateway.store.transcripts import SessionRepo

if TYPE_CHECKING:
    from gateway.composition.services import Services
    from gateway.config import AgentConfig, ConfigStore, ProjectConfig
    from gateway.hooks import HookRunner
    from gateway.people.service import PeopleService, PersonView
    from gateway.platforms.messages import Inbound
    from gateway.runs import RunQueue
    from gateway.sessions import SessionsService
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
    async def handoff_place(self, session_key: str) -> tuple[Path, Path, Path | None]: ...


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
        chat = self._services.find(CHAT_DECISIONS)
        if chat is not None:  # /approve, or the answer to a pending question: never reaches the agent
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
        command = commands.parse(text) if self._config.config.messages.commands else None
        if command is not None:
            cmd, rest = command
            log.info("chat command", command=cmd.name, session_key=key, sender=msg.sender_id)
            refused = command_refusal(cmd, key, msg, is_owner=is_owner, person=mine)
            if refused is not None:  # decided by the one authorization model, as a method would be
                await self._agents.notify(origin, refused, key)
                return
            if cmd.name == "record":
                await self._record_command(rest, key, origin, is_owner=is_owner)
                return
            if cmd.name in ("project", "diff"):
                answer = await self._project_command(cmd, rest, key, origin, is_owner=is_owner, person=mine)
                await self._agents.notify(origin, answer, key)
                return
            answer = await self._answer_command(cmd, key, rest, is_owner=is_owner, person=mine)
            await self._agents.notify(origin, answer, key)
            if cmd.name != "new" or not (rest or msg.media):
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

    async def _answer_command(self, cmd: commands.Command, key: str, rest: str = "", *, is_owner: bool = False,
                              person: PersonView | None = None) -> str:
        if cmd.name == "queue":
            return self._queue_text(key, rest)
        if cmd.name == "usage":
            owner = is_owner or (person is not None and person.is_owner)
            return await usage_text(self._db, key, self._sessions.agent(parse_key(key)[0]),
                                    person_id=person.id if person is not None else None, everyone=owner)
        if cmd.name == "handoff":
            return await self._handoff_text(key)
        if cmd.name == "stop":
            stopped, _forwarded = await self._runs.abort_everywhere(key)
            return "⏹ Stopped." if stopped else "Nothing is running."
        if cmd.name == "new":
            await self._sessions.reset(key)
            return "🆕 New conversation: the agent starts fresh."
        if cmd.name == "status":
            return await self._status_text(key)
        return commands.help_text()

    async def _handoff_text(self, key: str) -> str:
        """``/handoff``: the shell line that resumes this conversation in the agent's CLI on the gateway's machine."""
        try:
            found = await handoff(self._sessions, self._agents.handoff_place, key)
        except (GitError, OSError) as exc:
            return f"The project's folder could not be prepared: {exc}"
        if found is None:
            return "Nothing to hand off yet: this conversation has no agent session (send a message first)."
        runtime, sid = found["runtime"], found["sessionId"]
        if found["command"] is None:
            return f"The {runtime} runtime cannot be resumed outside the gateway (session id {sid})."
        return (f"Continue this conversation on the gateway's machine ({runtime}, session {sid}):\n\n"
                f"{found['command']}\n\nWhat you do there is picked up here with the next message.")

    def _queue_text(self, key: str, rest: str) -> str:
        """``/queue``: what waits for the next turn; ``/queue clear``: drop it."""
        if rest.lower() == "clear":
            dropped = self._runs.clear_waiting(key)
            return f"🗑 Dropped {dropped} waiting message(s)." if dropped else "Nothing is waiting."
        if rest:
            return "Usage: /queue shows what waits; /queue clear drops it."
        waiting = self._runs.waiting(key)
        if not waiting:
            return "Nothing is waiting."
        shown = [f"{i}. {m if len(m) <= 200 else m[:199] + '…'}" for i, m in enumerate(waiting, 1)]
        return f"{len(waiting)} message(s) wait for the next turn:\n" + "\n".join(shown)

    async def _record_command(self, rest: str, key: str, origin: Origin, *, is_owner: bool) -> None:
        """``/record start|stop``: a desktop trajectory (``gateway.desktop``); the stop sends the zip."""
        recorder = self._services.find(RECORDER)
        if recorder is None:
            await self._agents.notify(origin, "Recording needs the desktop capability and a desktop node.", key)
            return
        answer, file = await recorder.chat_command(key, rest, is_owner=is_owner)
        await self._agents.notify(origin, answer, key)
        if file is not None:
            await self._agents.send_file(origin, Path(file), key)

    async def _project_command(self, cmd: commands.Command, rest: str, key: str, origin: Origin, *, is_owner: bool,
                               person: PersonView | None) -> str:
        """``/project`` and ``/diff`` (see ``project_commands``): they take words after them and send files. The
        projects offered are the session's agent's that are open to the sender (``projects[].people``)."""
        agent = self._sessions.agent(parse_key(key)[0])
        if cmd.name == "project":
            people = self._people

            def open_to(project: ProjectConfig) -> bool:
                if strangers_conversation(is_owner=is_owner, person_id=person.id if person is not None else None,
                                          chat_type=origin.chat_type):
                    return False  # a project folder is someone's checkout: never a stranger's to work in
                return people is None or people.may_work_in(person, project.people, is_owner=is_owner)

            return await project_commands.answer_project(self._db, agent, key, rest, open_to)
        return await project_commands.answer_diff(self._db, self._state_dir, self._agents.send_file, agent, key, rest,
                                                 origin)

    async def _status_text(self, key: str) -> str:
        st = await self._sessions.status(key)
        run = st["run"]
        doing = "idle"
        if run["active"]:
            doing = "working" + (f", {run['queued']} message(s) waiting" if run["queued"] else "")
        lines = [f"Agent: {st['agentId']} ({st['runtime']}{', ' + st['model'] if st['model'] else ''})",
                 f"Now: {doing}",
                 f"Tokens: {st['inputTokens']:,} in, {st['outputTokens']:,} out",
                 f"Session: {key}"]
        if st.get("project"):
            lines.insert(2, f"Project: {st['project']}" + (f" (branch {st['branch']})" if st.get("branch") else ""))
        return "\n".join(lines)


def command_refusal(cmd: commands.Command, key: str, msg: Inbound, *, is_owner: bool,
                    person: PersonView | None) -> str | None:
    """Why the sender may not use ``cmd`` in their chat, as the access model decides (None: they may). A chat's
    commands act on its own session (``key``), so what is refused is what needs more: the owner's node."""
    speaker = Principal.for_chat(key, msg.channel, msg.chat_id, person_id=person.id if person else None,
                                 owner=is_owner or (person is not None and person.is_owner))
    target = Obj(cmd.access.kind, key=key, person_id=person.id if person else None, channel=msg.channel,
                 peer_id=msg.chat_id)
    if may(speaker, cmd.access.action, target):
        return None
    return f"⛔ /{cmd.name} is the owner's only."
