"""A subscription login's bearer, kept fresh by the gateway: no run ever holds the refresh token.

Claude Code's login (``~/.claude/.credentials.json``, ``claudeAiOauth``: ``accessToken``, ``refreshToken``,
``expiresAt`` in ms) and Gemini CLI's Google login (``~/.gemini/oauth_creds.json``: ``access_token``,
``refresh_token``, ``expiry_date`` in ms) are read at each use (``LoginShape``: where each keeps what). A token
within a minute of expiring, or one the upstream refused, is refreshed here with the refresh token (the
``modelGateway`` section names the endpoints), and the file is written back in place (same mode, other fields
kept) so the CLI on the host stays logged in. One refresh at a time per file; a file the host's CLI refreshed
meanwhile is taken as it is.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import structlog

__all__ = ["LoginRefresher", "LoginShape", "RefreshFailed"]

log = structlog.get_logger("gateway.credentials")

_MARGIN_MS = 60_000


class RefreshFailed(Exception):
    """The login could not be refreshed (the message says why; the owner logs in again on the host)."""


@dataclass(frozen=True, slots=True)
class LoginShape:
    """Where one CLI's login file keeps its tokens, and how its provider refreshes them."""

    section: str | None
    """The object holding the tokens (``claudeAiOauth``), or None: the file's top level (Gemini's)."""
    access: str
    refresh: str
    expires: str
    """Expiry in ms since the epoch."""
    token_url: str
    form: bool
    """Refresh as a form (Google) rather than JSON (Anthropic)."""
    client: dict[str, str]
    """``client_id`` (and a public installed app's ``client_secret``) sent with the refresh."""


def _read(path: Path, shape: LoginShape) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's data and the object with the tokens."""
    data = json.loads(path.read_text())
    login = data.get(shape.section) if shape.section and isinstance(data, dict) else data
    if not isinstance(data, dict) or not isinstance(login, dict):
        raise RefreshFailed(f"{path} holds no login")
    return data, login


def _write_back(path: Path, data: dict[str, Any]) -> None:
    """``data`` into ``path`` atomically, with the file's mode (0600 when new)."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o600
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".credentials.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class LoginRefresher:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client
        self._locks: dict[Path, asyncio.Lock] = {}
        self.refreshed = 0

    async def bearer(self, path: Path, shape: LoginShape, *, refused: str | None = None) -> str:
        """The login's access token, refreshed first when it is about to expire or is ``refused`` (the token the
        upstream just answered 401 to)."""
        lock = self._locks.setdefault(path, asyncio.Lock())
        async with lock:
            data, login = await asyncio.to_thread(_read, path, shape)
            token = str(login.get(shape.access) or "")
            expires = int(login.get(shape.expires) or 0)
            stale = refused is not None and token == refused
            if token and not stale and (not expires or expires - _MARGIN_MS > time.time() * 1000):
                return token
            return await self._refresh(path, shape, data, login)

    async def _refresh(self, path: Path, shape: LoginShape, data: dict[str, Any], login: dict[str, Any]) -> str:
        refresh = login.get(shape.refresh)
        if not refresh:
            raise RefreshFailed(f"the login in {path} expired and holds no refresh token: log in again on the host")
        ask = {"grant_type": "refresh_token", "refresh_token": refresh, **shape.client}
        try:
            res = await (self._client.post(shape.token_url, data=ask, timeout=30) if shape.form else
                         self._client.post(shape.token_url, json=ask, timeout=30))
        except httpx.HTTPError as exc:
            raise RefreshFailed(f"the login could not be refreshed: {exc}") from exc
        if res.status_code != 200:
            raise RefreshFailed(f"the login could not be refreshed ({res.status_code}): log in again on the host")
        got = res.json()
        login[shape.access] = got["access_token"]
        if got.get("refresh_token"):
            login[shape.refresh] = got["refresh_token"]
        if got.get("expires_in"):
            login[shape.expires] = int(time.time() * 1000 + float(got["expires_in"]) * 1000)
        if got.get("id_token") and "id_token" in login:
            login["id_token"] = got["id_token"]
        await asyncio.to_thread(_write_back, path, data)
        self.refreshed += 1
        log.info("model gateway: subscription login refreshed", login=str(path))
        return str(login[shape.access])
