"""Persistent state of the core: SQLAlchemy models, repositories and the database handle.

Where SQL is written: here for the core's tables; in each capability's own ``store.py`` for the tables it owns
(``gateway/cron/store.py``, ``gateway/approvals/store.py``...); in the few modules named for the one table they
keep (``platforms/history.py``, ``platforms/journal.py``, ``platforms/sender_pairing.py``, ``agents/outbox.py``,
``mcp_http/tokens.py``, ``voice/prefs.py``, ``webchat/``, ``devices/operators.py``); and in a service where
claiming rows must be one statement in one transaction (cron's scheduler, replica adoption, crash recovery). A
method handler never writes SQL: it calls one of those (``tests/test_layering.py``).
"""

from gateway.store.base import Base, Device
from gateway.store.db import Database
from gateway.store.errors import BadDatabaseUrl, DatabaseUnavailable, MigrationFailed, StoreError
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
