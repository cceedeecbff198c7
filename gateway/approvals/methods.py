"""Approval and question methods: OpenClaw's names and shapes for operators, two of ours for agent runs.

Operators (``operator.approvals`` for tool uses, ``operator.questions`` for questions), as OpenClaw's Control UI
calls them: ``exec.approval.list|get|resolve|waitDecision``, ``approval.get|history|resolve``,
``question.list|get|resolve|waitAnswer``; ``plugin.approval.list`` and ``openclaw.approval.list`` stay empty
(no plugin or system agent asks here). The "allow always" rules: ``approvals.rules.list|revoke`` (OpenClaw's
``exec.approval.grants.*`` are standing grants of cron jobs, another thing).

Agent runs (the MCP shim's ``approval_prompt`` and ``ask_user``, baseline tier, ``operator.write``):
``approvals.ask`` and ``questions.ask`` open a request under an id the shim chose (asking again with the same id
is the same request), ``approvals.wait`` waits a bounded time for its outcome; the shim repeats the wait, so
a decision made while its socket reconnects still reaches it.

Every decision, answer, cancel and rule revoked by an operator goes to the audit log (``approval.resolve``,
``question.answer``, ``question.cancel``, ``approval.rule.revoke``); decisions typed in a chat are recorded by
``chat.py``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from gateway.access import Access
from gateway.approvals.pending import Decision, Pending
from gateway.approvals.service import APPROVALS_SERVICE, ApprovalService
from gateway.dispatch.dispatcher import APPROVALS, QUESTIONS, WRITE, CallContext, NoParams, Params, method
from gateway.protocol import ApprovalNotFound, InvalidRequest
from gateway.sessions.service import parse_key

__all__: list[str] = []

ID = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
MAX_WAIT_MS = 60_000
"""The longest one wait call holds (the shim's request timeout is longer; it asks again)."""


def _service(ctx: CallContext) -> ApprovalService:
    return ctx.service(APPROVALS_SERVICE)


def _who(ctx: CallContext, reviewer: Reviewer | None = None, resolved_by: str | None = None) -> str:
    """Who decided, as the history and the chat show it."""
    if reviewer is not None:
        return f"{reviewer.channel}:{reviewer.senderId}"
    if resolved_by:
        return resolved_by
    caller = ctx.caller
    return caller.display_name or caller.device_id or caller.client_id


# -- operators: tool uses -----------------------------------------------------------------------


class IdParams(Params):
    id: str = ID


class Reviewer(Params):
    channel: str = Field(min_length=1)
    accountId: str = Field(min_length=1)
    senderId: str = Field(min_length=1)


class ExecResolveParams(Params):
    id: str = ID
    decision: str = Field(min_length=1, max_length=32)
    """OpenClaw's schema takes any string here; ours are checked by ``_decision`` (a refusal naming it)."""
    reviewer: Reviewer | None = None


def _decision(value: str) -> Decision:
    if value not in ("allow-once", "allow-always", "deny"):
        raise InvalidRequest(
            f"decision: {value!r} is not allow-once, allow-always or deny", details={"field": "decision"}
        )
    return value  # type: ignore[return-value]


class ApprovalResolveParams(Params):
    id: str = ID
    kind: Literal["exec", "plugin", "system-agent"]
    decision: Literal["allow-once", "allow-always", "deny"]
    reviewer: Reviewer | None = None


class WaitParams(Params):
    id: str = ID
    timeoutMs: int = Field(30_000, ge=1, le=MAX_WAIT_MS)


class HistoryParams(Params):
    limit: int = Field(50, ge=1, le=100)
    kind: Literal["exec", "plugin", "system-agent"] | None = None


async def _tool(ctx: CallContext, approval_id: str) -> Pending:
    """The tool-use request the id names. Whether the caller may read or decide it was decided before the handler
    ran (``gateway.access``, the ``approval`` finder: as the session that asked); unknown: ``APPROVAL_NOT_FOUND``."""
    item = await _service(ctx).get(approval_id)
    if item is None or item.kind != "tool":
        raise ApprovalNotFound(f"unknown approval id: {approval_id}", details={"field": "id"})
    return item


async def _readable(ctx: CallContext, items: list[Pending]) -> list[Pending]:
    """The requests the caller may read, as the access model decides each one's session (a list never shows
    what a get would refuse)."""
    sessions = {key: await ctx.access.session(key, "approval") for key in {i.session_key for i in items}}
    return ctx.access.visible(ctx.caller, items, lambda i: sessions[i.session_key])


@method("exec.approval.list", access=Access("approval", "read", each=True), scope=APPROVALS)
async def exec_approval_list(_p: NoParams, ctx: CallContext) -> list[dict[str, Any]]:
    """Tool uses waiting for a decision (OpenClaw's pending ``ApprovalSnapshot`` list)."""
    return [i.snapshot() for i in await _readable(ctx, await _service(ctx).pending_everywhere("tool"))]


@method("plugin.approval.list", access=Access("approval", "read", each=True), scope=APPROVALS)
async def plugin_approval_list(_p: NoParams, _ctx: CallContext) -> list[dict[str, Any]]:
    """Plugin actions waiting for approval: none (no plugin asks here)."""
    return []


@method("openclaw.approval.list", access=Access("approval", "read", each=True), scope=APPROVALS)
async def openclaw_approval_list(_p: NoParams, _ctx: CallContext) -> list[dict[str, Any]]:
    """System-agent actions waiting for approval: none (there is no system agent here)."""
    return []


@method("exec.approval.get", access=Access("approval", "read", ("id",)), params=IdParams, scope=APPROVALS)
async def exec_approval_get(p: IdParams, ctx: CallContext) -> dict[str, Any]:
    """One tool-use request, pending or decided: ``{approval}``."""
    return {"approval": (await _tool(ctx, p.id)).snapshot()}


@method("approval.get", access=Access("approval", "read", ("id",)), params=IdParams, scope=APPROVALS)
async def approval_get(p: IdParams, ctx: CallContext) -> dict[str, Any]:
    """One request, pending or decided: ``{approval}``."""
    return {"approval": (await _tool(ctx, p.id)).snapshot()}


@method("approval.history", access=Access("approval", "read", each=True), params=HistoryParams, scope=APPROVALS)
async def approval_history(p: HistoryParams, ctx: CallContext) -> dict[str, Any]:
    """Decided tool-use requests, newest first (kept ``approvals.keepDays``)."""
    if p.kind not in (None, "exec"):
        return {"items": []}
    items = await _service(ctx).history("tool", p.limit * 2)
    return {"items": [i.snapshot() for i in await _readable(ctx, [i for i in items if not i.pending])][: p.limit]}


@method("exec.approval.resolve", access=Access("approval", "write", ("id",)), params=ExecResolveParams, scope=APPROVALS)
async def exec_approval_resolve(p: ExecResolveParams, ctx: CallContext) -> dict[str, Any]:
    """Decide a tool use: allow once, allow always (stored as a rule for the agent), or deny. First wins."""
    await _tool(ctx, p.id)
    item = await _service(ctx).decide(p.id, _decision(p.decision), _who(ctx, p.reviewer))
    await ctx.audit(*_audited(item, p.reviewer))
    return {"ok": True, "approval": item.snapshot()}


@method("approval.resolve", access=Access("approval", "write", ("id",)), params=ApprovalResolveParams, scope=APPROVALS)
async def approval_resolve(p: ApprovalResolveParams, ctx: CallContext) -> dict[str, Any]:
    """Decide a request by kind (only ``exec`` requests exist here): ``{applied, approval}``."""
    if p.kind != "exec":
        raise ApprovalNotFound(f"unknown {p.kind} approval id: {p.id}", details={"field": "id"})
    await _tool(ctx, p.id)
    item = await _service(ctx).decide(p.id, p.decision, _who(ctx, p.reviewer))
    await ctx.audit(*_audited(item, p.reviewer))
    return {"applied": True, "approval": item.snapshot()}


def _audited(item: Pending, reviewer: Reviewer | None = None) -> tuple[str, str, dict[str, Any]]:
    """The audit log's row for an operator's decision; a reviewer is the chat user it was made for."""
    action, target, details = item.audit()
    return action, target, {**details, "reviewer": f"{reviewer.channel}:{reviewer.senderId}" if reviewer else None,
                            "resolvedBy": item.resolved_by}


@method("exec.approval.waitDecision", access=Access("approval", "read", ("id",)), params=WaitParams, scope=APPROVALS)
async def exec_approval_wait(p: WaitParams, ctx: CallContext) -> dict[str, Any]:
    """Wait (at most ``timeoutMs``) for a tool use to be decided: ``{approval}``, still pending if not."""
    await _tool(ctx, p.id)
    return {"approval": (await _service(ctx).wait(p.id, p.timeoutMs / 1000)).snapshot()}


# -- operators: questions -----------------------------------------------------------------------


class QuestionAnswers(Params):
    answers: dict[str, list[str]]


class QuestionResolveParams(Params):
    id: str = ID
    answers: QuestionAnswers | None = None
    cancel: Literal[True] | None = None
    resolvedBy: str | None = Field(None, min_length=1, max_length=200)


async def _question(ctx: CallContext, question_id: str) -> Pending:
    item = await _service(ctx).get(question_id)
    if item is None or item.kind != "question":  # whose it is was decided before (the approval finder)
        raise ApprovalNotFound(f"unknown question id: {question_id}", details={"field": "id"})
    return item


@method("question.list", access=Access("approval", "read", each=True), scope=QUESTIONS)
async def question_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Agents' questions waiting for an answer (OpenClaw's ``QuestionListResult``)."""
    pending = await _service(ctx).pending_everywhere("question")
    return {"questions": [i.question_record() for i in await _readable(ctx, pending)]}


@method("question.get", access=Access("approval", "read", ("id",)), params=IdParams, scope=QUESTIONS)
async def question_get(p: IdParams, ctx: CallContext) -> dict[str, Any]:
    """One question, pending or answered: ``{question}``."""
    return {"question": (await _question(ctx, p.id)).question_record()}


@method("question.resolve", access=Access("approval", "write", ("id",)), params=QuestionResolveParams, scope=QUESTIONS)
async def question_resolve(p: QuestionResolveParams, ctx: CallContext) -> dict[str, Any]:
    """Answer a question (``answers.answers: {questionId: [labels or free text]}``) or cancel it."""
    if (p.answers is None) == (p.cancel is None):
        raise InvalidRequest("question.resolve takes either answers or cancel: true", details={"field": "answers"})
    by = _who(ctx, resolved_by=p.resolvedBy)
    await _question(ctx, p.id)
    if p.cancel:
        await ctx.audit(*_audited(await _service(ctx).cancel(p.id, by)))
        return {"status": "cancelled"}
    assert p.answers is not None
    item = await _service(ctx).answer(p.id, p.answers.answers, by)
    await ctx.audit(*_audited(item))
    return {"status": "answered", "answers": {"answers": item.answers or {}}}


@method("question.waitAnswer", access=Access("approval", "read", ("id",)), params=WaitParams, scope=QUESTIONS)
async def question_wait(p: WaitParams, ctx: CallContext) -> dict[str, Any]:
    """Wait (at most ``timeoutMs``) for a question's answer (OpenClaw's ``QuestionWaitAnswerResult``)."""
    await _question(ctx, p.id)
    item = await _service(ctx).wait(p.id, p.timeoutMs / 1000)
    if item.status == "answered":
        return {"status": "answered", "answers": {"answers": item.answers or {}}}
    return {"status": item.status}


# -- allow-always rules -------------------------------------------------------------------------


class RulesListParams(Params):
    agentId: str | None = Field(None, min_length=1, max_length=128)
    includeRevoked: bool = False


class RuleRevokeParams(Params):
    id: str = ID


@method("approvals.rules.list", access=Access("approval", "read", each=True), params=RulesListParams, scope=APPROVALS)
async def rules_list(p: RulesListParams, ctx: CallContext) -> dict[str, Any]:
    """The "allow always" rules: per agent, a tool pattern that no longer asks."""
    rules = await _service(ctx).rules(p.agentId, include_revoked=p.includeRevoked)
    return {
        "rules": [
            {
                "id": r.id,
                "agentId": r.agent_id,
                "pattern": r.pattern,
                "approvalId": r.approval_id,
                "createdBy": r.created_by,
                "createdAtMs": r.created_at,
                "revokedAtMs": r.revoked_at,
                "revokedBy": r.revoked_by,
                "lastUsedAtMs": r.last_used_at,
                "useCount": r.use_count,
            }
            for r in rules
        ]
    }


@method("approvals.rules.revoke", access=Access("config", "admin"), params=RuleRevokeParams, scope=APPROVALS)
async def rules_revoke(p: RuleRevokeParams, ctx: CallContext) -> dict[str, Any]:
    """Revoke an "allow always" rule: the tool asks again. ``outcome``: revoked, already-revoked, not-found."""
    outcome = await _service(ctx).revoke_rule(p.id, _who(ctx))
    if outcome == "revoked":
        await ctx.audit("approval.rule.revoke", f"approval-rule:{p.id}")
    return {"outcome": outcome}


# -- agent runs -----------------------------------------------------------------------------------


class AskParams(Params):
    id: str = ID
    sessionKey: str = Field(min_length=1, max_length=512)
    toolName: str = Field(min_length=1, max_length=200)
    input: dict[str, Any]
    toolUseId: str | None = Field(None, max_length=200)
    idempotencyKey: str | None = Field(None, max_length=200)


class QuestionOption(Params):
    label: str = Field(min_length=1, max_length=200)
    description: str | None = Field(None, max_length=1000)


class Question(Params):
    questionId: str = Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)
    header: str = Field(max_length=12)
    question: str = Field(min_length=1, max_length=2000)
    options: list[QuestionOption] = Field(min_length=2, max_length=4)
    multiSelect: bool = False


class QuestionsAskParams(Params):
    id: str = ID
    sessionKey: str = Field(min_length=1, max_length=512)
    questions: list[Question] = Field(min_length=1, max_length=3)
    timeoutSeconds: int | None = Field(None, ge=1, le=86_400)
    idempotencyKey: str | None = Field(None, max_length=200)


class AgentWaitParams(Params):
    id: str = ID
    sessionKey: str = Field(min_length=1, max_length=512)
    timeoutMs: int = Field(20_000, ge=1, le=MAX_WAIT_MS)


def _own_session(ctx: CallContext, session_key: str) -> str:
    """The asking session's agent. Whether the caller may ask as that session was decided before the handler ran
    (``write`` on the session named by ``sessionKey``: a run its own session and the ones it spawned)."""
    return parse_key(session_key)[0]


@method("approvals.ask", access=Access("session", "write", ("sessionKey",)),
        params=AskParams, scope=WRITE, baseline=True)
async def approvals_ask(p: AskParams, ctx: CallContext) -> dict[str, Any]:
    """An agent run asks whether it may use a tool; answers at once with the request's state."""
    agent = _own_session(ctx, p.sessionKey)
    item = await _service(ctx).ask_tool(p.id, agent, p.sessionKey, p.toolName, p.input)
    return item.state()


