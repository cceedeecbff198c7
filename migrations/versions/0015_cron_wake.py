"""Cron wake modes: a job's ``wakeMode`` and, for a main-session job waiting for the next heartbeat, when
its event was queued.

Revision ID: 0015_cron_wake
Revises: 0010_cron
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_cron_wake"
down_revision = "0010_cron"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("cron_jobs") as batch:
        batch.add_column(sa.Column("wake_mode", sa.String(16), nullable=False, server_default="now"))
        batch.add_column(sa.Column("wake_pending_at", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("cron_jobs") as batch:
        batch.drop_column("wake_pending_at")
        batch.drop_column("wake_mode")
