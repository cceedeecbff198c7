"""The web chat as a full channel: per-message facts in the transcript, and the files agents send to it.

``session_messages.meta`` holds what a chat app shows around a message (the message it replies to, the
agent's reaction, pinned, deleted, attachments, a failed turn, which agent and CLI answered).
``webchat_files`` keeps the files themselves in the database, so every replica can serve them and a backup
holds them.

Revision ID: 0014_webchat
Revises: 0007_run_recovery
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_webchat"
down_revision = "0007_run_recovery"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("session_messages") as batch:
        batch.add_column(sa.Column("meta", sa.Text(), nullable=True))
    op.create_table(
        "webchat_files",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("session_key", sa.String(512), nullable=False, index=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("mime_type", sa.String(128), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("webchat_files")
    with op.batch_alter_table("session_messages") as batch:
        batch.drop_column("meta")
