"""Channel tables: channel_messages, pairing_requests, approved_senders.

Revision ID: 0003_channels
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_channels"
down_revision = "0001_core"
branch_labels = ("channels",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "channel_messages",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(128), nullable=False),
        sa.Column("chat_id", sa.String(256), nullable=False),
        sa.Column("thread_id", sa.String(256), nullable=True),
        sa.Column("message_id", sa.String(256), nullable=False),
        sa.Column("direction", sa.String(8), nullable=False),
        sa.Column("sender_id", sa.String(256), nullable=True),
        sa.Column("sender_name", sa.String(256), nullable=True),
        sa.Column("text", sa.Text(), nullable=False, server_default=""),
        sa.Column("reply_to_id", sa.String(256), nullable=True),
        sa.Column("media", sa.Text(), nullable=True),
        sa.Column("session_key", sa.String(512), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_channel_messages_chat", "channel_messages", ["channel", "account_id", "chat_id", "id"])
    op.create_table(
        "pairing_requests",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(128), nullable=False),
        sa.Column("sender_id", sa.String(256), nullable=False, index=True),
        sa.Column("sender_name", sa.String(256), nullable=True),
        sa.Column("chat_id", sa.String(256), nullable=False),
        sa.Column("code", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False, server_default="pending", index=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("channel", "code", name="uq_pairing_code"),
    )
    op.create_table(
        "approved_senders",
        sa.Column("channel", sa.String(64), primary_key=True),
        sa.Column("sender_id", sa.String(256), primary_key=True),
        sa.Column("sender_name", sa.String(256), nullable=True),
        sa.Column("approved_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("via", sa.String(32), nullable=False, server_default="pairing"),
    )


def downgrade() -> None:
    op.drop_table("approved_senders")
    op.drop_table("pairing_requests")
    op.drop_index("ix_channel_messages_chat", table_name="channel_messages")
    op.drop_table("channel_messages")
