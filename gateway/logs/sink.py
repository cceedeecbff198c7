"""Logging: JSON lines to ``<state dir>/logs/gateway.log``, readable lines on the console.

structlog renders through the standard library so uvicorn's and the libraries' records
land in the same places. Writes go through a queue thread, so the event loop never waits
on the disk. A redaction step scrubs every known secret before anything is rendered.
"""

from __future__ import annotations

import logging
import logging.handlers
import queue
import re
import sys
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import structlog

__all__ = ["LOG_FILE_NAME", "add_secret", "configure", "flush", "scrub_secrets", "shutdown", "tail"]

LOG_FILE_NAME = "gateway.log"
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_SECRET_FIELD = re.compile(r"(token|secret|password|apikey|api_key|authorization)", re.IGNORECASE)
_secrets: set[str] = set()
_listener: _Writer | None = None


def add_secret(value: str | None) -> None:
    """Register a secret value (a token, a key) that must never appear in any log line."""
    if value and len(value) >= 6:
        _secrets.add(value)


def scrub_secrets(value: Any) -> Any:
    """``value`` with the text of every known secret replaced by ``***``, in strings, map keys and lists.

    For what leaves the gateway outside the log (error answers): an error message may quote input that
    holds a secret (a parser's snippet, a provider quoting the key back, a key pasted in the wrong place).
    """
    if not _secrets:
        return value
    if isinstance(value, str):
        for secret in _secrets:
            if secret in value:
                value = value.replace(secret, "***")
        return value
    if isinstance(value, dict):
        return {scrub_secrets(k): scrub_secrets(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_secrets(v) for v in value]
    return value


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return scrub_secrets(value)
    if isinstance(value, dict):
        return {k: ("***" if _SECRET_FIELD.search(str(k)) and v else _scrub(v)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def _redact(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    return {k: ("***" if _SECRET_FIELD.search(k) and v else _scrub(v)) for k, v in event.items()}


class _QueueHandler(logging.handlers.QueueHandler):
    """Hands records to the writer thread as they are: structlog's event dict must reach the formatters."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record


class _FlushMarker(logging.LogRecord):
    """Not a log line: when the writer thread reaches it, everything queued before it is on disk."""

    def __init__(self) -> None:
        super().__init__("remoteclaw.flush", logging.CRITICAL, __file__, 0, "", None, None)
        self.done = threading.Event()


class _Writer(logging.handlers.QueueListener):
    """The writer thread; answers flush markers instead of handing them to the handlers."""

    def handle(self, record: logging.LogRecord) -> None:
        if isinstance(record, _FlushMarker):
            for handler in self.handlers:
                handler.flush()
            record.done.set()
            return
        super().handle(record)


def flush(timeout: float = 2.0) -> None:
    """Block until every record logged before this call has been written (readers call it before reading)."""
    writer = _listener
    if writer is None or writer.queue is None:
        return
    marker = _FlushMarker()
    writer.queue.put_nowait(marker)
    marker.done.wait(timeout)


def configure(log_dir: Path, *, level: str = "info", console_level: str = "info",
              max_bytes: int = 10 * 1024 * 1024, keep: int = 5, console: bool = True) -> Path:
    """Set up structlog and stdlib logging for the gateway process. Safe to call again on restart."""
    global _listener
    shutdown()
    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / LOG_FILE_NAME
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        # Render tracebacks here, in the logging thread: the writer thread has no current exception.
        # Then redact, so a secret inside an exception message is scrubbed too.
        structlog.processors.format_exc_info,
        _redact,
    ]
    structlog.configure(
        # filter_by_level first: a debug call at info level costs a level check, not a trip through every processor.
        processors=[structlog.stdlib.filter_by_level, *shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    file_handler = logging.handlers.RotatingFileHandler(path, maxBytes=max_bytes, backupCount=keep)
    file_handler.setLevel(_LEVELS[level])
    file_handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.JSONRenderer(serializer=lambda o, **_: orjson.dumps(o, default=str).decode()),
        ],
    ))
    handlers: list[logging.Handler] = [file_handler]
    if console:
        console_handler = logging.StreamHandler(sys.stderr)
        console_handler.setLevel(_LEVELS[console_level])
        console_handler.setFormatter(structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()),
            ],
        ))
        handlers.append(console_handler)
    q: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(_QueueHandler(q))
    root.setLevel(min(_LEVELS[level], _LEVELS[console_level]))
    for noisy in ("uvicorn.access", "uvicorn.error", "aiosqlite", "asyncio", "websockets", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    _listener = _Writer(q, *handlers, respect_handler_level=True)
    _listener.start()
    return path


def shutdown() -> None:
    """Flush and stop the writer thread."""
    global _listener
    if _listener is not None:
        _listener.stop()
        for h in _listener.handlers:
            h.close()
        _listener = None


def tail(log_dir: Path, *, limit: int = 100, level: str | None = None, search: str | None = None) -> list[dict]:
    """The newest ``limit`` records (oldest first), optionally at or above ``level`` and containing ``search``.

    Reads the current file and, when it holds too few matches, the rotated ones before it.
    """
    floor = _LEVELS.get(level or "debug", logging.DEBUG)
    needle = search.lower() if search else None
    out: deque[dict] = deque(maxlen=limit)
    files = [log_dir / LOG_FILE_NAME]
    rotated = log_dir.glob(LOG_FILE_NAME + ".*")
    files += sorted(rotated, key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)  # .1 is newest
    chunks: list[list[dict]] = []
    found = 0
    for path in files:
        try:
            lines = path.read_bytes().splitlines()
        except FileNotFoundError:
            continue
        matched = list(_matching(lines, floor, needle))
        chunks.append(matched)
        found += len(matched)
        if found >= limit:
            break
    for chunk in reversed(chunks):
        out.extend(chunk)
    return list(out)


def since(path: Path, cursor: int, *, limit: int = 100, level: str | None = None,
          search: str | None = None) -> list[dict]:
    """The records written to ``path`` after byte offset ``cursor`` (at most the newest ``limit``), filtered
    like ``tail``: what a client following the log has not seen yet."""
    floor = _LEVELS.get(level or "debug", logging.DEBUG)
    needle = search.lower() if search else None
    try:
        with path.open("rb") as f:
            f.seek(cursor)
            data = f.read()
    except FileNotFoundError:
        return []
    return list(deque(_matching(data.splitlines(), floor, needle), maxlen=limit))


def _matching(lines: list[bytes], floor: int, needle: str | None) -> Iterator[dict]:
    """The JSON records among ``lines`` at or above level ``floor`` whose text holds ``needle`` (lower-cased)."""
    for line in lines:
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if _LEVELS.get(str(rec.get("level", "info")).lower(), logging.INFO) < floor:
            continue
        if needle and needle not in line.decode("utf-8", "replace").lower():
            continue
        yield rec
