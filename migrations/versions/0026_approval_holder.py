"""The replica holding a pending approval request (``gateway.approvals.service``): a request asked at one replica
(a node turn's shim landed there) is decided from any, through its row, and only the holder's own restart
cancels it. Indexed by status and session: the pending ones are looked up across replicas.

Revision ID: 0026_approval_holder
Revises: 0018_approvals
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026_approval_holder"
down_revision = "0018_approvals"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("approval_requests") as batch:
        batch.add_column(sa.Column("holder", sa.String(128), nullable=True))
    op.create_index("ix_approval_requests_pending", "approval_requests", ["status", "session_key"])


def downgrade() -> None:
    op.drop_index("ix_approval_requests_pending", "approval_requests")
    with op.batch_alter_table("approval_requests") as batch:
        batch.drop_column("holder")
