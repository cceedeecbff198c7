"""Session leases: one replica at a time runs a session's turn.

Revision ID: 0004_leases
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_leases"
down_revision = "0001_core"
branch_labels = ("leases",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_leases",
        sa.Column("session_key", sa.String(512), primary_key=True),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False, index=True),
        sa.Column("acquired_at", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("session_leases")
