"""Replies on their way to a chat: written before they are sent, marked when sent, so a crash loses none.

Revision ID: 0008_outbox
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_outbox"
down_revision = "0001_core"
branch_labels = ("outbox",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("replica_id", sa.String(64), nullable=False),
        sa.Column("session_key", sa.String(512), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("origin", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("reply_to_id", sa.String(256), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("sent_at", sa.BigInteger(), nullable=True),
    )
    op.create_index("ix_outbox_unsent", "outbox", ["replica_id", "sent_at"])


def downgrade() -> None:
    op.drop_index("ix_outbox_unsent", "outbox")
    op.drop_table("outbox")
