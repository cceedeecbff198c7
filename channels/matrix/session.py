"""One account's connection to its homeserver: the nio client while the account runs, and the login.

It logs in with an access token (``whoami`` checks it), or once with a password; the session a password login
gets is kept in the state dir (``session.json``) so a restart reuses the same device. With ``encryption`` on the
client carries nio's Olm machine, its key store in the state dir (extra ``matrix-e2e``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import nio

from channels.base import ChannelError, ChannelNotLinked
from channels.matrix.config import MatrixAccountConfig
from channels.matrix.state import StateFiles
from gateway.extras import MissingExtra

__all__ = ["Session"]


class Session:
    """Who the account is logged in as, and the client it talks through (None while stopped)."""

    def __init__(self, account_id: str, settings: MatrixAccountConfig, files: StateFiles) -> None:
        self.account_id = account_id
        self.settings = settings
        self.files = files
        self.client: nio.AsyncClient | None = None
        self.user_id = settings.userId
        """The homeserver's answer to ``whoami`` or the login, once logged in; the configured id before."""

    def live(self) -> nio.AsyncClient:
        """The running client; ``ChannelNotLinked`` while the account is stopped."""
        if self.client is None:
            raise ChannelNotLinked(f"matrix account {self.account_id} is not running")
        return self.client

    async def open(self) -> nio.AsyncClient:
        """A fresh client (not logged in yet), with the Olm machine when encryption is on."""
        e2e = self.settings.encryption
        if e2e and not nio.crypto.ENCRYPTION_ENABLED:
            raise MissingExtra("matrix-e2e", "end-to-end encryption on Matrix (channels.matrix.encryption)")
        if e2e and self.files.dir is None:
            raise ChannelError(
                "channels.matrix.encryption needs a state dir for the key store",
                details={"field": "channels.matrix.encryption"},
            )
        config = nio.AsyncClientConfig(
            encryption_enabled=e2e, max_limit_exceeded=3, max_timeouts=2, request_timeout=30, store_sync_tokens=False
        )
        store = self.files.dir / "e2e-store" if e2e and self.files.dir is not None else None
        if store is not None:
            await asyncio.to_thread(store.mkdir, parents=True, exist_ok=True)
        self.client = nio.AsyncClient(
            self.settings.homeserver, self.settings.userId, store_path=str(store or ""), config=config
        )
        return self.client

    async def close(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    async def login(self) -> None:
        """Token: ``whoami`` checks it. Password: reuse the session saved by an earlier login, else log in once."""
        client = self.live()
        token, device = self.settings.accessToken, None
        saved = self.files.load("session.json")
        if not token and saved:
            session = json.loads(saved)
            if session.get("userId") == self.settings.userId:
                token, device = session.get("accessToken"), session.get("deviceId")
        if token:
            client.access_token = token
            who = await client.whoami()
            if isinstance(who, nio.WhoamiResponse):
                self.user_id = who.user_id
                if self.settings.encryption:  # loads (or creates) this device's keys from the store
                    if not (who.device_id or device):
                        raise ChannelError(
                            "channels.matrix.encryption: the homeserver did not say which device "
                            "the access token belongs to",
                            details={"field": "accessToken"},
                        )
                    client.restore_login(who.user_id, who.device_id or device or "", token)
                else:
                    client.user_id, client.device_id = who.user_id, who.device_id or device or ""
                return
            if self.settings.accessToken or not self.settings.password:
                raise ChannelError(
                    f"matrix account {self.account_id}: the access token was refused "
                    f"({who.status_code}: {who.message})",
                    details={"field": "accessToken"},
                )
        got = await client.login(self.settings.password or "", device_name=self.settings.deviceName)
        if not isinstance(got, nio.LoginResponse):
            raise ChannelError(
                f"matrix account {self.account_id}: login refused ({got.status_code}: {got.message})",
                details={"field": "password"},
            )
        self.user_id = got.user_id
        self.files.save(
            "session.json",
            json.dumps({"userId": got.user_id, "deviceId": got.device_id, "accessToken": got.access_token}),
        )
