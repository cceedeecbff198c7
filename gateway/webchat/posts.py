"""What the ``webchat`` channel does to a session: post, reply, react, pin, delete and read its messages.

A web chat conversation is a session, so its messages are the session's transcript entries and a message
id is the entry's id. Each change is written first, then pushed to every open page: a new message as a
``chat`` event with ``state: "final"`` (how any client shows a finished reply), a change to an existing one
as ``chat.message``. A reload therefore shows exactly what the live page showed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.dispatch.callers import READ
from gateway.protocol import InvalidRequest
from gateway.sandbox.open_beneath import FileBytes
from gateway.sessions.events import agent_of, openclaw_message
from gateway.sessions.store import SessionRepo, TranscriptEntry
from gateway.webchat.files import delete_files, link_attachment, store_file

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from gateway.composition.callable_types import Broadcast
    from gateway.sessions.service import SessionsService
    from gateway.store import Database

__all__ = ["WebchatPosts"]


def _message_id(value: str, field: str = "messageId") -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise InvalidRequest(f"{field}: a web chat message id is a number (see message_read), got {value!r}",
                             details={"field": field}) from None
    if n <= 0:
        raise InvalidRequest(f"{field}: a web chat message id is a positive number, got {value!r}",
                             details={"field": field})
    return n


class WebchatPosts:
    """A session's messages as a chat channel sees them (``to`` is a session key, or ``main``)."""

    def __init__(self, db: Database, sessions: SessionsService, broadcast: Broadcast) -> None:
        self._db = db
        self._sessions = sessions
        self._broadcast = broadcast

    @staticmethod
    async def _entry(s: AsyncSession, key: str, message_id: str, field: str = "messageId") -> TranscriptEntry:
        """The message ``message_id`` of session ``key``; ``InvalidRequest`` naming ``field`` when there is none."""
        entry = await SessionRepo.entry(s, key, _message_id(message_id, field))
        if entry is None or entry.role == "tool":
            raise InvalidRequest(f"{field}: no message {message_id} in {key}",
                                 details={"field": field, "code": "NOT_FOUND"})
        return entry

    async def post(self, to: str, text: str, *, reply_to: str | None = None, thread: bool = False,
                   file: str | FileBytes | None = None,
                   buttons: list[tuple[str, str]] | None = None) -> tuple[str, str]:
        """Add an agent's message (text, and ``file``: a file's bytes or an http(s) URL; ``buttons``:
        ``(label, what a press sends)``, shown under it, a press sent as the viewer's message).

        Returns:
            ``(session key, message id)``.
        """
        key = self._sessions.normalize_key(to)
        await self._sessions.ensure(key)
        meta: dict[str, Any] = {}
        if reply_to is not None:
            async with self._db.session() as s:
                target = await self._entry(s, key, reply_to, "threadId" if thread else "replyToId")
            meta["replyTo"] = str(target.id)
            if thread:
                meta["thread"] = True
        if file is not None:
            attachment = (link_attachment(file) if isinstance(file, str) and file.startswith(("http://", "https://"))
                          else await store_file(self._db, key, file))
            meta["attachments"] = [attachment]
        if buttons:
            meta["buttons"] = [{"label": label, "send": data} for label, data in buttons]
        async with self._db.session() as s:
            entry = await SessionRepo.add_entry(s, key, "assistant", text, meta=meta or None)
            await s.flush()
            entry.run_id = f"msg-{entry.id}"
            message_id = str(entry.id)
        # A one-message turn in OpenClaw's ChatEvent shape: what our page reads rides in ``message``.
        payload: dict[str, Any] = {"runId": f"msg-{message_id}", "sessionKey": key, "seq": 0, "state": "final",
                                   "message": openclaw_message("assistant", text, messageId=message_id, **meta)}
        if agent_id := agent_of(key):
            payload["agentId"] = agent_id
        self._broadcast("chat", payload, scope=READ)
        return key, message_id

    async def react(self, to: str, message_id: str, emoji: str) -> None:
        """Set the agent's reaction on a message (an empty ``emoji`` removes it)."""
        await self._change(to, message_id, reaction=emoji or None)

    async def pin(self, to: str, message_id: str) -> None:
        await self._change(to, message_id, pinned=True)

    async def delete(self, to: str, message_id: str) -> None:
        """Delete a message: its text and files are removed; a placeholder keeps the conversation's shape."""
        await self._change(to, message_id, deleted=True)

    async def _change(self, to: str, message_id: str, **changes: Any) -> None:
        key = self._sessions.normalize_key(to)
        files: list[str] = []
        async with self._db.session() as s:
            entry = await self._entry(s, key, message_id)
            entry_id = entry.id
            if changes.get("deleted"):
                files = [a["id"] for a in entry.facts.get("attachments", []) if a.get("id")]
                entry.text = ""
                changes.update(reaction=None, pinned=None, attachments=None, replyTo=None, thread=None)
            elif entry.facts.get("deleted"):
                raise InvalidRequest(f"messageId: message {message_id} was deleted",
                                     details={"field": "messageId", "code": "NOT_FOUND"})
            facts = SessionRepo.update_meta(entry, **changes)
        if files:
            await delete_files(self._db, ids=files)
        self._broadcast("chat.message", {"sessionKey": key, "messageId": str(entry_id),
                                            "reaction": facts.get("reaction"), "pinned": bool(facts.get("pinned")),
                                            "deleted": bool(facts.get("deleted"))}, scope=READ)

    async def read(self, to: str, *, limit: int = 20) -> list[dict[str, Any]]:
        """The session's recent messages, oldest first, in ``message.read``'s shape (tool calls left out)."""
        key = self._sessions.normalize_key(to)
        async with self._db.session() as s:
            entries = await SessionRepo.history(s, key, limit * 3)
        out: list[dict[str, Any]] = []
        for e in entries:
            facts = e.facts
            if e.role == "tool" or facts.get("deleted"):
                continue
            msg: dict[str, Any] = {"id": str(e.id), "direction": "in" if e.role == "user" else "out",
                                   "from": "user" if e.role == "user" else "bot", "text": e.text,
                                   "ts": e.to_dict()["ts"], "sessionKey": key}
            if facts.get("replyTo"):
                msg["replyToId"] = facts["replyTo"]
            for k in ("reaction", "pinned", "error"):
                if facts.get(k):
                    msg[k] = facts[k]
            if facts.get("attachments"):
                msg["media"] = [{"kind": "file", "name": a["name"], "url": a["url"]} for a in facts["attachments"]]
            out.append(msg)
        return out[-limit:]
