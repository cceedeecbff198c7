"""Approvals in the chat the session lives in: the request told there, decided there by typing.

Every channel can carry text, so this is the way that works everywhere: when a run asks, the session's chat
(its last route) gets the tool and a preview of its input, or the questions with numbered options, and how to
answer; ``/approve <id> allow-once|allow-always|deny`` decides a tool use, ``/approve <id> <answer>`` answers a
question, and while a question is pending an ordinary message in that chat is its free answer. When the
request is decided the chat is told the outcome and who decided.

Who may decide: the bot's owner (``ownerAllowFrom``), or in a direct chat the person the session belongs to.
A stranger in a group is refused, saying so. A decision made here goes to the audit log with the chat sender as
its actor (``sender:<channel>:<id>``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol

import structlog

from gateway.access import Access
from gateway.approvals.pending import Decision, Pending
from gateway.composition.ports import DECISION_REFUSED
from gateway.dispatch.commands import CommandContext, command, commands
from gateway.protocol import RpcError
from gateway.runs import Origin
from gateway.sessions.store import SessionRepo

if TYPE_CHECKING:
    from collections.abc import Callable

    from gateway.approvals.config import ApprovalForwarding
    from gateway.composition.ports import Auditor
    from gateway.config import ConfigStore
    from gateway.platforms.interface import ChatPlatforms
    from gateway.store import Database

__all__ = ["ChatApprovals", "Requests", "answers_from_text"]

log = structlog.get_logger("gateway.approvals")

_DECISIONS = {
    "allow-once": "allow-once",
    "once": "allow-once",
    "allow": "allow-once",
    "yes": "allow-once",
    "allow-always": "allow-always",
    "always": "allow-always",
    "deny": "deny",
    "no": "deny",
}


class Requests(Protocol):
    """What the chat side uses of the approvals service (``service.ApprovalService``): the requests pending in a
    session, one by id, and deciding or answering one. A protocol, so the service can build its chat side without
    the two modules importing each other."""

    def pending_for(self, session_key: str) -> list[Pending]: ...
    async def questions_elsewhere(self, session_key: str) -> list[Pending]: ...
    async def get(self, request_id: str) -> Pending | None: ...
    async def decide(self, request_id: str, decision: Decision, by: str) -> Pending: ...
    async def answer(self, request_id: str, answers: dict[str, list[str]], by: str) -> Pending: ...


USAGE = "Usage: /approve <id> allow-once|allow-always|deny (or, for a question, /approve <id> <answer>)"


@command("approve", access=Access("approval", "write"), always=True,
         help="Decide what the agent asked: /approve <id> allow-once|allow-always|deny")
async def approve(ctx: CommandContext, rest: str) -> str | None:
    """Whose request it is is decided with the request (``ChatApprovals.approve``): the owner's, or in a direct
    chat its own session's person. Answered with approvals off too, saying so."""
    if ctx.decisions is None:
        return "Approvals are not on in this gateway."
    said = await ctx.decisions.approve(ctx.key, rest, sender=ctx.msg.sender_id, channel=ctx.msg.channel,
                                       is_owner=ctx.is_owner, chat_type=ctx.msg.chat_type)
    return said or None


def answers_from_text(item: Pending, text: str) -> dict[str, list[str]]:
    """A typed answer as ``{questionId: [labels]}``: option numbers ("2", "1,3") pick labels, anything else is
    a free answer. Several questions take their answers in order, separated by ``|`` or new lines."""
    questions = [q for q in item.body if isinstance(q, dict)]
    parts = [p.strip() for p in re.split(r"\||\n", text)] if len(questions) > 1 else [text.strip()]
    out: dict[str, list[str]] = {}
    for question, part in zip(questions, parts, strict=False):
        labels = [str(o.get("label")) for o in question.get("options", []) if isinstance(o, dict)]
        picks = [p.strip() for p in part.split(",")]
        if picks and all(p.isdigit() and 1 <= int(p) <= len(labels) for p in picks):
            out[question["questionId"]] = [labels[int(p) - 1] for p in picks]
        else:
            by_label = next((lab for lab in labels if lab.lower() == part.lower()), None)
            out[question["questionId"]] = [by_label or part]
    return out


def forwarded_here(forwarding: ApprovalForwarding, item: Pending) -> bool:
    """Whether ``approvals.exec`` routes this request: its agent in ``agentFilter`` and its session key
    containing (or matching, as a regular expression) one of ``sessionFilter``, as OpenClaw filters."""
    if forwarding.agentFilter and item.agent_id not in forwarding.agentFilter:
        return False
    if forwarding.sessionFilter:
        return any(p in item.session_key or _search(p, item.session_key) for p in forwarding.sessionFilter)
    return True


