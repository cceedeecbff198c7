"""Remote MCP tokens: who may use the tools over HTTP, stored hashed.

Revision ID: 0005_mcp_tokens
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_mcp_tokens"
down_revision = "0001_core"
branch_labels = ("mcp_tokens",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mcp_tokens",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("owner", sa.Boolean(), nullable=False),
        sa.Column("profile", sa.String(32), nullable=False),
        sa.Column("session_key", sa.String(512), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=True),
        sa.Column("revoked_at", sa.BigInteger(), nullable=True),
        sa.Column("last_used_at", sa.BigInteger(), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("mcp_tokens")
