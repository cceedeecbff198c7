"""A loopback fake of the ChatGPT backend Codex talks to on a ChatGPT login (``POST <base>/responses``, the
Responses SSE of ``fake_openai``) and of OpenAI's token endpoint (``POST /oauth/token``, JSON), with JWT access
tokens like the real ones (their ``exp`` says when they expire).

Every Responses request's bearer and ``chatgpt-account-id`` are kept in ``calls``; a bearer in ``revoked`` is
answered 401. ``revoke_after = n``: the access token that answered the n-th Responses request is revoked then (it
expires mid-conversation). A refresh answers ``new_tokens`` and is kept in ``refreshes``.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from pathlib import Path
from typing import Any

from tests.support.fake_http import Reply, json_reply
from tests.support.fake_openai import FakeOpenAI

__all__ = ["FakeChatGPT", "chatgpt_login", "jwt"]


def jwt(claims: dict[str, Any]) -> str:
    """An unsigned JWT with ``claims`` (what Codex and the gateway read of one; the real backend checks more)."""
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.{part({'sig': uuid.uuid4().hex})}"


def access_token(*, expires_in: float = 3600) -> str:
    return jwt({"exp": int(time.time() + expires_in), "jti": uuid.uuid4().hex, "scp": ["openid", "offline_access"]})


def id_token(account: str) -> str:
    return jwt({"email": "owner@example.com", "exp": int(time.time() + 3600),
                "https://api.openai.com/auth": {"chatgpt_account_id": account, "chatgpt_plan_type": "pro"}})


def chatgpt_login(codex_home: Path, *, access: str, refresh: str, account: str) -> Path:
    """``codex login``'s ``auth.json`` (ChatGPT mode), 0600, with a config that names a model."""
    codex_home.mkdir(parents=True, exist_ok=True)
    path = codex_home / "auth.json"
    path.write_text(json.dumps({"auth_mode": "chatgpt", "OPENAI_API_KEY": None, "tokens": {
        "id_token": id_token(account), "access_token": access, "refresh_token": refresh, "account_id": account},
        "last_refresh": "2026-01-01T00:00:00Z"}, indent=2))
    path.chmod(0o600)
    return path


class FakeChatGPT(FakeOpenAI):
    def __init__(self, account: str) -> None:
        super().__init__()
        self.account = account
        self.calls: list[tuple[str, str]] = []
        """(bearer, chatgpt-account-id) of each Responses request."""
        self.refreshes: list[dict[str, Any]] = []
        self.revoked: set[str] = set()
        self.revoke_after: int | None = None
        self.new_tokens = {"access_token": access_token(), "refresh_token": "rt-new-" + uuid.uuid4().hex,
                           "id_token": id_token(account)}

    def respond(self, method: str, path: str, raw: bytes) -> Reply | None:
        if method == "POST" and path.split("?")[0].endswith("/oauth/token"):
            self.record(self.refreshes, json.loads(raw or b"{}"))
            return json_reply(self.new_tokens)
        if method == "POST" and path.split("?")[0].endswith("/responses"):
            bearer = self.request_headers.get("authorization", "").removeprefix("Bearer ")
            n = self.record(self.calls, (bearer, self.request_headers.get("chatgpt-account-id", "")))
            if bearer in self.revoked:
                return json_reply({"error": {"message": "Provided authentication token is expired.",
                                             "code": "token_expired"}}, 401)
            if self.revoke_after is not None and n >= self.revoke_after:
                self.revoked.add(bearer)
        return super().respond(method, path, raw)