@method("questions.ask", access=Access("session", "write", ("sessionKey",)),
        params=QuestionsAskParams, scope=WRITE, baseline=True)
async def questions_ask(p: QuestionsAskParams, ctx: CallContext) -> dict[str, Any]:
    """An agent run puts 1-3 questions to its person; answers at once with the request's state."""
    agent = _own_session(ctx, p.sessionKey)
    questions = [q.model_dump(exclude_none=True) for q in p.questions]
    ids = [q["questionId"] for q in questions]
    if len(set(ids)) != len(ids):
        raise InvalidRequest("questions: each questionId must be different", details={"field": "questions"})
    item = await _service(ctx).ask_question(p.id, agent, p.sessionKey, questions, p.timeoutSeconds)
    return item.state()


@method("approvals.wait", access=Access("session", "read", ("sessionKey",)),
        params=AgentWaitParams, scope=WRITE, baseline=True)
async def approvals_wait(p: AgentWaitParams, ctx: CallContext) -> dict[str, Any]:
    """Wait (at most ``timeoutMs``) for the outcome of a request this session asked."""
    _own_session(ctx, p.sessionKey)
    item = await _service(ctx).get(p.id)
    if item is None or item.session_key != p.sessionKey:
        raise ApprovalNotFound(f"unknown approval id: {p.id}", details={"field": "id"})
    return (await _service(ctx).wait(p.id, p.timeoutMs / 1000)).state()
