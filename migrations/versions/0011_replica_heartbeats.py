"""Replica heartbeats: a live replica adopts the unfinished turns of one that died.

Revision ID: 0011_replica_heartbeats
Revises: 0004_leases
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_replica_heartbeats"
down_revision = "0004_leases"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "replica_heartbeats",
        sa.Column("replica_id", sa.String(64), primary_key=True),
        sa.Column("beat_at", sa.BigInteger(), nullable=False),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_replica_heartbeats_beat_at", "replica_heartbeats", ["beat_at"])


def downgrade() -> None:
    op.drop_index("ix_replica_heartbeats_beat_at", "replica_heartbeats")
    op.drop_table("replica_heartbeats")
