"""Remote MCP tokens a person makes for themselves: ``mcp_tokens.person_id`` (null: the operator's, as before).

A person's token is held to what their sign-in may reach (their own conversations, the baseline tools); removing
the person revokes their tokens (``PeopleService.remove``).

Revision ID: 0021_mcp_token_person
Revises: 0005_mcp_tokens
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021_mcp_token_person"
down_revision = "0005_mcp_tokens"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("mcp_tokens") as batch:
        batch.add_column(sa.Column("person_id", sa.String(64), nullable=True))
        batch.create_index("ix_mcp_tokens_person", ["person_id"])


def downgrade() -> None:
    with op.batch_alter_table("mcp_tokens") as batch:
        batch.drop_index("ix_mcp_tokens_person")
        batch.drop_column("person_id")
