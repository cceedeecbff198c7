"""One config for every replica on a shared database: ``shared_config`` (one row, id 1).

It holds the config document (everything but the ``gateway`` section, which says how each process listens) with
a version that each change raises by one; every replica on the database reads it at start and polls the version
(``gateway.config.shared``). A single SQLite gateway never writes it: there the file is the config.

Revision ID: 0022_shared_config
Revises: 0021_mcp_token_person
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022_shared_config"
down_revision = "0021_mcp_token_person"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "shared_config",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("updated_by", sa.String(64), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("shared_config")
