"""Files an agent sends to the web chat, kept in the database and served at an unguessable address.

An agent's workspace is removed after its turn, so a file it sends must be copied at once (Telegram
uploads it; the web chat stores it). The database, not the state dir, holds the bytes: every replica can
then serve a file another one stored, and ``remoteclaw backup`` takes them along with the transcript.

The address ``/__remoteclaw__/webchat/files/<id>/<name>`` carries 128 random bits and is only ever handed
to authenticated viewers (in ``chat`` events and ``chat.history``); the secret address is no authorization of
its own: a request must present a credential (``Authorization: Bearer``, as the page fetches it) whose principal
may read the file's conversation (``gateway.access.http``), so a leaked address serves nobody else. Only
raster images are shown inline; everything else is served as a download,
and every response forbids scripts (``sandbox``), so an HTML or SVG file sent by an agent never runs as
the gateway's page.
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sqlalchemy import BigInteger, Integer, LargeBinary, String, delete, select
from sqlalchemy.orm import Mapped, mapped_column
from starlette.responses import PlainTextResponse, Response

from gateway.sandbox.open_beneath import MAX_READ_BYTES, FileBytes, read_fd
from gateway.store.base import Base

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from starlette.requests import Request

    from gateway.store import Database

__all__ = ["FILES_PATH", "INLINE_TYPES", "WebchatFile", "delete_files", "link_attachment", "serve_file", "store_file"]

FILES_PATH = "/__remoteclaw__/webchat/files"
INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Shown in the page as images; any other type is offered as a download."""


class WebchatFile(Base):
    __tablename__ = "webchat_files"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    session_key: Mapped[str] = mapped_column(String(512), index=True)
    name: Mapped[str] = mapped_column(String(255))
    mime_type: Mapped[str] = mapped_column(String(128))
    size: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[int] = mapped_column(BigInteger)  # epoch ms


def _mime(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def _read(path: str) -> FileBytes:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    return read_fd(fd, Path(path).name, max_bytes=MAX_READ_BYTES)


async def store_file(db: Database, session_key: str, file: str | FileBytes, *,
                     name: str | None = None) -> dict[str, Any]:
    """Copy a file into the store: the bytes a channel was given (read once, ``channels.files``), or a file the
    gateway wrote itself (an upload it saved); its attachment facts. ``name`` is what the page shows (default:
    the file's name)."""
    got = file if isinstance(file, FileBytes) else await asyncio.to_thread(_read, file)
    data = got.data
    name = (name or got.name)[:255] or "file"
    fid = secrets.token_hex(16)
    mime = _mime(name)
    async with db.session() as s:
        s.add(WebchatFile(id=fid, session_key=session_key, name=name, mime_type=mime, size=len(data), data=data,
                          created_at=int(time.time() * 1000)))
    return {"id": fid, "name": name, "mimeType": mime, "size": len(data),
            "url": f"{FILES_PATH}/{fid}/{quote(name)}", "inline": mime in INLINE_TYPES}


def link_attachment(url: str) -> dict[str, Any]:
    """An http(s) URL sent as an attachment: shown as a link (the page loads nothing from other sites)."""
    name = url.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0] or url
    return {"name": name[:255], "url": url, "mimeType": _mime(name), "external": True, "inline": False}


async def delete_files(db: Database, *, ids: list[str] | None = None, session_key: str | None = None) -> int:
    """Remove stored files by id, or every file of a session; how many went."""
    stmt = delete(WebchatFile)
    if ids is not None:
        if not ids:
            return 0
        stmt = stmt.where(WebchatFile.id.in_(ids))
    elif session_key is not None:
        stmt = stmt.where(WebchatFile.session_key == session_key)
    else:
        raise ValueError("give ids or session_key")
    async with db.session() as s:
        res = await s.execute(stmt)
    return int(getattr(res, "rowcount", 0) or 0)


async def serve_file(request: Request, db: Database, decide: Callable[[str], Awaitable[int]]) -> Response:
    """``GET FILES_PATH/<id>/<name>``: the file, inline only for raster images, never as active content.

    ``decide``: the access model's answer for the file's session (200, or 401/403: refused, nothing served).
    """
    fid = str(request.path_params.get("fid", ""))
    if len(fid) != 32 or not all(c in "0123456789abcdef" for c in fid):
        return PlainTextResponse("no such file", status_code=404)
    async with db.session() as s:
        row = (await s.execute(select(WebchatFile).where(WebchatFile.id == fid))).scalar_one_or_none()
        if row is None:
            return PlainTextResponse("no such file", status_code=404)
        data, name, mime, key = row.data, row.name, row.mime_type, row.session_key
    status = await decide(key)
    if status == 401:
        return PlainTextResponse("unauthorized: send Authorization: Bearer <your sign-in or token>", status_code=401,
                                 headers={"www-authenticate": "Bearer"})
    if status != 200:
        return PlainTextResponse("this file is not in a conversation you may read", status_code=403)
    inline = mime in INLINE_TYPES
    disposition = "inline" if inline else "attachment"
    return Response(data, media_type=mime if inline else "application/octet-stream", headers={
        "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(name)}",
        "Content-Security-Policy": "sandbox; default-src 'none'",
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "private, no-store",  # per credential: not kept for the next sign-in
        "Referrer-Policy": "no-referrer",
    })
