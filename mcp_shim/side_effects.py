"""The side-effects file: NDJSON records of what a run already did (messages sent, jobs added).

The gateway's agent executor reads it after the run so it does not deliver the same reply twice. Several tool calls
(and, in principle, several processes) append at once, so each record is one ``write`` on a file
opened with ``O_APPEND``: the kernel places each write whole at the end, records never interleave,
and the data is in the file before the tool returns.
"""

from __future__ import annotations

import os
import sys
import time

import orjson

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SideEffects", "now_ms"]


def now_ms() -> int:
    return int(time.time() * 1000)


class SideEffects:
    """Appends records to one NDJSON file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def append(self, record: dict[str, Any]) -> bool:
        """Write one record as one line; returns ``False`` (and says why on stderr) if it could not.

        A failed record does not fail the tool: the message was already sent, and an error would
        only invite the model to send it again.
        """
        data = orjson.dumps(record) + b"\n"
        try:
            # Opened per record (microseconds) so a file the executor rotates or removes is simply re-created.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                written = os.write(fd, data)
                while written < len(data):  # only for huge records: regular files do not short-write otherwise
                    written += os.write(fd, data[written:])
            finally:
                os.close(fd)
        except OSError as exc:
            print(f"remoteclaw-mcp: cannot append to the side-effects file {self.path}: {exc}", file=sys.stderr)
            return False
        return True

    def message_sent(self, *, tool: str, provider: str | None, account_id: str | None, to: str | None,
                     text: str | None, media_url: str | None = None) -> None:
        self.append({"type": "message_sent", "tool": tool, "provider": provider, "accountId": account_id,
                     "to": to, "text": text, "mediaUrl": media_url, "ts": now_ms()})

    def cron_added(self, job_id: str | None) -> None:
        self.append({"type": "cron_added", "jobId": job_id, "ts": now_ms()})

    def heartbeat_report(self, anything_done: bool, summary: str | None) -> None:
        self.append({"type": "heartbeat_report", "anythingDone": anything_done, "summary": summary,
                     "ts": now_ms()})
