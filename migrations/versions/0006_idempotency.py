"""Outcomes of side-effecting requests by idempotency key, so a retry after a restart gets the first answer.

Revision ID: 0006_idempotency
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_idempotency"
down_revision = "0001_core"
branch_labels = ("idempotency",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "idempotency_outcomes",
        sa.Column("method", sa.String(128), primary_key=True),
        sa.Column("key", sa.String(256), primary_key=True),
        sa.Column("result", sa.Text(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False, index=True),
    )


def downgrade() -> None:
    op.drop_table("idempotency_outcomes")
