"""Where the doors ask the model: find the object a request names, decide, and filter events and lists.

``AccessControl`` is built once by the composition root with the few services it reads (the database, the session
names, the people, the run queue). The dispatcher asks it before every handler (``authorize``, from the method's
``Access`` declaration); handlers answering lists ask ``visible``; the event fan-out asks ``receives``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from gateway.access.objects import SESSION_BOUND, Access, Action, Kind, Obj
from gateway.access.policy import may, require
from gateway.access.principals import Principal, principal_of
from gateway.dispatch.callers import Caller
from gateway.protocol import InvalidRequest
from gateway.sessions.store import SessionRepo

if TYPE_CHECKING:
    from gateway.store import Database

__all__ = ["EVERYONE_EVENTS", "AccessControl", "Located", "ObjectFinder", "event_session"]

EVERYONE_EVENTS = frozenset({"tick", "presence", "health", "shutdown", "connect.challenge"})
"""Events about no object: every operator gets them."""

_T = TypeVar("_T")
ObjectFinder = Callable[[str], Awaitable[Obj | None]]
"""Finds an object of one kind by the id a request gives (a capability registers one: approvals by id)."""


class SessionNames(Protocol):
    """What the model reads of the sessions service: how a request's names become a key."""

    @property
    def default_agent_id(self) -> str: ...

    def normalize_key(self, key: str) -> str: ...


class PeopleLookup(Protocol):
    def role_of(self, person_id: str) -> str | None: ...

    def person_of_chat(self, channel: str, chat_id: str) -> str | None: ...

    def owner_of(self, session_key: str) -> str | None: ...


