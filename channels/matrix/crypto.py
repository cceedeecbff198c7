"""End-to-end encryption: the device's keys kept up to date, and what the bot says in a room it cannot read.

With ``encryption`` on (extra ``matrix-e2e``), nio's Olm machine decrypts events as they are synced and
encrypts what is sent; ``upkeep`` runs after each sync. With it off, the bot says once per room that it cannot
read it (``EncryptedRooms.explain``), ignores its encrypted events, and refuses to send into it in clear.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import nio
import structlog

__all__ = ["ENCRYPTED_TEXT", "EncryptedRooms", "upkeep"]

log = structlog.get_logger("channels.matrix")

ENCRYPTED_TEXT = (
    "This room is end-to-end encrypted, and this assistant cannot read encrypted messages yet. "
    "Talk to it in a room without encryption."
)


async def upkeep(client: nio.AsyncClient) -> None:
    """With encryption on: publish this device's keys, learn the others', and send the room keys due."""
    if client.olm is None:
        return
    if client.should_upload_keys:
        await client.keys_upload()
    if client.should_query_keys:
        await client.keys_query()
    if client.should_claim_keys:
        await client.keys_claim(client.get_users_for_key_claiming())
    await client.send_to_device_messages()


Put = Callable[[str, str, dict[str, Any]], Awaitable[str]]
"""Send one event into a room (``Outbound.put``)."""


class EncryptedRooms:
    """The rooms told once that the bot cannot read them (encryption off)."""

    def __init__(self, account_id: str, put: Put) -> None:
        self.account_id = account_id
        self._put = put
        self._warned: set[str] = set()

    async def explain(self, room_id: str) -> None:
        if room_id in self._warned:
            return
        self._warned.add(room_id)
        log.warning("matrix encrypted room: messages ignored", account=self.account_id, room=room_id)
        with contextlib.suppress(Exception):
            await self._put(room_id, "m.room.message", {"msgtype": "m.notice", "body": ENCRYPTED_TEXT})
