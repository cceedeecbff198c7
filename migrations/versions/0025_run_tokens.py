"""Run tokens shared by the replicas (``gateway.store.run_tokens``): a node turn's shim may reach a replica other
than the one running the turn. Hashed (SHA-256), with the run, the issuing replica and an expiry.

Revision ID: 0025_run_tokens
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025_run_tokens"
down_revision = "0001_core"
branch_labels = ("run_tokens",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_tokens",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("grant_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_run_tokens_run_id", "run_tokens", ["run_id"])
    op.create_index("ix_run_tokens_expires_at", "run_tokens", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_run_tokens_expires_at", "run_tokens")
    op.drop_index("ix_run_tokens_run_id", "run_tokens")
    op.drop_table("run_tokens")
