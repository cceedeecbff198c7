"""A2A tasks: one row per task an A2A peer started, with the session it runs in and whose it is (``gateway.a2a``).

Revision ID: 0023_a2a_tasks
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023_a2a_tasks"
down_revision = "0001_core"
branch_labels = ("a2a",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "a2a_tasks",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("context_id", sa.String(128), nullable=False),
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("session_key", sa.String(512), nullable=False),
        sa.Column("person_id", sa.String(64), nullable=True),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_a2a_tasks_session_key", "a2a_tasks", ["session_key"])
    op.create_index("ix_a2a_tasks_person_id", "a2a_tasks", ["person_id"])


def downgrade() -> None:
    op.drop_index("ix_a2a_tasks_person_id", "a2a_tasks")
    op.drop_index("ix_a2a_tasks_session_key", "a2a_tasks")
    op.drop_table("a2a_tasks")
