"""Storage failures a person has to act on, each carrying a one-line message.

``StoreError`` is the base; the server prints ``message`` and exits instead of dumping a traceback::

    StoreError
    ├── BadDatabaseUrl        REMOTECLAW_DATABASE_URL cannot be used as given
    ├── DatabaseUnavailable   the database cannot be reached or opened (server down, wrong name/password)
    └── MigrationFailed       a migration raised; its transaction was rolled back
"""

from __future__ import annotations

__all__ = ["BadDatabaseUrl", "DatabaseUnavailable", "MigrationFailed", "StoreError", "one_line"]


class StoreError(Exception):
    """Base of the storage errors; ``message`` is safe to show (no passwords)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadDatabaseUrl(StoreError):
    pass


class DatabaseUnavailable(StoreError):
    pass


class MigrationFailed(StoreError):
    pass


def one_line(exc: BaseException) -> str:
    """A short, single-line reason for ``exc``, unwrapping SQLAlchemy's and asyncpg's wrappers."""
    orig = getattr(exc, "orig", None)  # sqlalchemy.exc.DBAPIError -> the driver's exception
    inner = orig if isinstance(orig, BaseException) else exc
    text = str(inner).strip()
    if text.startswith("<class '") and "'>: " in text:  # SQLAlchemy's asyncpg adapter prefixes the class
        text = text.split("'>: ", 1)[1]
    if isinstance(inner, TimeoutError) and not text:
        text = "timed out"
    first = text.splitlines()[0] if text else type(inner).__name__
    return first[:300]
