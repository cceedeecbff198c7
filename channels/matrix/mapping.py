"""A room event mapped to an ``Inbound``: which events count as messages, mentions, replies, threads, media.

In a group the bot is addressed by ``m.mentions``, its id or name in the text, a pill link, or a reply to one
of its messages; in a DM always. Threads (``rel_type: m.thread``) carry their root event id as ``thread_id``;
a reply's quoted fallback is taken off the text. A reaction picking an open choice, or a reply typing an
option's number, comes in as the option's data (``channels.matrix.choices``).
"""

from __future__ import annotations

import re
from typing import Any

import nio

from channels.base import Inbound, Media
from channels.matrix.choices import Choices
from channels.matrix.downloads import Downloads
from channels.matrix.rooms import Rooms
from channels.matrix.session import Session
from gateway.platforms import ChatType, MediaKind

__all__ = ["Mapping"]

_MEDIA_KINDS: dict[str, MediaKind] = {"m.image": "photo", "m.audio": "audio", "m.video": "video", "m.file": "file"}
_REPLY_FALLBACK = re.compile(r"\A(?:>[^\n]*\n)+\n?")


class Mapping:
    """One account's inbound events as the gateway's messages."""

    def __init__(self, channel: str, session: Session, rooms: Rooms, choices: Choices, downloads: Downloads) -> None:
        self.channel = channel
        self._session = session
        self._rooms = rooms
        self._choices = choices
        self._downloads = downloads

    def wanted(self, src: dict[str, Any]) -> bool:
        """A message from someone else (or an encrypted one, to explain once); not edits, not notices."""
        sender = src.get("sender", "")
        if sender == self._session.user_id or not sender or not src.get("event_id"):
            return False
        if src.get("type") == "m.room.encrypted":
            return True
        content = src.get("content") or {}
        if src.get("type") == "m.reaction":  # only a pick of an option counts; other reactions are no messages
            return self._choices.picked(src) is not None
        if src.get("type") != "m.room.message" or not content.get("msgtype"):
            return False
        relates = content.get("m.relates_to") or {}
        # Edits are not new messages; notices are other bots talking (answering them could loop forever).
        return relates.get("rel_type") != "m.replace" and content.get("msgtype") != "m.notice"

    def pick(self, room_id: str, src: dict[str, Any]) -> Inbound | None:
        """A reaction with an option's key: the reacting person typing that option's data (None when the choice
        was settled since the reaction was journalled)."""
        picked = self._choices.picked(src)
        if picked is None:
            return None
        entry, data = picked
        return self._inbound(
            room_id, src, chat_type=self._rooms.chat_type(room_id), text=data, thread_id=entry.get("thread"),
            mentioned=True,
        )

    async def message(self, room_id: str, src: dict[str, Any]) -> Inbound:
        content = src["content"]
        relates = content.get("m.relates_to") or {}
        thread = relates.get("event_id") if relates.get("rel_type") == "m.thread" else None
        reply = (relates.get("m.in_reply_to") or {}).get("event_id")
        if thread and relates.get("is_falling_back"):
            reply = None  # a thread message's fallback reply is not a real reply
        text = str(content.get("body") or "")
        if reply and not thread:
            text = _REPLY_FALLBACK.sub("", text)
        chat_type = self._rooms.chat_type(room_id)
        mentioned, text = await self._mentioned(room_id, content, text, reply)
        text = self._choices.typed_pick(reply, text) or text
        media: list[Media] = []
        kind = _MEDIA_KINDS.get(content.get("msgtype", ""))
        if kind is not None:
            if kind == "audio" and ("org.matrix.msc3245.voice" in content or "m.voice" in content):
                kind = "voice"
            info = content.get("info") or {}
            name = content.get("filename") or content.get("body") or None
            media.append(
                Media(
                    kind=kind,
                    path=await self._downloads.fetch(content, name, src["event_id"]),
                    mime=info.get("mimetype"),
                    name=name,
                    size=info.get("size"),
                )
            )
            # The body is a caption only when a separate filename is given (Matrix v1.10).
            text = (
                str(content.get("body") or "")
                if content.get("filename") and content.get("filename") != content.get("body")
                else ""
            )
        if chat_type == "dm":
            self._rooms.remember_dm(src["sender"], room_id)
        return self._inbound(
            room_id, src, chat_type=chat_type, text=text, thread_id=thread, reply_to_id=reply, media=tuple(media),
            mentioned=mentioned or chat_type == "dm",
        )

    def _inbound(self, room_id: str, src: dict[str, Any], *, chat_type: ChatType, **what: Any) -> Inbound:
        """The ``Inbound`` for one event of ``room_id``: who sent it, where and when, and ``what`` it says."""
        return Inbound(
            channel=self.channel,
            account_id=self._session.account_id,
            sender_id=src["sender"],
            sender_name=self._rooms.sender_name(room_id, src["sender"]),
            chat_id=room_id,
            chat_type=chat_type,
            message_id=src["event_id"],
            ts=(src.get("origin_server_ts") or 0) / 1000,
            raw=src,
            **what,
        )

    async def _mentioned(self, room_id: str, content: dict[str, Any], text: str, reply: str | None) -> tuple[bool, str]:
        """Whether the bot was addressed, and the text with the mention taken out."""
        me = self._session.user_id
        client = self._session.live()
        local = me[1:].split(":", 1)[0]
        room = client.rooms.get(room_id)
        names = [n for n in {me, room.user_name(me) if room else None, local} if n]
        hit = me in ((content.get("m.mentions") or {}).get("user_ids") or [])
        hit = hit or f"matrix.to/#/{me}" in str(content.get("formatted_body") or "")
        for name in sorted(names, key=len, reverse=True):
            pattern = re.compile(rf"(?<![\w@]){re.escape(name)}(?![\w]):?", re.IGNORECASE)
            if name != local or hit:  # a bare localpart counts only as "name:" at the start, or once hit
                if pattern.search(text):
                    hit = True
                    text = pattern.sub("", text, count=1).strip()
            elif re.match(rf"{re.escape(local)}\s*:", text, re.IGNORECASE):
                hit = True
                text = text.split(":", 1)[1].strip()
        if not hit and reply:
            got = await client.room_get_event(room_id, reply)
            hit = isinstance(got, nio.RoomGetEventResponse) and got.event.sender == me
        return hit, text
