"""Pending approvals and questions: ``exec.approval.list``, ``plugin.approval.list``,
``openclaw.approval.list`` and ``question.list``.

remoteclaw has no approvals capability yet: agent CLIs run with their own permission settings, and nothing
waits on an operator's decision. So nothing is ever pending, and each list is empty, in the shape
OpenClaw's Control UI reads (the approval lists are bare arrays of pending records; ``question.list`` is
``QuestionListResult``). The approvals issue replaces these with real stores, keeping the shapes.
"""

from __future__ import annotations

from typing import Any

from gateway.rpc import APPROVALS, QUESTIONS, CallContext, NoParams, method


@method("exec.approval.list", scope=APPROVALS)
async def exec_approval_list(_p: NoParams, _ctx: CallContext) -> list[dict[str, Any]]:
    """Command runs waiting for approval: none, since no agent run asks (see the module docstring)."""
    return []


@method("plugin.approval.list", scope=APPROVALS)
async def plugin_approval_list(_p: NoParams, _ctx: CallContext) -> list[dict[str, Any]]:
    """Plugin actions waiting for approval: none."""
    return []


@method("openclaw.approval.list", scope=APPROVALS)
async def openclaw_approval_list(_p: NoParams, _ctx: CallContext) -> list[dict[str, Any]]:
    """System-agent actions waiting for approval: none."""
    return []


@method("question.list", scope=QUESTIONS)
async def question_list(_p: NoParams, _ctx: CallContext) -> dict[str, Any]:
    """Agents' questions waiting for an answer: none."""
    return {"questions": []}
