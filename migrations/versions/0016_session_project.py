"""A conversation's project: which of its agent's ``projects`` folders the turns run in (``/project``).

Revision ID: 0016_session_project
Revises: 0014_webchat
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_session_project"
down_revision = "0014_webchat"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("project", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("project")
