"""Core tables: devices.

Revision ID: 0001_core
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_core"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "devices",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("public_key", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("client_id", sa.String(128), nullable=False),
        sa.Column("platform", sa.String(128), nullable=False, server_default=""),
        sa.Column("display_name", sa.String(256), nullable=True),
        sa.Column("remote", sa.String(128), nullable=False, server_default=""),
        sa.Column("scopes", sa.Text(), nullable=False, server_default=""),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("devices")
