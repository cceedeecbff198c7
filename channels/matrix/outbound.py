"""What the bot sends: messages (Markdown as ``formatted_body`` HTML), replies and thread replies, edits,
attachments through the content repository, reactions, redactions, pins and typing notifications.

Every event goes out through ``put``, which refuses to send in clear into an encrypted room when encryption is
off, and gives each event a fresh transaction id (the homeserver stores a retried request once).
"""

from __future__ import annotations

import asyncio
import contextlib
import mimetypes
import uuid
from pathlib import Path
from typing import Any

import nio

from channels.base import ChannelError, Sent
from channels.files import upload_of
from channels.matrix.config import MatrixAccountConfig
from channels.matrix.crypto import ENCRYPTED_TEXT
from channels.matrix.errors import call, error_of
from channels.matrix.format import to_html
from channels.matrix.rooms import Rooms, event_id
from channels.matrix.session import Session
from gateway.platforms import FileBytes

__all__ = ["VOICE_SUFFIXES", "Outbound"]

VOICE_SUFFIXES = frozenset({".ogg", ".oga", ".opus"})
"""OGG/Opus files go out as voice messages (the spoken replies of the voice capability are such files)."""
_OUT_KINDS = {"image": "m.image", "audio": "m.audio", "video": "m.video"}


def text_content(text: str, *, notice: bool = False) -> dict[str, Any]:
    content: dict[str, Any] = {"msgtype": "m.notice" if notice else "m.text", "body": text}
    rendered = to_html(text)
    if rendered:
        content["format"] = "org.matrix.custom.html"
        content["formatted_body"] = rendered
    return content


def relation(thread_id: str | None, reply_to_id: str | None) -> dict[str, Any] | None:
    if thread_id:
        rel: dict[str, Any] = {"rel_type": "m.thread", "event_id": event_id(thread_id, "threadId")}
        if reply_to_id:
            rel["m.in_reply_to"] = {"event_id": event_id(reply_to_id, "replyToId")}
        else:  # clients without threads show it as a reply to the thread's root
            rel["is_falling_back"] = True
            rel["m.in_reply_to"] = {"event_id": rel["event_id"]}
        return rel
    if reply_to_id:
        return {"m.in_reply_to": {"event_id": event_id(reply_to_id, "replyToId")}}
    return None


