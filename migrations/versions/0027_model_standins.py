"""Stand-in credentials shared by the replicas (``gateway.credentials.store``): a node turn's model requests reach
whichever replica the node's address leads to, not necessarily the one running the turn. Hashed (SHA-256), with
whose use it is (never a real credential), the issuing replica, an expiry, and what other replicas saw it use.

Revision ID: 0027_model_standins
Revises: 0025_run_tokens
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027_model_standins"
down_revision = "0025_run_tokens"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_standins",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("grant_json", sa.Text(), nullable=False),
        sa.Column("used_json", sa.Text(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_model_standins_holder", "model_standins", ["holder"])
    op.create_index("ix_model_standins_expires_at", "model_standins", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_model_standins_expires_at", "model_standins")
    op.drop_index("ix_model_standins_holder", "model_standins")
    op.drop_table("model_standins")
