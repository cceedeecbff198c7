"""A stored session row as the model's ``Obj``: what a list handler passes to ``AccessControl.visible``.

Lists read their rows in one query (with ``SessionWithin`` as a prefilter where there is one); the model decides
each row from the facts the row already holds, so a list never shows what a get of that row would refuse.
"""

from __future__ import annotations

from typing import Protocol

from gateway.access.objects import Kind, Obj

__all__ = ["session_obj"]


class SessionFacts(Protocol):
    key: str
    person_id: str | None
    channel: str | None
    peer_id: str | None
    parent_key: str | None


def session_obj(row: SessionFacts, kind: Kind = "session") -> Obj:
    """The session ``row`` as an object of ``kind`` (``usage``: its usage, decided as the session)."""
    return Obj(kind, key=row.key, person_id=row.person_id, channel=row.channel, peer_id=row.peer_id,
               parent_key=row.parent_key)
