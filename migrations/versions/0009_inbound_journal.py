"""Inbound exactly once: updates journalled before the platform is told they arrived, and a handled mark
on each stored inbound message.

Revision ID: 0009_inbound_journal
Revises: 0003_channels
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_inbound_journal"
down_revision = "0003_channels"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "inbound_journal",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(128), nullable=False),
        sa.Column("update_key", sa.String(128), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("received_at", sa.BigInteger(), nullable=False),
        sa.Column("handled_at", sa.BigInteger(), nullable=True),
        sa.Column("replays", sa.Integer(), nullable=False, server_default="0"),
        sa.UniqueConstraint("channel", "account_id", "update_key", name="uq_inbound_journal_update"),
    )
    op.create_index("ix_inbound_journal_pending", "inbound_journal", ["channel", "account_id", "handled_at"])
    op.add_column("channel_messages", sa.Column("handled_at", sa.BigInteger(), nullable=True))
    # Messages stored before this revision were handled by the process that stored them.
    op.execute("UPDATE channel_messages SET handled_at = 0 WHERE direction = 'in'")


def downgrade() -> None:
    op.drop_column("channel_messages", "handled_at")
    op.drop_index("ix_inbound_journal_pending", "inbound_journal")
    op.drop_table("inbound_journal")