def _search(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text[:2048]) is not None
    except re.error:  # not a regular expression: it was a substring only
        return False


def buttons(item: Pending) -> list[tuple[str, str]]:
    """The buttons under a request, each typing its ``/approve`` (one question: one button per option)."""
    if item.kind == "tool":
        return [
            ("✅ Allow once", f"/approve {item.id} allow-once"),
            ("♾️ Allow always", f"/approve {item.id} allow-always"),
            ("⛔ Deny", f"/approve {item.id} deny"),
        ]
    if len(item.body) != 1:
        return []
    return [(str(o.get("label")), f"/approve {item.id} {n}") for n, o in enumerate(item.body[0].get("options", []), 1)]


def prompt_text(item: Pending, *, short: bool = False) -> str:
    """What the chat is told when a run asks (``short``: without how to answer, once it is decided)."""
    if item.kind == "tool":
        head = f"🔐 The agent asks to use {item.command_text()}"
        if short:
            return head
        return (
            f"{head}\nReply /approve {item.id} allow-once, /approve {item.id} allow-always or /approve {item.id} deny"
        )
    lines = ["❓ The agent asks:"]
    for question in item.body:
        lines.append(f"[{question.get('header')}] {question.get('question')}")
        for n, option in enumerate(question.get("options", []), 1):
            desc = f" — {option['description']}" if option.get("description") else ""
            lines.append(f"  {n}. {option.get('label')}{desc}")
    if short:
        return "\n".join(lines)
    several = " (answers separated by |)" if len(item.body) > 1 else ""
    lines.append(f"Reply with a number or your own answer{several} (or /approve {item.id} <answer>)")
    return "\n".join(lines)


def outcome_text(item: Pending) -> str:
    """What the chat is told once the request is decided, expired or cancelled."""
    who = f" by {item.resolved_by}" if item.resolved_by else ""
    if item.kind == "tool":
        what = item.command_text()
        if item.status == "allowed":
            return f"✅ {'Allowed always' if item.decision == 'allow-always' else 'Allowed once'}{who}: {what}"
        if item.status == "expired":
            return f"⌛ Nobody decided in time, denied: {what}"
        if item.status == "cancelled":
            return f"✖️ Withdrawn (the run ended): {what}"
        return f"⛔ Denied{who}: {what}"
    if item.status == "answered":
        answers = "; ".join(", ".join(v) for v in (item.answers or {}).values())
        return f"✅ Answered{who}: {answers}"
    if item.status == "expired":
        return "⌛ Nobody answered in time; the agent goes on without an answer."
    return "✖️ The question was withdrawn."


