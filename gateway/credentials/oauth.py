"""A subscription login's bearer, kept fresh by the gateway: no run ever holds the refresh token.

Claude Code's login (``~/.claude/.credentials.json``, ``claudeAiOauth``: ``accessToken``, ``refreshToken``,
``expiresAt`` in ms), Gemini CLI's Google login (``~/.gemini/oauth_creds.json``: ``access_token``,
``refresh_token``, ``expiry_date`` in ms) and Codex's ChatGPT login (``$CODEX_HOME/auth.json``, ``tokens``:
``access_token``, ``refresh_token``, ``account_id``; the expiry is the access token's own JWT ``exp``, and
``last_refresh`` is stamped at each refresh) are read at each use (``LoginShape``: where each keeps what). A token
within a minute of expiring, or one the upstream refused, is refreshed here with the refresh token (the
``modelGateway`` section names the endpoints), and the file is written back in place (same mode, other fields
kept) so the CLI on the host stays logged in. One refresh at a time per file; a file the host's CLI refreshed
meanwhile is taken as it is.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
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
    expires: str | None
    """Expiry in ms since the epoch; None: the access token is a JWT whose ``exp`` says it (Codex's)."""
    token_url: str
    form: bool
    """Refresh as a form (Google) rather than JSON (Anthropic, OpenAI)."""
    client: dict[str, str]
    """``client_id`` (and a public installed app's ``client_secret``) sent with the refresh."""
    headers: dict[str, str] = field(default_factory=dict)
    """More headers the upstream needs from the login: header -> the login's field (Codex's
    ``chatgpt-account-id`` from ``account_id``)."""
    stamp: str | None = None
    """A top-level field that gets the refresh's time (ISO 8601, UTC): Codex's ``last_refresh``."""


def jwt_expiry_ms(token: str) -> int:
    """A JWT's ``exp`` in ms since the epoch, read without checking the signature (the gateway only needs to know
    when to refresh; the upstream checks the token). 0: not a JWT, or no ``exp``."""
    parts = token.split(".")
    if len(parts) != 3:
        return 0
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return 0
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return int(exp * 1000) if isinstance(exp, int | float) and not isinstance(exp, bool) else 0


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
        return (await self.credential(path, shape, refused=refused))[0]

    async def credential(self, path: Path, shape: LoginShape, *,
                         refused: str | None = None) -> tuple[str, dict[str, str]]:
        """``bearer``'s token and the headers the login adds beside it (``LoginShape.headers``)."""
        lock = self._locks.setdefault(path, asyncio.Lock())
        async with lock:
            data, login = await asyncio.to_thread(_read, path, shape)
            token = str(login.get(shape.access) or "")
            expires = int(login.get(shape.expires) or 0) if shape.expires else jwt_expiry_ms(token)
            stale = refused is not None and token == refused
            if not token or stale or (expires and expires - _MARGIN_MS <= time.time() * 1000):
                token = await self._refresh(path, shape, data, login)
            return token, {name: str(login[key]) for name, key in shape.headers.items() if login.get(key)}

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
        if got.get("expires_in") and shape.expires:
            login[shape.expires] = int(time.time() * 1000 + float(got["expires_in"]) * 1000)
        if got.get("id_token") and "id_token" in login:
            login["id_token"] = got["id_token"]
        if shape.stamp:
            data[shape.stamp] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        await asyncio.to_thread(_write_back, path, data)
        self.refreshed += 1
        log.info("model gateway: subscription login refreshed", login=str(path))
        return str(login[shape.access])
