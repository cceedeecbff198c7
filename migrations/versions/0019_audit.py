"""The audit log: who did what to config, pairing, approvals and tokens, one row per action (kept
``audit.retentionDays``).

Revision ID: 0019_audit
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_audit"
down_revision = "0001_core"
branch_labels = ("audit",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("target", sa.String(512), nullable=True),
        sa.Column("details", sa.Text(), nullable=True),
    )
    op.create_index("ix_audit_events_at", "audit_events", ["at"])


def downgrade() -> None:
    op.drop_index("ix_audit_events_at", "audit_events")
    op.drop_table("audit_events")