class ChatApprovals:
    """Tells the session's chat about requests, and turns what is typed there into decisions."""

    def __init__(self, db: Database, config: ConfigStore, platforms: Callable[[], ChatPlatforms | None],
                 service: Requests, audit: Auditor | None = None) -> None:
        self._db = db
        self._audit = audit
        self._config = config
        self._platforms = platforms
        """The chat platforms, once attached (they start after the capabilities)."""
        self._service = service
        self._shown: dict[str, list[tuple[Origin, str | None]]] = {}
        """Request id -> the chats told and the message with its buttons there (edited to the outcome once
        decided), or None where it went as plain text (the outcome then follows as a message)."""

    async def present(self, phase: str, item: Pending) -> None:
        if item.status == "allowed" and item.reason == "rule":
            return  # answered by a stored rule: nobody was asked, nothing to tell
        platforms = self._platforms()
        if platforms is None:
            return
        if phase == "requested":
            shown: list[tuple[Origin, str | None]] = []
            for origin in await self.routes(item):
                try:
                    shown.append((origin, await platforms.ask(origin, prompt_text(item), buttons(item),
                                                              item.session_key)))
                except Exception as exc:  # one unreachable target must not keep the request from the others
                    log.warning("an approval request could not be told", id=item.id, channel=origin.channel,
                                to=origin.to, error=str(exc))
                    shown.append((origin, None))  # the outcome is still tried there: it may be back by then
            self._shown[item.id] = shown
            return
        told = self._shown.pop(item.id, None)
        if told is None:
            told = [(origin, None) for origin in await self.routes(item)]
        for origin, message_id in told:
            try:
                if message_id is not None and await platforms.settle(
                    origin, message_id, f"{prompt_text(item, short=True)}\n{outcome_text(item)}"
                ):
                    continue
                await platforms.deliver(origin, outcome_text(item), item.session_key)
            except Exception as exc:
                log.warning("an approval outcome could not be told", id=item.id, channel=origin.channel,
                            to=origin.to, error=str(exc))

    async def routes(self, item: Pending) -> list[Origin]:
        """Where a request is told: the session's chat, and/or the targets of ``approvals.exec`` (tool uses)."""
        forwarding = self._config.config.approvals.exec
        forwarded = item.kind == "tool" and forwarding.enabled and forwarded_here(forwarding, item)
        out: list[Origin] = []
        if not forwarded or forwarding.mode in ("session", "both"):
            own = await self._route(item.session_key)
            if own is not None:
                out.append(own)
        if forwarded and forwarding.mode in ("targets", "both"):
            for target in forwarding.targets:
                origin = Origin(channel=target.channel, account_id=target.accountId, to=target.to,
                                chat_type="group", thread_id=str(target.threadId) if target.threadId else None)
                if not any((o.channel, o.to, o.thread_id) == (origin.channel, origin.to, origin.thread_id)
                           for o in out):
                    out.append(origin)
        return out

    async def _route(self, session_key: str) -> Origin | None:
        async with self._db.session() as s:
            row = await SessionRepo.get(s, session_key)
        if row is None or not row.channel or not row.peer_id:  # a session of the web chat (or of no chat yet)
            return Origin(channel="webchat", account_id=None, to=session_key, chat_type="dm")
        return Origin(
            channel=row.channel,
            account_id=row.account_id,
            to=row.peer_id,
            chat_type=row.chat_type or "dm",
            thread_id=row.thread_id,
        )

    def awaits_answer(self, key: str, *, is_owner: bool, chat_type: str) -> bool:
        """Whether what this sender says here now would answer a pending question (so a voice note of theirs is
        worth transcribing as the answer): a question of this session waits, and they may answer it."""
        service = self._service
        if not (is_owner or chat_type == "dm"):
            return False
        return any(i.kind == "question" for i in service.pending_for(key))

    async def handle(
        self, key: str, text: str, *, sender: str, channel: str, is_owner: bool, chat_type: str
    ) -> str | None:
        """The answer to tell the chat when ``text`` was an approval (``/approve``) or the free answer to a question
        pending in the session; None when it was neither."""
        parsed = commands.parse(text)
        if parsed is not None and parsed[0].handler is approve:
            return await self.approve(key, parsed[1], sender=sender, channel=channel, is_owner=is_owner,
                                      chat_type=chat_type)
        if not text.strip():  # a photo or a voice note stays a message
            return None
        pending_questions = [i for i in self._service.pending_for(key) if i.kind == "question"]
        if not pending_questions:  # asked at another replica (a node turn's shim connected there)?
            pending_questions = await self._service.questions_elsewhere(key)
        if not pending_questions:
            return None
        item = pending_questions[0]
        if not (is_owner or (chat_type == "dm" and item.session_key == key)):
            return None  # a typed message from someone else is just a message
        return await self._decide(item, text.strip(), f"{channel}:{sender}")

    async def approve(self, key: str, rest: str, *, sender: str, channel: str, is_owner: bool,
                      chat_type: str) -> str:
        """``/approve <id> <decision or answer>``: "" when decided (the outcome message says so), else why not."""
        words = rest.split(None, 1)
        if not words:
            return USAGE
        request_id, answer = words[0], (words[1] if len(words) > 1 else "")
        item = await self._service.get(request_id)
        if item is None:
            return f"⚠️ No request {request_id}."
        if not (is_owner or (chat_type == "dm" and item.session_key == key)):
            return DECISION_REFUSED
        return await self._decide(item, answer.strip(), f"{channel}:{sender}")

    async def _decide(self, item: Pending, rest: str, who: str) -> str:
        service = self._service
        try:
            if item.kind == "tool":
                decision = _DECISIONS.get(rest.lower())
                if decision is None:
                    return USAGE
                decided = await service.decide(item.id, decision, who)  # type: ignore[arg-type]
            else:
                if not rest:
                    return USAGE
                decided = await service.answer(item.id, answers_from_text(item, rest), who)
        except RpcError as exc:
            return f"⚠️ {exc.message}"
        if self._audit is not None:
            await self._audit.record(f"sender:{who}", *decided.audit())
        return ""  # decided: the outcome message says so
