"""Sessions, their transcripts, and agent runs.

Revision ID: 0002_sessions
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_sessions"
down_revision = "0001_core"
branch_labels = ("sessions",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("key", sa.String(512), primary_key=True),
        sa.Column("agent_id", sa.String(128), nullable=False, index=True),
        sa.Column("kind", sa.String(16), nullable=False, server_default="direct"),
        sa.Column("label", sa.String(256), nullable=True, unique=True),
        sa.Column("channel", sa.String(64), nullable=True),
        sa.Column("account_id", sa.String(128), nullable=True),
        sa.Column("peer_id", sa.String(256), nullable=True),
        sa.Column("chat_type", sa.String(16), nullable=True),
        sa.Column("thread_id", sa.String(256), nullable=True),
        sa.Column("parent_key", sa.String(512), nullable=True, index=True),
        sa.Column("model", sa.String(128), nullable=True),
        sa.Column("cli_sessions", sa.Text(), nullable=False, server_default="{}"),
        sa.Column("input_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("output_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("cache_read_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("cache_write_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, index=True),
    )
    op.create_table(
        "session_messages",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("session_key", sa.String(512), sa.ForeignKey("sessions.key", ondelete="CASCADE"),
                  nullable=False, index=True),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False, server_default=""),
        sa.Column("tool", sa.Text(), nullable=True),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "agent_runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("session_key", sa.String(512), nullable=False, index=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("source", sa.String(32), nullable=False, server_default="agent"),
        sa.Column("is_owner", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("reply", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("agent_runs")
    op.drop_table("session_messages")
    op.drop_table("sessions")
