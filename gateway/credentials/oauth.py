"""A subscription login's bearer, kept fresh by the gateway: no run ever holds the refresh token.

Claude Code's login (``~/.claude/.credentials.json``, ``claudeAiOauth``: ``accessToken``, ``refreshToken``,
``expiresAt`` in ms) is read at each use. A token within a minute of expiring, or one the upstream refused, is
refreshed here with the refresh token (``modelGateway.anthropicTokenUrl``), and the file is written back in place
(same mode, other fields kept) so the CLI on the host stays logged in. One refresh at a time per file; a file the
host's CLI refreshed meanwhile is taken as it is.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import structlog

__all__ = ["LoginRefresher", "RefreshFailed"]

log = structlog.get_logger("gateway.credentials")

_MARGIN_MS = 60_000


class RefreshFailed(Exception):
    """The login could not be refreshed (the message says why; the owner logs in again on the host)."""


def _read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("claudeAiOauth"), dict):
        raise RefreshFailed(f"{path} holds no claudeAiOauth login")
    return data


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
    def __init__(self, client: httpx.AsyncClient, token_url: str, client_id: str) -> None:
        self._client = client
        self.token_url = token_url
        self.client_id = client_id
        self._locks: dict[Path, asyncio.Lock] = {}
        self.refreshed = 0

    async def bearer(self, path: Path, *, refused: str | None = None) -> str:
        """The login's access token, refreshed first when it is about to expire or is ``refused`` (the token the
        upstream just answered 401 to)."""
        lock = self._locks.setdefault(path, asyncio.Lock())
        async with lock:
            data = await asyncio.to_thread(_read, path)
            login = data["claudeAiOauth"]
            token = str(login.get("accessToken") or "")
            expires = int(login.get("expiresAt") or 0)
            stale = refused is not None and token == refused
            if token and not stale and (not expires or expires - _MARGIN_MS > time.time() * 1000):
                return token
            return await self._refresh(path, data)

    async def _refresh(self, path: Path, data: dict[str, Any]) -> str:
        login = data["claudeAiOauth"]
        refresh = login.get("refreshToken")
        if not refresh:
            raise RefreshFailed(f"the login in {path} expired and holds no refresh token: log in again on the host")
        try:
            res = await self._client.post(self.token_url, json={
                "grant_type": "refresh_token", "refresh_token": refresh, "client_id": self.client_id}, timeout=30)
        except httpx.HTTPError as exc:
            raise RefreshFailed(f"the login could not be refreshed: {exc}") from exc
        if res.status_code != 200:
            raise RefreshFailed(f"the login could not be refreshed ({res.status_code}): log in again on the host")
        got = res.json()
        login["accessToken"] = got["access_token"]
        if got.get("refresh_token"):
            login["refreshToken"] = got["refresh_token"]
        if got.get("expires_in"):
            login["expiresAt"] = int(time.time() * 1000 + float(got["expires_in"]) * 1000)
        await asyncio.to_thread(_write_back, path, data)
        self.refreshed += 1
        log.info("model gateway: subscription login refreshed", login=str(path))
        return str(login["accessToken"])
