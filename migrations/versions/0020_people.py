"""People: persons with roles, their chat identities, link and sign-in codes, web sign-ins; whose each session and
each turn's usage is (``sessions.person_id``, ``turn_usage.person_id``).

The owner lists of the config become the owner person when the gateway starts (``PeopleService.adopt_owners``):
a migration cannot read the config file, and every existing row stays as it was.

Revision ID: 0020_people
Revises: 0016_session_project, 0017_turn_usage
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020_people"
down_revision = ("0016_session_project", "0017_turn_usage")
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "people",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("one_conversation", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("max_cost_per_day", sa.Float(), nullable=True),
        sa.Column("agent_id", sa.String(128), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_people_role", "people", ["role"])
    op.create_table(
        "person_identities",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("person_id", sa.String(64), sa.ForeignKey("people.id", ondelete="CASCADE"), nullable=False),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("sender_id", sa.String(256), nullable=False),
        sa.Column("linked_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.UniqueConstraint("channel", "sender_id", name="uq_person_identities_sender"),
    )
    op.create_index("ix_person_identities_person_id", "person_identities", ["person_id"])
    op.create_table(
        "person_codes",
        sa.Column("code_hash", sa.String(64), primary_key=True),
        sa.Column("person_id", sa.String(64), sa.ForeignKey("people.id", ondelete="CASCADE"), nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_person_codes_person_id", "person_codes", ["person_id"])
    op.create_table(
        "person_signins",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("person_id", sa.String(64), sa.ForeignKey("people.id", ondelete="CASCADE"), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("label", sa.String(200), nullable=False, server_default=""),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("last_used_at", sa.BigInteger(), nullable=True),
        sa.Column("revoked_at", sa.BigInteger(), nullable=True),
    )
    op.create_index("ix_person_signins_person", "person_signins", ["person_id", "revoked_at"])
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("person_id", sa.String(64), nullable=True))
        batch.create_index("ix_sessions_person_id", ["person_id"])
    with op.batch_alter_table("turn_usage") as batch:
        batch.add_column(sa.Column("person_id", sa.String(64), nullable=True))
        batch.create_index("ix_turn_usage_person_at", ["person_id", "at_ms"])


def downgrade() -> None:
    with op.batch_alter_table("turn_usage") as batch:
        batch.drop_index("ix_turn_usage_person_at")
        batch.drop_column("person_id")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_index("ix_sessions_person_id")
        batch.drop_column("person_id")
    op.drop_index("ix_person_signins_person", "person_signins")
    op.drop_table("person_signins")
    op.drop_index("ix_person_codes_person_id", "person_codes")
    op.drop_table("person_codes")
    op.drop_index("ix_person_identities_person_id", "person_identities")
    op.drop_table("person_identities")
    op.drop_index("ix_people_role", "people")
    op.drop_table("people")
