"""The approvals service: requests an agent run puts to its person, held until someone decides.

Why in the gateway and not in the shim: the person decides from wherever they are (a chat button, ``/approve``
typed in any channel, OpenClaw's Control UI), possibly while the shim's socket is reconnecting or on another
replica's socket. So a request is keyed by an id the shim chose, kept here with a future, and the shim asks
again (``wait``) until it is decided: a decision made meanwhile is still there when it comes back.

Rules of a decision: the first one wins, a second is refused saying who decided; a request whose run ended is
cancelled (``run-aborted``) and a late decision is refused with that reason; a request nobody decides in time
expires (a tool use as a deny, a question as ``no_answer``). Every change is an event to the operators
holding ``operator.approvals`` (tool uses) or ``operator.questions`` (questions), and goes to the presenters
the chat platforms registered (``add_presenter``), so each can show buttons and edit them afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from sqlalchemy import delete, select, update

from gateway.approvals.pending import Decision, Kind, Pending
from gateway.approvals.store import ApprovalRequest, ApprovalRule
from gateway.composition.ports import AUDIT, CHAT_DECISIONS, RUN_WATCHERS, TOOL_APPROVALS
from gateway.composition.services import Key
from gateway.dispatch.dispatcher import APPROVALS, QUESTIONS
from gateway.protocol import ApprovalNotFound, InvalidRequest
from gateway.store.db import rowcount

if TYPE_CHECKING:
    from gateway.access.doors import AccessControl, ObjectFinder
    from gateway.access.objects import Obj
    from gateway.approvals.chat import ChatApprovals
    from gateway.bus import EventBus
    from gateway.composition.callable_types import Broadcast, Spawn
    from gateway.composition.hosts import CapabilityHost
    from gateway.config import ConfigStore
    from gateway.store import Database

__all__ = ["APPROVALS_SERVICE", "ApprovalService", "Presenter", "now_ms", "rule_pattern", "start"]

log = structlog.get_logger("gateway.approvals")

Presenter = Callable[[str, Pending], Awaitable[None]]
"""``(phase, request)``: ``requested`` when it is asked, ``resolved`` when decided, expired or cancelled."""

PRUNE_EVERY_S = 3600.0
DECIDED = "approval.decided"
"""The control message telling the replica holding a request that another replica decided it (``gateway.bus``)."""


def now_ms() -> int:
    return int(time.time() * 1000)


def rule_pattern(tool_name: str, tool_input: Any) -> str:
    """The pattern an "allow always" stores: the exact command for a shell tool (allowing ``git status`` must not
    allow ``rm -rf``), the tool name for any other tool."""
    if tool_name == "Bash" and isinstance(tool_input, dict) and isinstance(tool_input.get("command"), str):
        return f"Bash({tool_input['command']})"
    return tool_name


def _matches(pattern: str, tool_name: str, tool_input: Any) -> bool:
    return fnmatch.fnmatchcase(rule_pattern(tool_name, tool_input), pattern)


class ApprovalService:
    """Pending requests of this gateway, their history rows, and the "allow always" rules."""

    def __init__(self, db: Database, config: ConfigStore, broadcast: Broadcast, spawn: Spawn,
                 waiting: Callable[[str, bool], None], holder: str | None = None, bus: EventBus | None = None
                 ) -> None:
        self._db = db
        self._holder = holder
        """This replica's id, stamped on the rows of the requests asked here."""
        self._bus = bus
        """Where a decision made here of another replica's request is told to it (``DECIDED``)."""
        self._config = config
        self._broadcast = broadcast
        self._spawn = spawn
        self._waiting = waiting
        """Tells a session's progress note whether anything of its run waits for the person."""
        self._items: dict[str, Pending] = {}
        self._presenters: list[Presenter] = []
        self._lock = asyncio.Lock()
        self._prune_task: asyncio.Task[None] | None = None
        self.chat: ChatApprovals | None = None
        """Requests told in the session's chat and decided by typing there (``gateway.approvals.chat``)."""

    # -- wiring -------------------------------------------------------------------------------

    def add_presenter(self, presenter: Presenter) -> None:
        """Called for every request asked and decided (a chat platform shows and edits its buttons)."""
        self._presenters.append(presenter)

    @property
    def tool_timeout_s(self) -> float:
        return float(self._config.config.approvals.timeoutSeconds)

    @property
    def question_timeout_s(self) -> float:
        return float(self._config.config.approvals.questionTimeoutSeconds)

    # -- asking -------------------------------------------------------------------------------

    async def ask_tool(
        self, request_id: str, agent_id: str, session_key: str, tool_name: str, tool_input: Any
    ) -> Pending:
        """Ask whether ``agent_id`` may use ``tool_name`` with ``tool_input``; the same id asked again (the
        shim after a reconnect) is the same request. A stored "allow always" rule answers at once."""
        known = await self.get(request_id)
        if known is not None:
            self._check_same(known, session_key)
            return known
        now = now_ms()
        item = Pending(
            id=request_id,
            kind="tool",
            agent_id=agent_id,
            session_key=session_key,
            body=tool_input,
            created_at=now,
            expires_at=now + int(self.tool_timeout_s * 1000),
            tool_name=tool_name,
        )
        rule = await self._matching_rule(agent_id, tool_name, tool_input)
        if rule is not None:
            item.status, item.decision, item.reason = "allowed", "allow-always", "rule"
            item.resolved_by, item.resolved_at = f"rule:{rule}", now
            item.done.set()
            self._items[item.id] = item
            await self._insert(item)
            asyncio.get_running_loop().call_later(300, self._items.pop, item.id, None)
            return item
        return await self._open(item, self.tool_timeout_s)

    async def ask_question(
        self, request_id: str, agent_id: str, session_key: str, questions: list[dict[str, Any]], timeout_s: float | None
    ) -> Pending:
        """Put questions to the person; the same id asked again is the same request."""
        known = await self.get(request_id)
        if known is not None:
            self._check_same(known, session_key)
            return known
        timeout = timeout_s if timeout_s is not None else self.question_timeout_s
        now = now_ms()
        item = Pending(
            id=request_id,
            kind="question",
            agent_id=agent_id,
            session_key=session_key,
            body=questions,
            created_at=now,
            expires_at=now + int(timeout * 1000),
        )
        return await self._open(item, timeout)

    @staticmethod
    def _check_same(known: Pending, session_key: str) -> None:
        if known.session_key != session_key:
            raise InvalidRequest(f"id {known.id} is already used by another session", details={"field": "id"})

    async def _open(self, item: Pending, timeout_s: float) -> Pending:
        self._items[item.id] = item
        await self._insert(item)
        item.timer = asyncio.get_running_loop().call_later(timeout_s, self._expire_soon, item.id)
        self._announce("requested", item)
        return item

    async def ask_and_wait(self, agent_id: str, session_key: str, tool_name: str, tool_input: Any) -> dict[str, Any]:
        """Ask about a tool use from inside the gateway (a runtime whose CLI asks its client, Codex's app-server)
        and wait for the outcome: decided, expired (a deny) or cancelled when the run ends."""
        item = await self.ask_tool(uuid.uuid4().hex, agent_id, session_key, tool_name, tool_input)
        await item.done.wait()
        return item.state()

    # -- waiting ------------------------------------------------------------------------------

    async def wait(self, request_id: str, timeout_s: float) -> Pending:
        """The request once decided, or as it is after ``timeout_s`` (still pending)."""
        item = await self.get(request_id)
        if item is None:
            raise ApprovalNotFound(f"unknown approval id: {request_id}", details={"field": "id"})
        if item.remote:  # its asker waits at another replica: the row says when it is decided
            return item
        if item.pending:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(item.done.wait(), timeout_s)
        if item.pending:  # decided at another replica whose message did not come: the row says so
            await self._settle_from_row(item.id)
        return item

    # -- deciding -----------------------------------------------------------------------------

    async def decide(self, request_id: str, decision: Decision, by: str) -> Pending:
        """Decide a tool use. The first decision wins; a later one is refused saying what happened."""
        async with self._lock:
            item = await self._decidable(request_id, "tool")
            item.status = "denied" if decision == "deny" else "allowed"
            item.decision, item.reason = decision, "user"
            await self._closed(item, by)
            if decision == "allow-always":
                await self._add_rule(item, by)
        return item

    async def answer(self, request_id: str, answers: dict[str, list[str]], by: str) -> Pending:
        """Answer a question (labels of its options, or free text). The first answer wins."""
        async with self._lock:
            item = await self._decidable(request_id, "question")
            asked = {q.get("questionId") for q in item.body if isinstance(q, dict)}
            unknown = sorted(set(answers) - asked)
            if unknown:
                raise InvalidRequest(
                    f"answers: unknown questionId {', '.join(unknown)} (asked: "
                    f"{', '.join(sorted(str(a) for a in asked))})",
                    details={"field": "answers"},
                )
            item.status, item.answers = "answered", answers
            await self._closed(item, by)
        return item

    async def cancel(self, request_id: str, by: str, *, reason: str = "cancelled") -> Pending:
        async with self._lock:
            item = await self._decidable(request_id, None)
            item.status, item.reason = ("denied" if item.kind == "tool" else "cancelled"), reason
            if item.kind == "tool":
                item.decision = "deny"
            await self._closed(item, by)
        return item

    async def _closed(self, item: Pending, by: str) -> None:
        if not await self._close(item, by):
            raise InvalidRequest(f"refused: {item.id} was already decided at another replica",
                                 details={"code": "ALREADY_RESOLVED", "status": item.status})

    async def _decidable(self, request_id: str, kind: Kind | None) -> Pending:
        item = await self.get(request_id)
        if item is None or (kind is not None and item.kind != kind):
            what = "question" if kind == "question" else "approval"
            raise ApprovalNotFound(f"unknown {what} id: {request_id}", details={"field": "id"})
        if item.pending:
            return item
        if item.reason in ("run-aborted", "gateway-restart"):
            raise InvalidRequest(
                f"refused: the run that asked {request_id} has ended",
                details={"code": "RUN_ENDED", "status": item.status},
            )
        if item.status == "expired":
            raise InvalidRequest(
                f"refused: {request_id} expired before anyone decided",
                details={"code": "EXPIRED", "status": item.status},
            )
        who = f" by {item.resolved_by}" if item.resolved_by else ""
        outcome = item.decision or item.status
        raise InvalidRequest(
            f"refused: {request_id} was already decided ({outcome}{who})",
            details={
                "code": "ALREADY_RESOLVED",
                "status": item.status,
                "decision": item.decision,
                "resolvedBy": item.resolved_by,
            },
        )

    async def run_ended(self, session_key: str) -> int:
        """The run of ``session_key`` ended: its pending requests are cancelled (a late decision is refused)."""
        ended = 0
        async with self._lock:
            for item in [i for i in self._items.values() if i.pending and i.session_key == session_key]:
                item.status, item.reason = "cancelled", "run-aborted"
                await self._close(item, None)
                ended += 1
        return ended

    def _expire_soon(self, request_id: str) -> None:
        self._spawn(self._expire(request_id), "approval-expiry")

    async def _expire(self, request_id: str) -> None:
        async with self._lock:
            item = self._items.get(request_id)
            if item is None or not item.pending:
                return
            item.status, item.reason = "expired", "timeout"
            if item.kind == "tool":
                item.decision = "deny"
            await self._close(item, None)

    async def _close(self, item: Pending, by: str | None) -> bool:
        """Record the outcome (False: another replica decided it first; its outcome is taken instead)."""
        item.resolved_by, item.resolved_at = by, now_ms()
        if item.timer is not None:
            item.timer.cancel()
        async with self._db.session() as s:
            result = await s.execute(  # first wins, whichever replica decides (the row is shared)
                update(ApprovalRequest)
                .where(ApprovalRequest.id == item.id, ApprovalRequest.status == "pending")
                .values(
                    status=item.status,
                    decision=item.decision,
                    reason=item.reason,
                    resolved_by=by,
                    resolved_at=item.resolved_at,
                    answers=orjson.dumps(item.answers).decode() if item.answers is not None else None,
                )
            )
        if not rowcount(result):  # decided meanwhile at another replica: that outcome stands
            await self._settle_from_row(item.id, raced=True)
            return False
        item.done.set()
        if item.remote:  # the replica holding it tells its asker, the operators and the chats
            if self._bus is None or not self._bus.publish_control(DECIDED, {"id": item.id}):
                log.warning("a decision of another replica's request could not be told to it now; it finds the "
                            "row when its asker asks again", id=item.id)
            return True
        self._announce("resolved", item)
        # Kept a while for waiters that come back after a reconnect; the row answers after that.
        asyncio.get_running_loop().call_later(300, self._items.pop, item.id, None)
        return True

    def remote_decided(self, payload: Any) -> None:
        """Another replica decided a request asked here (``DECIDED``): its row says how."""
        if isinstance(payload, dict) and isinstance(payload.get("id"), str) and payload["id"] in self._items:
            self._spawn(self._settle_from_row(payload["id"]), "approval-decided-elsewhere")

    async def _settle_from_row(self, request_id: str, *, raced: bool = False) -> None:
        """A request pending here that its row says is decided (at another replica): the asker, the operators and
        the chats learn the outcome as if it had been decided here. ``raced``: a decision here lost to that one
        (the item already holds what was tried here: the row's outcome replaces it)."""
        item = self._items.get(request_id)
        if item is None or (not item.pending and not raced) or item.done.is_set():
            return
        async with self._db.reading() as s:
            row = await s.get(ApprovalRequest, request_id)
        if row is None or row.status == "pending":
            return
        item.status, item.decision, item.reason = row.status, row.decision, row.reason
        item.answers, item.resolved_by, item.resolved_at = row.answers_json, row.resolved_by, row.resolved_at
        if item.timer is not None:
            item.timer.cancel()
        item.done.set()
        self._announce("resolved", item)
        asyncio.get_running_loop().call_later(300, self._items.pop, item.id, None)

    # -- reading ------------------------------------------------------------------------------

    async def get(self, request_id: str) -> Pending | None:
        item = self._items.get(request_id)
        if item is not None:
            return item
        async with self._db.session() as s:
            row = await s.get(ApprovalRequest, request_id)
        if row is None:
            return None
        item = Pending.from_row(row)
        if item.pending and row.holder is not None and row.holder != self._holder and row.expires_at > now_ms():
            item.remote = True  # asked at another replica, which waits on it: decided through the row
        elif item.pending:  # asked before a restart: nobody waits on it any more
            item.status, item.reason = "cancelled", "gateway-restart"
            item.done.set()
        return item

    def pending(self, kind: Kind) -> list[Pending]:
        return sorted((i for i in self._items.values() if i.pending and i.kind == kind), key=lambda i: i.created_at)

    async def pending_everywhere(self, kind: Kind) -> list[Pending]:
        """The pending requests of this replica and those other replicas hold (a node turn's shim asked there):
        what an operator's list shows, whichever replica it asks."""
        here = self.pending(kind)
        return sorted([*here, *await self._held_elsewhere(kind)], key=lambda i: i.created_at)

    async def questions_elsewhere(self, session_key: str) -> list[Pending]:
        """The questions of ``session_key`` other replicas hold, pending (a free answer typed here answers them)."""
        return await self._held_elsewhere("question", session_key)

    async def _held_elsewhere(self, kind: Kind, session_key: str | None = None) -> list[Pending]:
        if self._bus is None or not self._bus.url:  # one replica: its memory is everything
            return []
        q = select(ApprovalRequest).where(ApprovalRequest.status == "pending", ApprovalRequest.kind == kind,
                                          ApprovalRequest.holder.is_not(None), ApprovalRequest.holder != self._holder,
                                          ApprovalRequest.expires_at > now_ms())
        if session_key is not None:
            q = q.where(ApprovalRequest.session_key == session_key)
        async with self._db.reading() as s:
            rows = (await s.execute(q.order_by(ApprovalRequest.created_at))).scalars().all()
        elsewhere = [Pending.from_row(r) for r in rows if r.id not in self._items]
        for item in elsewhere:
            item.remote = True
        return elsewhere

    def pending_for(self, session_key: str) -> list[Pending]:
        return [i for i in self._items.values() if i.pending and i.session_key == session_key]

    async def history(self, kind: Kind, limit: int) -> list[Pending]:
        async with self._db.session() as s:
            rows = (
                (
                    await s.execute(
                        select(ApprovalRequest)
                        .where(ApprovalRequest.kind == kind)
                        .order_by(ApprovalRequest.created_at.desc())
                        .limit(limit)
                    )
                )
                .scalars()
                .all()
            )
        return [self._items.get(r.id) or Pending.from_row(r) for r in rows]

    # -- rules --------------------------------------------------------------------------------

    async def _matching_rule(self, agent_id: str, tool_name: str, tool_input: Any) -> str | None:
        async with self._db.session() as s:
            rules = (
                (
                    await s.execute(
                        select(ApprovalRule).where(ApprovalRule.agent_id == agent_id, ApprovalRule.revoked_at.is_(None))
                    )
                )
                .scalars()
                .all()
            )
            for rule in rules:
                if _matches(rule.pattern, tool_name, tool_input):
                    rule.use_count += 1
                    rule.last_used_at = now_ms()
                    return rule.id
        return None

    async def _add_rule(self, item: Pending, by: str) -> None:
        async with self._db.session() as s:
            s.add(
                ApprovalRule(
                    id=uuid.uuid4().hex[:16],
                    agent_id=item.agent_id,
                    pattern=rule_pattern(item.tool_name or "", item.body),
                    approval_id=item.id,
                    created_by=by,
                    created_at=now_ms(),
                    use_count=0,
                )
            )

    async def rules(self, agent_id: str | None = None, *, include_revoked: bool = False) -> list[ApprovalRule]:
        async with self._db.session() as s:
            q = select(ApprovalRule).order_by(ApprovalRule.created_at)
            if agent_id is not None:
                q = q.where(ApprovalRule.agent_id == agent_id)
            if not include_revoked:
                q = q.where(ApprovalRule.revoked_at.is_(None))
            return list((await s.execute(q)).scalars().all())

    async def revoke_rule(self, rule_id: str, by: str) -> str:
        """``revoked``, ``already-revoked`` or ``not-found`` (OpenClaw's ``ExecApprovalGrantsRevokeResult``)."""
        async with self._db.session() as s:
            rule = await s.get(ApprovalRule, rule_id)
            if rule is None:
                return "not-found"
            if rule.revoked_at is not None:
                return "already-revoked"
            rule.revoked_at, rule.revoked_by = now_ms(), by
        return "revoked"

    # -- storage and events -------------------------------------------------------------------

    async def _insert(self, item: Pending) -> None:
        async with self._db.session() as s:
            s.add(
                ApprovalRequest(
                    id=item.id,
                    kind=item.kind,
                    agent_id=item.agent_id,
                    session_key=item.session_key,
                    tool_name=item.tool_name,
                    body=orjson.dumps(item.body).decode(),
                    status=item.status,
                    decision=item.decision,
                    reason=item.reason,
                    resolved_by=item.resolved_by,
                    created_at=item.created_at,
                    expires_at=item.expires_at,
                    resolved_at=item.resolved_at,
                    holder=self._holder,
                )
            )

    async def forget_own(self) -> int:
        """Requests this replica's previous process held, still pending: nobody waits on them any more."""
        if self._holder is None:
            return 0
        async with self._db.session() as s:
            result = await s.execute(
                update(ApprovalRequest)
                .where(ApprovalRequest.holder == self._holder, ApprovalRequest.status == "pending")
                .values(status="cancelled", reason="gateway-restart", resolved_at=now_ms())
            )
        return rowcount(result)

    def _announce(self, phase: str, item: Pending) -> None:
        # the run's progress note: "waiting for you" while anything of it is pending
        self._waiting(item.session_key, bool(self.pending_for(item.session_key)))
        if item.kind == "tool":
            self._broadcast(f"exec.approval.{phase}", item.snapshot(), scope=APPROVALS)
        elif phase == "requested":
            self._broadcast("question.requested", item.question_record(), scope=QUESTIONS)
        else:
            self._broadcast("question.resolved", _question_resolved(item), scope=QUESTIONS)
        for presenter in self._presenters:
            self._spawn(self._present(presenter, phase, item), "approval-present")

    @staticmethod
    async def _present(presenter: Presenter, phase: str, item: Pending) -> None:
        try:
            await presenter(phase, item)
        except Exception:
            log.exception("showing an approval request failed", id=item.id, phase=phase)

    async def prune(self, keep_days: int) -> int:
        """History older than ``keep_days`` goes (the pending ones are in memory and stay)."""
        cutoff = now_ms() - keep_days * 86_400_000
        async with self._db.session() as s:
            result = await s.execute(
                delete(ApprovalRequest).where(ApprovalRequest.created_at < cutoff, ApprovalRequest.status != "pending")
            )
        return int(getattr(result, "rowcount", 0) or 0)

    async def _prune_loop(self) -> None:
        while True:
            try:
                await self.prune(self._config.config.approvals.keepDays)
            except Exception:
                log.exception("pruning approval history failed")
            await asyncio.sleep(PRUNE_EVERY_S)

    def start(self) -> None:
        self._prune_task = asyncio.create_task(self._prune_loop(), name="approvals-prune")

    async def stop(self) -> None:
        if self._prune_task is not None:
            self._prune_task.cancel()
        for item in list(self._items.values()):
            if item.timer is not None:
                item.timer.cancel()


