"""Alembic environment: runs on the connection the gateway hands it (see gateway.store.db)."""

from __future__ import annotations

from alembic import context

from gateway.store.base import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise SystemExit("run migrations through the gateway (it migrates on start), not the alembic CLI")

context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
