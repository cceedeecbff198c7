"""Voice preferences: spoken replies on or off and the provider, as the owner set them.

Revision ID: 0013_voice_prefs
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_voice_prefs"
down_revision = "0001_core"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "voice_prefs",
        sa.Column("scope", sa.String(32), primary_key=True),
        sa.Column("enabled", sa.Boolean(), nullable=True),
        sa.Column("provider", sa.String(32), nullable=True),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("voice_prefs")
