"""Files people send, fetched from the content repository into the account's media folder.

A file sent in an encrypted room is encrypted in the repository too (the event's ``file`` holds its key): it
is decrypted after nio checks its hash. A file past ``MAX_DOWNLOAD_BYTES`` or one that cannot be had is left
out (the message still comes in, without the file's path).
"""

from __future__ import annotations

import asyncio
import mimetypes
import re
from pathlib import Path
from typing import Any

import nio
import structlog

from channels.matrix.session import Session

__all__ = ["MAX_DOWNLOAD_BYTES", "Downloads"]

log = structlog.get_logger("channels.matrix")

MAX_DOWNLOAD_BYTES = 50 * 1024 * 1024


class Downloads:
    """One account's downloads (none without a media folder)."""

    def __init__(self, session: Session, media_dir: Path | None) -> None:
        self._session = session
        self._media_dir = media_dir

    async def fetch(self, content: dict[str, Any], name: str | None, event_id: str) -> str | None:
        """Fetch a file from the content repository into the media folder (decrypted, when it was sent in an
        encrypted room: ``file`` holds its key); its path, or None when it cannot be had."""
        account = self._session.account_id
        encrypted = content.get("file") if isinstance(content.get("file"), dict) else None
        mxc = (encrypted or content).get("url")
        if self._media_dir is None or not isinstance(mxc, str) or not mxc.startswith("mxc://"):
            return None
        try:
            got = await self._session.live().download(mxc=mxc)
            if not isinstance(got, nio.MemoryDownloadResponse) or len(got.body) > MAX_DOWNLOAD_BYTES:
                log.warning("matrix download refused", account=account, mxc=mxc)
                return None
            body = got.body
            if encrypted is not None:
                from nio.crypto.attachments import decrypt_attachment  # checks the hash before decrypting

                body = await asyncio.to_thread(
                    decrypt_attachment, body, encrypted["key"]["k"], encrypted["hashes"]["sha256"], encrypted["iv"]
                )
            suffix = (
                Path(name or got.filename or "").suffix or mimetypes.guess_extension(got.content_type or "") or ".bin"
            )
            safe = re.sub(r"[^A-Za-z0-9_-]", "_", event_id)[-64:]
            path = self._media_dir / f"{safe}{suffix}"
            await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
            await asyncio.to_thread(path.write_bytes, body)
            return str(path)
        except Exception as exc:
            log.warning("matrix download failed", account=account, error=str(exc))
            return None
