"""Which room a target names: room ids, aliases and users' DM rooms, and whether a room is a DM.

A room of two (the bot and one person, joined or invited) is a DM; any larger room is a group. A user id as a
target is the DM room the bot last talked to them in, else any room of two with them in it, else a new one.
"""

from __future__ import annotations

import re

import nio

from channels.base import ChannelError, TargetNotFound
from channels.matrix.errors import call
from channels.matrix.session import Session
from gateway.platforms import ChatType

__all__ = ["Rooms", "event_id", "room_target"]


def room_target(to: str) -> str:
    """``to`` checked as a room id, an alias or a user id (``TargetNotFound`` naming ``to`` otherwise)."""
    to = to.strip()
    # Room ids carry no server part from room version 12 on (``!opaque``); aliases and users always do.
    if re.fullmatch(r"![^\s]+|[#@][^:\s]+:\S+", to):
        return to
    raise TargetNotFound(
        f"matrix: not a room id, alias or user id: {to!r} (!room:server, #alias:server, @user:server)",
        details={"field": "to", "to": to},
    )


def event_id(value: str, field: str) -> str:
    """``value`` checked as an event id (``$...``), the error naming ``field``."""
    if not re.fullmatch(r"\$\S+", value.strip()):
        raise ChannelError(f"matrix: {field} must be an event id ($...), got {value!r}", details={"field": field})
    return value.strip()


class Rooms:
    """Targets resolved to room ids, with the DM room last used per person remembered."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._dm: dict[str, str] = {}  # user id -> the DM room the bot last talked to them in

    def remember_dm(self, user_id: str, room_id: str) -> None:
        self._dm[user_id] = room_id

    async def resolve(self, to: str) -> str:
        """A room id for ``to``: a room id as it is, an alias resolved, a user id's DM room (created if none)."""
        target = room_target(to)
        client = self._session.live()
        account = self._session.account_id
        if target.startswith("!"):
            return target
        if target.startswith("#"):
            got = await call(
                "resolveAlias", to, client.room_resolve_alias(target), nio.RoomResolveAliasResponse, account
            )
            return str(got.room_id)
        known = self._dm.get(target)
        if known and known in client.rooms:
            return known
        for room in client.rooms.values():
            if room.member_count <= 2 and target in room.users and not room.encrypted:
                self._dm[target] = room.room_id
                return str(room.room_id)
        got = await call(
            "createRoom", to, client.room_create(invite=[target], is_direct=True), nio.RoomCreateResponse, account
        )
        self._dm[target] = got.room_id
        return str(got.room_id)

    def chat_type(self, room_id: str) -> ChatType:
        room = self._session.live().rooms.get(room_id)
        if room is None:
            return "group"
        return "dm" if room.member_count <= 2 else "group"  # members joined or invited

    def sender_name(self, room_id: str, user_id: str) -> str | None:
        """How the room shows ``user_id`` (their display name there), None for a room the bot does not know."""
        room = self._session.live().rooms.get(room_id)
        return room.user_name(user_id) if room is not None else None
