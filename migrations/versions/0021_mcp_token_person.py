"""Remote MCP tokens a person makes for themselves: ``mcp_tokens.person_id`` (null: the operator's, as before).

A person's token is held to what their sign-in may reach (their own conversations, the baseline tools) and stops
working when the person is removed. It revises both the tokens' branch (the table it changes) and people's (whose
the tokens are), so a database that has one has the other.

Revision ID: 0021_mcp_token_person
Revises: 0005_mcp_tokens, 0020_people
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021_mcp_token_person"
down_revision = ("0005_mcp_tokens", "0020_people")
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("mcp_tokens") as batch:
        batch.add_column(sa.Column("person_id", sa.String(64), nullable=True))
        batch.create_index("ix_mcp_tokens_person_id", ["person_id"])


def downgrade() -> None:
    with op.batch_alter_table("mcp_tokens") as batch:
        batch.drop_index("ix_mcp_tokens_person_id")
        batch.drop_column("person_id")
