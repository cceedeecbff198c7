"""Nodes in the device store: one row per device key, with its node pairing beside its operator approval.

Revision ID: 0012_nodes
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_nodes"
down_revision = "0001_core"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("devices") as batch:
        batch.add_column(sa.Column("node_status", sa.String(16), nullable=True))
        batch.add_column(sa.Column("node_request_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("node_alias", sa.String(256), nullable=True))
        batch.add_column(sa.Column("node_version", sa.String(128), nullable=False, server_default=""))
        batch.add_column(sa.Column("node_caps", sa.Text(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("node_commands", sa.Text(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("node_token_hash", sa.String(128), nullable=True))
        batch.add_column(sa.Column("node_requested_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("node_approved_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("node_connected_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("node_replica", sa.String(64), nullable=True))
        batch.add_column(sa.Column("node_instance", sa.String(64), nullable=True))
        batch.create_index("ix_devices_node_status", ["node_status"])
        batch.create_index("ix_devices_node_request_id", ["node_request_id"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("devices") as batch:
        batch.drop_index("ix_devices_node_request_id")
        batch.drop_index("ix_devices_node_status")
        for name in ("node_instance", "node_replica", "node_connected_at", "node_approved_at", "node_requested_at",
                     "node_token_hash", "node_commands", "node_caps", "node_version", "node_alias",
                     "node_request_id", "node_status"):
            batch.drop_column(name)
