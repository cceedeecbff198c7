"""The ``/sync`` long-poll, run here rather than by nio's ``sync_forever``, so the channel decides what happens
to the first batch and when the since-token is saved.

Each event worth handling goes to the inbound pipeline (journalled) before the token is saved past it
(``sync.json``), so a restart neither answers old messages again nor loses the ones that came while the gateway
was down or were cut off half-handled; on the very first start (no token yet) the rooms' history is skipped.
A failed sync, or a batch the journal could not take, is retried with a growing pause (1 s to 30 s).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import nio
import structlog

from channels.matrix import crypto
from channels.matrix.config import MatrixAccountConfig
from channels.matrix.errors import error_of
from channels.matrix.invites import Invites
from channels.matrix.session import Session
from channels.matrix.state import StateFiles
from channels.pipeline import Payload

__all__ = ["Sync"]

log = structlog.get_logger("channels.matrix")

Receive = Callable[[str, Payload], Awaitable[Any]]
"""The pipeline's door (``InboundPipeline.receive``): an update's key and payload."""


class Sync:
    """One account's sync: invites answered, room events handed to the pipeline, the position saved."""

    def __init__(
        self,
        session: Session,
        files: StateFiles,
        settings: MatrixAccountConfig,
        invites: Invites,
        wanted: Callable[[dict[str, Any]], bool],
        receive: Receive,
    ) -> None:
        self._session = session
        self._files = files
        self._settings = settings
        self._invites = invites
        self._wanted = wanted
        self._receive = receive

    def since(self) -> str | None:
        """The saved sync position, if it is this user's (a changed ``userId`` starts afresh)."""
        saved = self._files.load("sync.json")
        if not saved:
            return None
        position = json.loads(saved)
        user_id = self._session.user_id
        return str(position["since"]) if position.get("userId") == user_id and position.get("since") else None

    async def first(self) -> str:
        """The first sync from the saved position (all state and no history without one); the next batch's token."""
        since = self.since()
        first = await self._session.live().sync(timeout=0, since=since, full_state=since is None)
        if isinstance(first, nio.SyncError):
            raise error_of("sync", first, self._settings.homeserver, self._session.account_id)
        await self.handle(first, history=since is None)
        return str(first.next_batch)

    async def loop(self, since: str) -> None:
        account_id = self._session.account_id
        delay = 1.0
        while True:
            client = self._session.client
            if client is None:
                return
            try:
                resp = await client.sync(timeout=self._settings.syncTimeoutSeconds * 1000, since=since)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("matrix sync failed; retrying", account=account_id, error=str(exc), delay=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            if isinstance(resp, nio.SyncError):
                log.warning("matrix sync refused; retrying", account=account_id, error=resp.message, delay=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            try:
                await self.handle(resp, history=False)
            except Exception as exc:  # e.g. the journal could not be written: the same batch is fetched again
                log.warning(
                    "matrix sync batch not handled; fetching it again",
                    account=account_id,
                    error=str(exc),
                    delay=delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            delay = 1.0
            since = resp.next_batch
            try:
                await crypto.upkeep(client)
            except Exception as exc:
                log.warning("matrix key upkeep failed", account=account_id, error=str(exc))

    async def handle(self, resp: nio.SyncResponse, *, history: bool) -> None:
        """Invites, then each joined room's new events handed out; then the since-token is saved.

        Each event worth handling is written to the gateway's inbound journal before the token moves past it,
        and marked done once handled: one stopped half-way is handed out again at the next start. Rooms are
        handled at once, each room's events one after another, in order (a slow step in one room, such as a
        large download or ``/new`` waiting for a turn to stop, holds up no other room)."""
        for room_id, info in resp.rooms.invite.items():
            try:
                await self._invites.answer(room_id, info)
            except Exception as exc:  # still pending on the homeserver: seen again at the next start
                log.warning(
                    "matrix invite not answered", account=self._session.account_id, room=room_id, error=str(exc)
                )
        if not history:
            for room_id, info in resp.rooms.join.items():
                for event in info.timeline.events:
                    src: dict[str, Any] = getattr(event, "source", None) or {}
                    if not self._wanted(src):
                        continue
                    # Delivered twice (a sync retried after a failure): handled once.
                    await self._receive(str(src["event_id"]), {"room": room_id, "event": src})
        self._files.save("sync.json", json.dumps({"userId": self._session.user_id, "since": resp.next_batch}))