class RunLookup(Protocol):
    async def session_of(self, run_id: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Located:
    """The object a request named, as decided: the handler reads it instead of finding it again."""

    obj: Obj
    field: str | None


def event_session(payload: Any) -> str | None:
    """The session an event is about, wherever its payload says it: at the top (chat), in ``data`` (agent, whose
    closed schema leaves only that), in ``source`` or ``request`` (approvals and questions)."""
    if not isinstance(payload, dict):
        return None
    for holder in (payload, payload.get("data"), payload.get("source"), payload.get("request")):
        if isinstance(holder, dict):
            for field in ("sessionKey", "sourceSessionKey"):
                value = holder.get(field)
                if isinstance(value, str):
                    return value
    return None


class AccessControl:
    """The model's doors for one gateway start."""

    def __init__(self, db: Database, sessions: SessionNames, people: PeopleLookup, runs: RunLookup) -> None:
        self._db = db
        self._sessions = sessions
        self._people = people
        self._runs = runs
        self._finders: dict[str, ObjectFinder] = {}
        self._parents: dict[str, str | None] = {}
        """Session key -> its parent's key, as read: the event fan-out decides without a query."""

    def add_finder(self, kind: Kind, finder: ObjectFinder) -> None:
        """A capability's way to find its objects by id (``approval``: the approval or question's session)."""
        self._finders[kind] = finder

    def principal(self, caller: Caller) -> Principal:
        return principal_of(caller, self._people.role_of)

    # -- requests ------------------------------------------------------------------------------------

    async def authorize(self, access: Access, params: Any, caller: Caller) -> Located | None:
        """Decide a request by its method's declaration; the object it names, or None when it names none.

        Raises:
            Forbidden: naming the params field; InvalidRequest for a name that cannot be an object.
        """
        p = self.principal(caller)
        if access.each or access.own:
            require(p, access.action, Obj(access.kind, person_id=p.person_id, key=p.session_key))
            return None
        found = await self.locate(access, params, p)
        if found is None:
            if access.kind in SESSION_BOUND or access.kind == "chat":
                return None  # nothing named: the handler acts on the caller's own, or answers through visible()
            if access.kind in ("person", "token", "memory"):  # nothing named: the caller's own
                require(p, access.action, Obj(access.kind, person_id=p.person_id, key=p.session_key))
                return None
            require(p, access.action, Obj(access.kind))
            return None
        require(p, access.action, found.obj, found.field)
        return found

    def authorize_now(self, access: Access, caller: Caller) -> None:
        """For an inline method, answered without an await: its declaration names no object to find."""
        require(self.principal(caller), access.action, Obj(access.kind))

    async def locate(self, access: Access, params: Any, p: Principal) -> Located | None:
        """The object the params name, by the first of the declared fields that is given."""
        kind = access.kind
        if kind == "chat":
            channel, to = getattr(params, "channel", None), getattr(params, "to", None)
            if not channel or not to:
                return None
            return Located(self.chat(channel, str(to)), "to")
        for field in access.locate:
            value = getattr(params, field, None)
            if value is None or value == "":
                continue
            value = str(value)
            if kind in ("session", "usage"):
                if field == "label":
                    return Located(await self.session_by_label(value), field)
                if field == "agentId":
                    return Located(await self.session(f"agent:{value}:main"), field)
                try:
                    key = self._sessions.normalize_key(value)
                except InvalidRequest as exc:  # named by this field, whatever the key parser calls it
                    raise InvalidRequest(exc.message.replace("sessionKey", field, 1),
                                         details={**(exc.details or {}), "field": field}) from None
                return Located(await self.session(key, kind), field)
            if kind == "run":
                run_session = await self._runs.session_of(value)
                if run_session is None:
                    raise InvalidRequest(f"unknown {field}: no run '{value}'", details={"field": field})
                return Located(await self.session(run_session, "run"), field)
            if kind == "person":
                return Located(Obj("person", person_id=value,
                                   owner_only=self._people.role_of(value) == "owner"), field)
            finder = self._finders.get(kind)
            if finder is not None:
                obj = await finder(value)
                return None if obj is None else Located(obj, field)  # unknown: the handler says so its way
        if kind == "session" and "agentId" in access.locate:  # nothing named: the default agent's main session
            return Located(await self.session(f"agent:{self._sessions.default_agent_id}:main"), None)
        return None

    async def session(self, key: str, kind: Kind = "session") -> Obj:
        """A session as the model sees it (``exists`` False when there is none of that key yet)."""
        async with self._db.reading() as s:
            row = await SessionRepo.get(s, key)
        if row is None:
            return Obj(kind, key=key, exists=False)
        self._parents[key] = row.parent_key
        return Obj(kind, key=key, person_id=row.person_id, channel=row.channel, peer_id=row.peer_id,
                   parent_key=row.parent_key)

    async def session_by_label(self, label: str) -> Obj:
        async with self._db.reading() as s:
            row = await SessionRepo.by_label(s, label)
        if row is None:
            raise InvalidRequest(f"unknown label: no session labelled '{label}'", details={"field": "label"})
        return await self.session(row.key)

    def chat(self, channel: str, chat_id: str) -> Obj:
        """A delivery target: the person linked to it (their identity on that app), if anyone."""
        return Obj("chat", channel=channel, peer_id=chat_id, person_id=self._people.person_of_chat(channel, chat_id))

    async def check(self, caller: Caller, action: Action, obj: Obj, field: str | None = None) -> None:
        """For a handler that finds a second object on its way (a spawn's parent, a delivery's target)."""
        require(self.principal(caller), action, obj, field)

    async def check_session(self, caller: Caller, action: Action, key: str, field: str = "sessionKey") -> Obj:
        obj = await self.session(key)
        require(self.principal(caller), action, obj, field)
        return obj

    def allows(self, caller: Caller, action: Action, obj: Obj) -> bool:
        return may(self.principal(caller), action, obj)

    def visible(self, caller: Caller, rows: Iterable[_T], obj_of: Callable[[_T], Obj],
                action: Action = "read") -> list[_T]:
        """The items of a list the caller may ``action`` (a list answer never shows what a get would refuse)."""
        p = self.principal(caller)
        if p.sees_all:
            return list(rows)
        return [row for row in rows if may(p, action, obj_of(row))]

    # -- events --------------------------------------------------------------------------------------

    def receives(self, caller: Caller, event: str, payload: Any) -> bool:
        """Whether an event reaches this caller: one about a session only if the caller may read that session.

        Decided without a query: the session's person and parent as this replica last read them.
        """
        if event in EVERYONE_EVENTS:
            return True
        p = self.principal(caller)
        if p.sees_all:
            return True
        key = event_session(payload)
        if key is None:
            return False  # about no session: config, cron, pairing, nodes... the owner's view of the gateway
        obj = Obj("session", key=key, person_id=self._people.owner_of(key), parent_key=self._parents.get(key))
        return may(p, "read", obj)

    def note_parent(self, key: str, parent_key: str | None) -> None:
        """A spawned session's parent, so its events reach the run that spawned it."""
        self._parents[key] = parent_key
