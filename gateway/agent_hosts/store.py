"""The messages kept for an agent whose node is away, one row each (``node_kept_messages``): they outlive a
gateway restart, and any replica that sees the node back claims and runs them.

A row is the message's request as it was accepted (its text is in the transcript already): who sent it, from
where, whether the reply is delivered to a chat, the gateway's copies of its attachments (they go to the node
when it runs). Claiming is deleting: of two replicas releasing the same rows,
each row's delete succeeds for one of them only, so a message runs once.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import DateTime, Integer, String, Text, delete, func, select
from sqlalchemy.orm import Mapped, mapped_column

from gateway.runs.run import Origin, RunRequest
from gateway.store.base import Base, utcnow

if TYPE_CHECKING:
    from gateway.store import Database

__all__ = ["KeptMessage", "KeptStore"]


class KeptMessage(Base):
    __tablename__ = "node_kept_messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    node_ref: Mapped[str] = mapped_column(String(256), index=True)  # the node as the agent names it
    session_key: Mapped[str] = mapped_column(String(512))
    request: Mapped[str] = mapped_column(Text)  # JSON: the RunRequest's lasting fields
    lost: Mapped[int] = mapped_column(Integer, default=0)  # turns of this message cut off by the node going away
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


def _encode(req: RunRequest) -> str:
    return orjson.dumps({"sessionKey": req.session_key, "agentId": req.agent_id, "message": req.message,
                         "source": req.source, "isOwner": req.is_owner, "toolProfile": req.tool_profile,
                         "origin": asdict(req.origin) if req.origin is not None else None, "deliver": req.deliver,
                         "voiceIn": req.voice_in, "files": list(req.files)}).decode()


def _decode(text: str) -> RunRequest:
    data: dict[str, Any] = orjson.loads(text)
    origin = data.get("origin")
    return RunRequest(session_key=data["sessionKey"], agent_id=data["agentId"], message=data["message"],
                      source=data["source"], is_owner=bool(data["isOwner"]), tool_profile=data.get("toolProfile"),
                      origin=Origin(**origin) if isinstance(origin, dict) else None, deliver=bool(data["deliver"]),
                      voice_in=bool(data.get("voiceIn")), files=tuple(str(f) for f in data.get("files") or ()),
                      stored=True)


class KeptStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, node_ref: str, requests: list[RunRequest], *, lost: int) -> None:
        async with self._db.session() as s:
            s.add_all([KeptMessage(node_ref=node_ref, session_key=r.session_key, request=_encode(r), lost=lost)
                       for r in requests])

    async def counts(self) -> dict[str, int]:
        """How many messages wait, by node reference."""
        async with self._db.session() as s:
            rows = await s.execute(select(KeptMessage.node_ref, func.count()).group_by(KeptMessage.node_ref))
            return {ref: int(n) for ref, n in rows.all()}

    async def claim(self, refs: list[str]) -> list[tuple[RunRequest, int]]:
        """The messages waiting for any of ``refs``, oldest first, each taken by this caller alone (with how often
        its turn was cut off before)."""
        async with self._db.session() as s:
            rows = (await s.execute(select(KeptMessage.id, KeptMessage.request, KeptMessage.lost)
                                    .where(KeptMessage.node_ref.in_(refs)).order_by(KeptMessage.id))).all()
        out = []
        for row_id, text, lost in rows:
            async with self._db.session() as s:
                gone = await s.execute(delete(KeptMessage).where(KeptMessage.id == row_id))
            if getattr(gone, "rowcount", 0) == 1:
                out.append((_decode(text), int(lost)))
        return out
