"""Persistent state: SQLAlchemy models and the database handle. The only place that writes SQL."""

from gateway.store.db import Database
from gateway.store.errors import BadDatabaseUrl, DatabaseUnavailable, MigrationFailed, StoreError
from gateway.store.models import Base, Device
from gateway.store.urls import database_url

__all__ = [
    "BadDatabaseUrl",
    "Base",
    "Database",
    "DatabaseUnavailable",
    "Device",
    "MigrationFailed",
    "StoreError",
    "database_url",
]
