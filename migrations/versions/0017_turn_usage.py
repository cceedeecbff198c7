"""Usage per turn: tokens and cost of every agent turn, for /usage, budgets and ``usage.cost``.

Revision ID: 0017_turn_usage
Revises: 0002_sessions
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_turn_usage"
down_revision = "0002_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "turn_usage",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("session_key", sa.String(512), nullable=False),
        sa.Column("agent_id", sa.String(128), nullable=False),
        sa.Column("runtime", sa.String(64), nullable=False),
        sa.Column("model", sa.String(256), nullable=True),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("output_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("cache_read_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("cache_write_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("cost_usd", sa.Float(), nullable=True),
    )
    op.create_index("ix_turn_usage_session_at", "turn_usage", ["session_key", "at_ms"])
    op.create_index("ix_turn_usage_agent_at", "turn_usage", ["agent_id", "at_ms"])


def downgrade() -> None:
    op.drop_index("ix_turn_usage_agent_at", table_name="turn_usage")
    op.drop_index("ix_turn_usage_session_at", table_name="turn_usage")
    op.drop_table("turn_usage")
