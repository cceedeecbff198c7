"""One request an agent run put to its person, as the approvals service holds it, and how it is shown: the state the
asking shim is told, OpenClaw's ``ApprovalSnapshot`` and ``QuestionRecord``, a one-line preview of the tool use.
Plain data (its row in ``store.py`` aside), so the chat side and the methods can name a request without the
service."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from gateway.approvals.store import ApprovalRequest

__all__ = ["Decision", "Kind", "Pending"]

Decision = Literal["allow-once", "allow-always", "deny"]
Kind = Literal["tool", "question"]


@dataclass(slots=True)
class Pending:
    """One request, as the service holds it while it is pending (and a moment after, for late waiters)."""

    id: str
    kind: Kind
    agent_id: str
    session_key: str
    body: Any
    """The tool input, or the questions (OpenClaw's ``QuestionRequestQuestion`` list)."""
    created_at: int
    expires_at: int
    tool_name: str | None = None
    status: str = "pending"
    decision: str | None = None
    reason: str | None = None
    answers: dict[str, list[str]] | None = None
    resolved_by: str | None = None
    resolved_at: int | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    timer: asyncio.TimerHandle | None = None
    remote: bool = False
    """Pending in another replica's memory (a node turn's shim asked there): decided here through its row."""

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    def state(self) -> dict[str, Any]:
        """What the asking shim is told: the status and, once decided, the decision or the answers."""
        out: dict[str, Any] = {"id": self.id, "status": self.status, "expiresAtMs": self.expires_at}
        for key, value in (
            ("decision", self.decision),
            ("reason", self.reason),
            ("answers", self.answers),
            ("resolvedBy", self.resolved_by),
        ):
            if value is not None:
                out[key] = value
        return out

    def command_text(self) -> str:
        """A readable one-line preview of the tool use (the command, the file), for buttons and lists."""
        inp = self.body if isinstance(self.body, dict) else {}
        for key in ("command", "file_path", "path", "url", "pattern"):
            if isinstance(inp.get(key), str) and inp[key]:
                return f"{self.tool_name}: {inp[key]}"
        text = orjson.dumps(inp).decode()
        return f"{self.tool_name}: {text[:300]}" if inp else str(self.tool_name)

    def snapshot(self) -> dict[str, Any]:
        """OpenClaw's ``ApprovalSnapshot`` (pending, allowed, denied or expired) for a tool use."""
        out: dict[str, Any] = {
            "id": self.id,
            "urlPath": f"/approvals/{self.id}",
            "createdAtMs": self.created_at,
            "expiresAtMs": self.expires_at,
            "presentation": {
                "kind": "exec",
                "commandText": self.command_text(),
                "agentId": self.agent_id,
                "allowedDecisions": ["allow-once", "allow-always", "deny"],
            },
            "status": self.status,
        }
        if self.pending:
            out["sourceSessionKey"] = self.session_key
            return out
        out["resolvedAtMs"] = self.resolved_at or self.created_at
        out["source"] = {"agentId": self.agent_id, "sessionKey": self.session_key}
        if self.resolved_by:
            out["resolver"] = {"kind": "channel" if ":" in self.resolved_by else "device", "id": self.resolved_by}
        else:
            out["resolver"] = {"kind": "system"}
        if self.status == "expired":
            out["reason"] = "timeout"
        elif self.status == "cancelled":
            out["reason"] = self.reason if self.reason in ("run-aborted", "gateway-restart") else "run-aborted"
        else:
            out["decision"] = self.decision
            out["reason"] = "user"
        return out

    def question_record(self) -> dict[str, Any]:
        """OpenClaw's ``QuestionRecord`` for a question."""
        out: dict[str, Any] = {
            "id": self.id,
            "questions": self.body,
            "agentId": self.agent_id,
            "sessionKey": self.session_key,
            "createdAtMs": self.created_at,
            "expiresAtMs": self.expires_at,
            "status": self.status,
        }
        if self.answers is not None:
            out["answers"] = {"answers": self.answers}
        if self.resolved_by:
            out["resolvedBy"] = self.resolved_by
        return out

    def audit(self) -> tuple[str, str, dict[str, Any]]:
        """How a decision is written to the audit log: ``(action, target, details)``. The tool's input stays in
        the approvals history (its target names the request): the log says who decided what, not the command
        line, which may carry what the agent should not have shown."""
        if self.kind == "tool":
            action = "approval.resolve"
        else:
            action = "question.answer" if self.status == "answered" else "question.cancel"
        return action, f"{self.kind if self.kind == 'question' else 'approval'}:{self.id}", {
            "decision": self.decision, "status": self.status, "tool": self.tool_name, "agentId": self.agent_id,
            "sessionKey": self.session_key}

    @classmethod
    def from_row(cls, row: ApprovalRequest) -> Pending:
        item = cls(
            id=row.id,
            kind="question" if row.kind == "question" else "tool",
            agent_id=row.agent_id,
            session_key=row.session_key,
            body=row.body_json,
            created_at=row.created_at,
            expires_at=row.expires_at,
            tool_name=row.tool_name,
            status=row.status,
            decision=row.decision,
            reason=row.reason,
            answers=row.answers_json,
            resolved_by=row.resolved_by,
            resolved_at=row.resolved_at,
        )
        if not item.pending:
            item.done.set()
        return item
