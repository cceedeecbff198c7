"""Matrix as a channel, through matrix-nio (extra ``matrix``).

One ``MatrixChannel`` is one bot account on one homeserver. It has the shape every channel has
(``channels.base.Channel``) and puts together the parts of this package, one concern each:

- ``session.py``: the client and the login (an access token, or a password once, the session kept);
- ``sync.py``: the ``/sync`` long-poll, each event journalled through the inbound pipeline before the
  since-token is saved past it;
- ``crypto.py``: end-to-end encryption's key upkeep (extra ``matrix-e2e``), and the one notice in an encrypted
  room the bot cannot read;
- ``invites.py``: invites joined when the access rules would let the inviter in (``autoJoin``);
- ``mapping.py``: a room event as an ``Inbound`` (DMs and groups, mentions, replies, threads, media);
- ``downloads.py``: files people send, fetched (and decrypted) from the content repository;
- ``choices.py``: reaction buttons (Matrix has none): the options as reaction keys, remembered across restarts;
- ``outbound.py``: messages, edits, attachments, reactions, redactions, pins, typing;
- ``rooms.py``: which room a target names; ``errors.py``: homeserver refusals as our errors;
  ``state.py``: the files an account keeps in its state dir.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import structlog

from channels.base import (
    Capability,
    Channel,
    ChannelUnavailable,
    InboundHandler,
    Sent,
)
from channels.environment import ChannelEnvironment
from channels.matrix.config import MatrixAccountConfig, parse_config
from channels.matrix.state import StateFiles
from channels.pipeline import Payload
from gateway.extras import MissingExtra
from gateway.platforms import FileBytes

try:
    import aiohttp
    import nio

    # Each needs nio (and outbound markdown-it-py), which come with the extra.
    from channels.matrix import crypto
    from channels.matrix.choices import Choices
    from channels.matrix.downloads import Downloads
    from channels.matrix.invites import Invites
    from channels.matrix.mapping import Mapping
    from channels.matrix.outbound import Outbound
    from channels.matrix.rooms import Rooms
    from channels.matrix.session import Session
    from channels.matrix.sync import Sync
except ImportError:  # pragma: no cover - exercised only without the extra
    nio = None  # type: ignore[assignment]

__all__ = ["MatrixChannel"]

log = structlog.get_logger("channels.matrix")

TEXT_LIMIT = 16_000
"""Characters per message: an event may be 64 KiB, and the HTML copy of the text travels in the same event."""


class MatrixChannel(Channel):
    """One Matrix bot account."""

    name = "matrix"
    text_limit = TEXT_LIMIT
    typing_lasts_s = 25.0
    capabilities = frozenset(
        {
            Capability.SEND,
            Capability.REPLY,
            Capability.THREAD_REPLY,
            Capability.REACT,
            Capability.DELETE,
            Capability.ATTACHMENT,
            Capability.PIN,
            Capability.TYPING,
            Capability.EDIT,
        }
    )

    def __init__(
        self,
        account_id: str,
        on_inbound: InboundHandler,
        settings: MatrixAccountConfig,
        *,
        state_dir: Path | None = None,
        media_dir: Path | None = None,
        host: Any = None,
        access: dict[str, Any] | None = None,
        env: ChannelEnvironment | None = None,
    ) -> None:
        super().__init__(account_id, on_inbound)
        if nio is None:
            raise MissingExtra("matrix", "the Matrix channel")
        self.settings = settings
        files = StateFiles(state_dir)
        self._session = Session(account_id, settings, files)
        rooms = Rooms(self._session)
        self._out = Outbound(self._session, rooms, settings, text_limit=TEXT_LIMIT)
        self._choices = Choices(account_id, files, self._out)
        self._encrypted = crypto.EncryptedRooms(account_id, self._out.put)
        self._mapping = Mapping(self.name, self._session, rooms, self._choices, Downloads(self._session, media_dir))
        env = env or ChannelEnvironment.alone(self.name, account_id, on_inbound)
        # Each room's events in order, rooms side by side.
        self._inbound = env.pipeline(self._handle, lambda payload: str(payload["room"]))
        invites = Invites(self.name, self._session, rooms, settings, host=host, access=access or {})
        self._sync = Sync(self._session, files, settings, invites, self._mapping.wanted, self._inbound.receive)
        self._task: asyncio.Task[None] | None = None

    @property
    def user_id(self) -> str:
        """The bot's user id (the homeserver's word for it once logged in)."""
        return self._session.user_id

    @staticmethod
    def configured(settings: dict[str, Any]) -> bool:
        """Any of the account's own keys set: a half-filled account then fails with the missing field named in
        ``channels.status``, instead of being skipped silently."""
        return any(settings.get(k) for k in ("homeserver", "userId", "accessToken", "password"))

    @classmethod
    def from_config(cls, account_id: str, settings: dict[str, Any], env: ChannelEnvironment) -> MatrixChannel:
        return cls(account_id, env.receive, parse_config(settings), state_dir=env.account_dir,
                   media_dir=env.media_dir, host=env.host, access=settings, env=env)

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Log in (or check the token), take a first sync, then keep syncing in the background."""
        client = await self._session.open()
        self._choices.load()
        try:
            await self._session.login()
            await crypto.upkeep(client)
            next_batch = await self._sync.first()
            await self._inbound.replay()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            await self.stop()
            raise ChannelUnavailable(
                f"matrix account {self.account_id}: cannot reach {self.settings.homeserver}: {exc}", retryable=True
            ) from exc
        except Exception:
            await self.stop()
            raise
        self._task = asyncio.create_task(self._sync.loop(next_batch), name=f"matrix-sync-{self.account_id}")
        log.info("matrix bot started", account=self.account_id, user=client.user_id)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        await self._inbound.stop()  # an event cut off here stays unhandled in the journal: replayed at next start
        await self._session.close()

    # -- inbound ----------------------------------------------------------------------------------

    async def _handle(self, payload: Payload) -> None:
        """The pipeline's step: one room event (a message, a reaction answering a choice)."""
        room_id, src = str(payload["room"]), payload["event"]
        if src.get("type") == "m.room.encrypted":  # still encrypted: encryption off, or no key for it
            if self.settings.encryption:
                log.warning(
                    "matrix event could not be decrypted",
                    account=self.account_id,
                    room=room_id,
                    event=src.get("event_id"),
                )
                return
            await self._encrypted.explain(room_id)
            return
        if src.get("type") == "m.reaction":
            picked = self._mapping.pick(room_id, src)
            if picked is not None:  # None: settled (its keys taken off) since it was journalled
                await self.on_inbound(picked)
            return
        await self.on_inbound(await self._mapping.message(room_id, src))

    # -- outbound ---------------------------------------------------------------------------------

    async def send(
        self,
        to: str,
        text: str,
        *,
        thread_id: str | None = None,
        reply_to_id: str | None = None,
        effect_id: str | None = None,
        silent: bool = False,
    ) -> Sent:
        return await self._out.send(to, text, thread_id=thread_id, reply_to_id=reply_to_id, silent=silent)

    async def send_buttons(
        self, to: str, text: str, buttons: list[tuple[str, str]], *, thread_id: str | None = None
    ) -> Sent | None:
        """The options as reaction keys under the text (``channels.matrix.choices``)."""
        return await self._choices.offer(to, text, buttons, thread_id=thread_id)

    async def edit(self, to: str, message_id: str, text: str, *, thread_id: str | None = None) -> None:
        """An ``m.replace`` edit; a message that offered choices is settled by it (the bot's keys taken off)."""
        await self._out.edit(to, message_id, text)
        await self._choices.settle(message_id)

    async def send_attachment(
        self, to: str, file: str | FileBytes, *, caption: str | None = None, thread_id: str | None = None
    ) -> Sent:
        return await self._out.send_attachment(to, file, caption=caption, thread_id=thread_id)

    async def react(self, to: str, message_id: str, emoji: str) -> None:
        await self._out.react(to, message_id, emoji)

    async def delete(self, to: str, message_id: str, *, thread_id: str | None = None) -> None:
        await self._out.delete(to, message_id)

    async def pin(self, to: str, message_id: str) -> None:
        await self._out.pin(to, message_id)

    async def typing(self, to: str, *, thread_id: str | None = None) -> None:
        await self._out.typing(to, self.typing_lasts_s or 25)
