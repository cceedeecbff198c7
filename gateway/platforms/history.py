"""The channel message log: every message in and out, so ``message.read`` works on every channel.

Telegram bots cannot fetch chat history, and a channel may be down when someone asks, so we read
from our own copy. Outbound rows carry the session that sent them.
"""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from sqlalchemy import select, update

from gateway.platforms.messages import Inbound, Sent
from gateway.store.base import utcnow
from gateway.store.messages import ChannelMessage, InboundRef, mark_handled

if TYPE_CHECKING:
    from gateway.store import Database

__all__ = ["MessageLog", "message_dict"]

log = structlog.get_logger("gateway.platforms")


class MessageLog:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._in_flight: set[InboundRef] = set()

    async def record_in(self, msg: Inbound) -> bool:
        """Store an arriving message; whether to handle it.

        False when it was already handled, or is being handled right now: the platform delivered it
        again (Telegram redelivers updates a crashed gateway fetched but never acknowledged; Discord
        replays events on resume), and it must not run twice. A message stored but never handled (the
        gateway died in between) is handed out once more.
        """
        ref = msg.ref
        if ref in self._in_flight:
            return False
        media = [{k: v for k, v in (("kind", m.kind), ("url", m.url), ("path", m.path), ("mime", m.mime),
                                     ("name", m.name), ("size", m.size)) if v is not None} for m in msg.media]
        self._in_flight.add(ref)
        try:
            async with self.db.session() as s:
                seen = (await s.execute(select(ChannelMessage.id, ChannelMessage.handled_at).where(
                    ChannelMessage.channel == msg.channel, ChannelMessage.account_id == msg.account_id,
                    ChannelMessage.chat_id == msg.chat_id, ChannelMessage.message_id == msg.message_id,
                    ChannelMessage.direction == "in").limit(1))).first()
                if seen is None:
                    s.add(ChannelMessage(
                        channel=msg.channel, account_id=msg.account_id, chat_id=msg.chat_id,
                        thread_id=msg.thread_id, message_id=msg.message_id, direction="in",
                        sender_id=msg.sender_id, sender_name=msg.sender_name, text=msg.text,
                        reply_to_id=msg.reply_to_id, media=orjson.dumps(media).decode() if media else None,
                        ts=utcnow()))
        except BaseException:
            self._in_flight.discard(ref)
            raise
        if seen is not None and seen.handled_at is not None:
            self._in_flight.discard(ref)
            return False
        return True

    async def last_handled(self, channel: str, account_id: str) -> dict[str, str]:
        """Per conversation (a thread's id, else the chat's), the id of the newest inbound message handled:
        where a platform that does not redeliver (Discord) resumes reading its history after a crash."""
        from sqlalchemy import func

        async with self.db.session() as s:
            newest = (await s.execute(
                select(func.max(ChannelMessage.id)).where(
                    ChannelMessage.channel == channel, ChannelMessage.account_id == account_id,
                    ChannelMessage.direction == "in", ChannelMessage.handled_at.is_not(None))
                .group_by(ChannelMessage.chat_id, ChannelMessage.thread_id))).scalars().all()
            if not newest:
                return {}
            rows = (await s.execute(select(ChannelMessage.chat_id, ChannelMessage.thread_id, ChannelMessage.message_id)
                                    .where(ChannelMessage.id.in_(newest)))).all()
        return {str(thread or chat): str(message) for chat, thread, message in rows}

    async def handled(self, msg: Inbound) -> None:
        """The message is dealt with (a turn queued, a command answered, or refused): never hand it out again.

        The run queue marks a message that became a turn in the same transaction that stores the turn;
        this covers every other outcome.
        """
        self._in_flight.discard(msg.ref)
        async with self.db.session() as s:
            await mark_handled(s, msg.ref)

    async def record_out(self, channel: str, account_id: str, sent: Sent, text: str, *,
                         reply_to_id: str | None = None, media: list[dict[str, Any]] | None = None,
                         session_key: str | None = None) -> None:
        """Store a message we sent. Never raises: the message is already out, losing its copy must not
        turn the send into a failure."""
        try:
            async with self.db.session() as s:
                s.add(ChannelMessage(
                    channel=channel, account_id=account_id, chat_id=sent.chat_id, thread_id=sent.thread_id,
                    message_id=sent.message_id, direction="out", sender_id=None, text=text,
                    reply_to_id=reply_to_id, media=orjson.dumps(media).decode() if media else None,
                    session_key=session_key, ts=utcnow()))
        except Exception:
            log.exception("cannot store outbound message", channel=channel)

    async def mark_deleted(self, channel: str, account_id: str, chat_id: str, message_id: str) -> None:
        async with self.db.session() as s:
            await s.execute(update(ChannelMessage).where(
                ChannelMessage.channel == channel, ChannelMessage.account_id == account_id,
                ChannelMessage.chat_id == chat_id, ChannelMessage.message_id == message_id).values(deleted=True))

    async def read(self, channel: str, account_id: str | None, chat_id: str, *, limit: int = 20,
                   thread_id: str | None = None) -> list[dict[str, Any]]:
        """Stored messages of one chat, oldest first."""
        q = select(ChannelMessage).where(ChannelMessage.channel == channel, ChannelMessage.chat_id == chat_id,
                                         ChannelMessage.deleted.is_(False))
        if account_id is not None:
            q = q.where(ChannelMessage.account_id == account_id)
        if thread_id is not None:
            q = q.where(ChannelMessage.thread_id == thread_id)
        async with self.db.session() as s:
            rows = (await s.execute(q.order_by(ChannelMessage.id.desc()).limit(limit))).scalars().all()
        return [message_dict(r) for r in reversed(rows)]


def message_dict(r: ChannelMessage) -> dict[str, Any]:
    ts = r.ts if r.ts.tzinfo else r.ts.replace(tzinfo=UTC)
    out: dict[str, Any] = {
        "id": r.message_id, "direction": r.direction, "from": r.sender_id if r.direction == "in" else "bot",
        "text": r.text, "ts": int(ts.timestamp() * 1000),
    }
    if r.sender_name:
        out["senderName"] = r.sender_name
    if r.thread_id:
        out["threadId"] = r.thread_id
    if r.reply_to_id:
        out["replyToId"] = r.reply_to_id
    if r.session_key:
        out["sessionKey"] = r.session_key
    if r.media:
        out["media"] = orjson.loads(r.media)
    return out
