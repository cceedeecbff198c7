"""``INSERT … ON CONFLICT`` for the database a session is bound to.

SQLAlchemy has the statement once per dialect (``sqlalchemy.dialects.sqlite.insert``, ``….postgresql.insert``);
the PostgreSQL dialect package costs ~10 ms to import, so it is imported only by a gateway that uses PostgreSQL.
"""

from __future__ import annotations

import importlib
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["insert"]


def insert(s: AsyncSession, table: Any) -> Any:
    """An insert on ``table`` with ``on_conflict_do_nothing`` / ``on_conflict_do_update``, for ``s``'s database."""
    name = "postgresql" if s.get_bind().dialect.name == "postgresql" else "sqlite"
    return importlib.import_module(f"sqlalchemy.dialects.{name}").insert(table)
