"""Messages kept for an agent whose node is away (``gateway.agent_hosts.store``): one row each, run when the node
is back, also after a gateway restart.

Revision ID: 0024_node_kept_messages
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024_node_kept_messages"
down_revision = "0001_core"
branch_labels = ("agent_hosts",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "node_kept_messages",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("node_ref", sa.String(256), nullable=False),
        sa.Column("session_key", sa.String(512), nullable=False),
        sa.Column("request", sa.Text(), nullable=False),
        sa.Column("lost", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_node_kept_messages_node_ref", "node_kept_messages", ["node_ref"])


def downgrade() -> None:
    op.drop_index("ix_node_kept_messages_node_ref", "node_kept_messages")
    op.drop_table("node_kept_messages")
