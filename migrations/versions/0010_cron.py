"""Cron jobs and their run history.

Revision ID: 0010_cron
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_cron"
down_revision = "0001_core"
branch_labels = ("cron",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cron_jobs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("agent_id", sa.String(128), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("schedule", sa.Text(), nullable=False),
        sa.Column("session_target", sa.String(600), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("delivery", sa.Text(), nullable=True),
        sa.Column("failure_alert", sa.Text(), nullable=True),
        sa.Column("delete_after_run", sa.Boolean(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False, server_default="job"),
        sa.Column("next_run_at", sa.BigInteger(), nullable=True),
        sa.Column("running_at", sa.BigInteger(), nullable=True),
        sa.Column("running_replica", sa.String(64), nullable=True),
        sa.Column("last_run_at", sa.BigInteger(), nullable=True),
        sa.Column("last_status", sa.String(16), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("last_delivery_status", sa.String(32), nullable=True),
        sa.Column("consecutive_errors", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_cron_jobs_due", "cron_jobs", ["enabled", "next_run_at"])
    op.create_table(
        "cron_runs",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("job_id", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("trigger", sa.String(16), nullable=False, server_default="schedule"),
        sa.Column("scheduled_for", sa.BigInteger(), nullable=True),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
        sa.Column("ended_at", sa.BigInteger(), nullable=True),
        sa.Column("duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("delivery_status", sa.String(32), nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("session_key", sa.String(600), nullable=True),
        sa.Column("replica_id", sa.String(64), nullable=True),
    )
    op.create_index("ix_cron_runs_job", "cron_runs", ["job_id", "started_at"])


def downgrade() -> None:
    op.drop_index("ix_cron_runs_job", "cron_runs")
    op.drop_table("cron_runs")
    op.drop_index("ix_cron_jobs_due", "cron_jobs")
    op.drop_table("cron_jobs")