class Outbound:
    """The outbound operations of one account, with the reactions it set remembered (to take them off)."""

    def __init__(self, session: Session, rooms: Rooms, settings: MatrixAccountConfig, *, text_limit: int) -> None:
        self._session = session
        self.text_limit = text_limit
        """Characters per message (the channel's ``text_limit``)."""
        self._rooms = rooms
        self._settings = settings
        self._reactions: dict[tuple[str, str, str], str] = {}  # (room, event, key) -> our reaction's event id

    def _check_length(self, text: str) -> None:
        if len(text) > self.text_limit:
            raise ChannelError(
                f"matrix messages are at most {self.text_limit} characters", details={"field": "message"}
            )

    async def put(self, room_id: str, event_type: str, content: dict[str, Any]) -> str:
        """Send one event into a room; its event id."""
        client = self._session.live()
        room = client.rooms.get(room_id)
        if (
            not self._settings.encryption
            and room is not None
            and room.encrypted
            and event_type == "m.room.message"
            and content.get("body") != ENCRYPTED_TEXT
        ):
            raise ChannelError(
                "matrix: this room is end-to-end encrypted and channels.matrix.encryption is off",
                details={"channel": "matrix", "to": room_id, "code": "ENCRYPTED_ROOM"},
            )
        # A fresh transaction id per event: the homeserver stores a retried request once.
        got = await call(
            event_type,
            room_id,
            # Unverified devices get the room key too: the bot cannot verify anyone interactively.
            client.room_send(room_id, event_type, content, tx_id=uuid.uuid4().hex, ignore_unverified_devices=True),
            nio.RoomSendResponse,
            self._session.account_id,
        )
        return str(got.event_id)

    async def send(
        self, to: str, text: str, *, thread_id: str | None = None, reply_to_id: str | None = None, silent: bool = False
    ) -> Sent:
        self._check_length(text)
        room_id = await self._rooms.resolve(to)
        # Silent (a live note): m.notice, which clients and bots treat as "not for notifying or answering".
        content = text_content(text, notice=silent)
        rel = relation(thread_id, reply_to_id)
        if rel:
            content["m.relates_to"] = rel
        sent_id = await self.put(room_id, "m.room.message", content)
        return Sent(message_id=sent_id, chat_id=room_id, thread_id=thread_id)

    async def edit(self, to: str, message_id: str, text: str) -> None:
        self._check_length(text)
        room_id = await self._rooms.resolve(to)
        new = text_content(text, notice=True)
        content = {
            **new,
            "body": f"* {text}",
            "m.new_content": new,
            "m.relates_to": {"rel_type": "m.replace", "event_id": event_id(message_id, "messageId")},
        }
        content.pop("formatted_body", None)
        content.pop("format", None)
        await self.put(room_id, "m.room.message", content)

    async def send_attachment(
        self, to: str, file: str | FileBytes, *, caption: str | None = None, thread_id: str | None = None
    ) -> Sent:
        if isinstance(file, str) and file.startswith(("http://", "https://")):
            raise ChannelError(
                "matrix: attachments are uploaded from a local file; download the URL first", details={"field": "file"}
            )
        room_id = await self._rooms.resolve(to)
        upload = await asyncio.to_thread(upload_of, file)  # read once, by descriptor
        data, name = upload.data, upload.name
        voice = Path(name).suffix.lower() in VOICE_SUFFIXES
        mime = "audio/ogg" if voice else mimetypes.guess_type(name)[0] or "application/octet-stream"
        client = self._session.live()
        room = client.rooms.get(room_id)
        encrypt = bool(self._settings.encryption and room is not None and room.encrypted)
        got, keys = await client.upload(
            lambda *_: data, content_type=mime, filename=name, filesize=len(data), encrypt=encrypt
        )
        if not isinstance(got, nio.UploadResponse):
            raise error_of("upload", got, to, self._session.account_id)
        content: dict[str, Any] = {
            "msgtype": _OUT_KINDS.get(mime.split("/", 1)[0], "m.file"),
            "url": got.content_uri,
            "body": caption or name,
            "filename": name,
            "info": {"mimetype": mime, "size": len(data)},
        }
        if encrypt and keys:  # the file is encrypted in the repository; its key travels in the (encrypted) event
            content["file"] = {**keys, "url": content.pop("url")}
        if voice:  # shown as a voice message (a waveform and a play button) by clients that know MSC3245
            content["org.matrix.msc3245.voice"] = {}
            content["org.matrix.msc1767.audio"] = {}
        rel = relation(thread_id, None)
        if rel:
            content["m.relates_to"] = rel
        sent_id = await self.put(room_id, "m.room.message", content)
        return Sent(message_id=sent_id, chat_id=room_id, thread_id=thread_id)

    async def react(self, to: str, message_id: str, emoji: str) -> str | None:
        """Set a reaction (its event id), or with no ``emoji`` take ours off the message (None)."""
        room_id = await self._rooms.resolve(to)
        target = event_id(message_id, "messageId")
        if not emoji:  # remove ours: redact the reactions we set on it
            for key in [k for k in self._reactions if k[0] == room_id and k[1] == target]:
                await self.delete(room_id, self._reactions.pop(key))
            return None
        sent_id = await self.put(
            room_id, "m.reaction", {"m.relates_to": {"rel_type": "m.annotation", "event_id": target, "key": emoji}}
        )
        self._reactions[(room_id, target, emoji)] = sent_id
        return sent_id

    def forget_reactions(self, message_id: str) -> None:
        """Forget the reactions set on a message (they were redacted by whoever settled it)."""
        for key in [k for k in self._reactions if k[1] == message_id]:
            self._reactions.pop(key, None)

    async def delete(self, to: str, message_id: str) -> None:
        room_id = await self._rooms.resolve(to)
        await call(
            "redact",
            to,
            self._session.live().room_redact(room_id, event_id(message_id, "messageId")),
            nio.RoomRedactResponse,
            self._session.account_id,
        )

    async def pin(self, to: str, message_id: str) -> None:
        room_id = await self._rooms.resolve(to)
        target = event_id(message_id, "messageId")
        client = self._session.live()
        got = await client.room_get_state_event(room_id, "m.room.pinned_events", "")
        pinned = list((got.content or {}).get("pinned") or []) if isinstance(got, nio.RoomGetStateEventResponse) else []
        if target in pinned:
            return
        await call(
            "pin",
            to,
            client.room_put_state(room_id, "m.room.pinned_events", {"pinned": [*pinned, target]}),
            nio.RoomPutStateResponse,
            self._session.account_id,
        )

    async def typing(self, to: str, lasts_s: float) -> None:
        with contextlib.suppress(Exception):  # an indicator is never worth failing a run
            room_id = await self._rooms.resolve(to)
            await self._session.live().room_typing(room_id, True, timeout=int(lasts_s * 1000))
