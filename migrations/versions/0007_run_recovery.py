"""Which replica queued a run, and how often it was started: what recovery after a crash needs.

Revision ID: 0007_run_recovery
Revises: 0002_sessions
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_run_recovery"
down_revision = "0002_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent_runs") as batch:
        batch.add_column(sa.Column("replica_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch.create_index("ix_agent_runs_replica_status", ["replica_id", "status"])


def downgrade() -> None:
    with op.batch_alter_table("agent_runs") as batch:
        batch.drop_index("ix_agent_runs_replica_status")
        batch.drop_column("attempts")
        batch.drop_column("replica_id")
