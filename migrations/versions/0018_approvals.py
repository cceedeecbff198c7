"""Approvals and questions: the history of every request an agent run put to its person, and the "allow
always" rules a person granted (per agent and tool pattern).

Revision ID: 0018_approvals
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_approvals"
down_revision = "0001_core"
branch_labels = ("approvals",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "approval_requests",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("agent_id", sa.String(128), nullable=False),
        sa.Column("session_key", sa.String(512), nullable=False),
        sa.Column("tool_name", sa.String(200), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("decision", sa.String(16), nullable=True),
        sa.Column("reason", sa.String(32), nullable=True),
        sa.Column("answers", sa.Text(), nullable=True),
        sa.Column("resolved_by", sa.String(200), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("resolved_at", sa.BigInteger(), nullable=True),
    )
    op.create_index("ix_approval_requests_created_at", "approval_requests", ["created_at"])
    op.create_table(
        "approval_rules",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("agent_id", sa.String(128), nullable=False),
        sa.Column("pattern", sa.String(1000), nullable=False),
        sa.Column("approval_id", sa.String(64), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("revoked_at", sa.BigInteger(), nullable=True),
        sa.Column("revoked_by", sa.String(200), nullable=True),
        sa.Column("last_used_at", sa.BigInteger(), nullable=True),
        sa.Column("use_count", sa.Integer(), nullable=False, server_default="0"),
    )
    op.create_index("ix_approval_rules_agent_id", "approval_rules", ["agent_id"])


def downgrade() -> None:
    op.drop_index("ix_approval_rules_agent_id", "approval_rules")
    op.drop_table("approval_rules")
    op.drop_index("ix_approval_requests_created_at", "approval_requests")
    op.drop_table("approval_requests")