def _question_resolved(item: Pending) -> dict[str, Any]:
    """OpenClaw's ``QuestionResolvedEvent``: answered (with the answers), cancelled or expired."""
    if item.status == "answered":
        return {"id": item.id, "status": "answered", "answers": {"answers": item.answers or {}}}
    return {"id": item.id, "status": "expired" if item.status == "expired" else "cancelled"}


APPROVALS_SERVICE: Key[ApprovalService] = Key("approvals")


def approval_finder(service: ApprovalService, access: AccessControl) -> ObjectFinder:
    """An approval or question id, as the access model decides it: the session that asked (its person, chat and
    parent), so ``approval.*``, ``exec.approval.*`` and ``question.*`` by id are decided as that conversation.
    None for an unknown id: the handler answers ``APPROVAL_NOT_FOUND``."""

    async def find(request_id: str) -> Obj | None:
        item = await service.get(request_id)
        return None if item is None else await access.session(item.session_key, "approval")

    return find


async def start(host: CapabilityHost) -> None:
    """Capability entry: the pending requests, told and decided in the chats; the agents see them as
    ``gateway.composition.ports`` (a typed ``/approve`` or answer, the end of a run)."""
    from gateway.approvals.chat import ChatApprovals

    service = ApprovalService(host.db, host.config_store, host.broadcast, host.spawn,
                              waiting=host.agents.waiting, holder=host.replica_id, bus=host.bus)
    await service.forget_own()
    if host.bus is not None:
        host.bus.on_control(DECIDED, service.remote_decided)
    service.chat = ChatApprovals(host.db, host.config_store, host.platforms, service, audit=host.services.find(AUDIT))
    service.add_presenter(service.chat.present)
    host.access.add_finder("approval", approval_finder(service, host.access))
    host.services.provide(APPROVALS_SERVICE, service)
    host.services.provide(RUN_WATCHERS, service)
    host.services.provide(TOOL_APPROVALS, service)
    host.services.provide(CHAT_DECISIONS, service.chat)
    service.start()
    host.on_stop(service.stop)
