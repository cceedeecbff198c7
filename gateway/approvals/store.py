"""Approval tables: one history row per request (kept ``approvals.keepDays``), and the "allow always" rules.

A pending request lives in the service's memory (a future the asking run waits on); its row is written when
it is asked and updated when it is decided, so the history outlives the process and a restart shows what
happened. Rules are rows, so an "allow always" survives restarts; revoking one stamps it, never deletes it.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import BigInteger, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.base import Base

__all__ = ["ApprovalRequest", "ApprovalRule"]


class ApprovalRequest(Base):
    """One request an agent run put to its person: a tool use to allow (``tool``) or questions (``question``)."""

    __tablename__ = "approval_requests"
    __table_args__ = (Index("ix_approval_requests_created_at", "created_at"),
                      Index("ix_approval_requests_pending", "status", "session_key"))

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # tool | question
    agent_id: Mapped[str] = mapped_column(String(128))
    session_key: Mapped[str] = mapped_column(String(512))
    tool_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    body: Mapped[str] = mapped_column(Text)  # JSON: the tool input, or the questions
    status: Mapped[str] = mapped_column(String(16))  # pending | allowed | denied | expired | answered | cancelled
    decision: Mapped[str | None] = mapped_column(String(16), nullable=True)  # allow-once | allow-always | deny
    reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    answers: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON {questionId: [labels]}
    resolved_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[int] = mapped_column(BigInteger)
    resolved_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    holder: Mapped[str | None] = mapped_column(String(128), nullable=True)
    """The replica whose memory holds the request while it is pending (its asker waits there)."""

    @property
    def body_json(self) -> Any:
        return orjson.loads(self.body)

    @property
    def answers_json(self) -> dict[str, list[str]] | None:
        return orjson.loads(self.answers) if self.answers else None


class ApprovalRule(Base):
    """An "allow always": this agent may use tools matching ``pattern`` without asking (until revoked)."""

    __tablename__ = "approval_rules"
    __table_args__ = (Index("ix_approval_rules_agent_id", "agent_id"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(128))
    pattern: Mapped[str] = mapped_column(String(1000))  # ``Bash(<command>)`` or a tool name; fnmatch wildcards
    approval_id: Mapped[str] = mapped_column(String(64))  # the request whose "allow always" made it
    created_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[int] = mapped_column(BigInteger)
    revoked_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    revoked_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    last_used_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    use_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
