"""``PeopleService``: who a chat sender is, what they may see, and how they link chats and sign in.

Lookups by identity happen for every inbound message, so the identities are held in memory (a dict filled at
start and after each change here; another replica's change reaches this one within ``REFRESH_S``). Writes go
to the database first. On the first start with this capability, the single-owner config becomes the owner
person (``adopt_owners``): the ``ownerAllowFrom`` entries become that person's identities, and the direct-chat
sessions of those senders become theirs, so an upgrade loses nothing and changes no answer.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog
from sqlalchemy import delete, func, select, update

from gateway.people.roles import ROLES, confined
from gateway.people.store import LinkCode, Person, PersonIdentity, Signin
from gateway.protocol import Forbidden, InvalidRequest
from gateway.sessions.store import SessionRecord
from gateway.usage.store import TurnUsage, day_start_ms

if TYPE_CHECKING:
    from gateway.config import ConfigStore
    from gateway.store import Database

__all__ = ["CODE_TTL_S", "SIGNIN_PREFIX", "PeopleService", "PersonView", "person_key"]

log = structlog.get_logger("gateway.people")

CODE_TTL_S = 600
"""A link code or a sign-in link is good for ten minutes, once."""
REFRESH_S = 5.0
"""How stale this replica's copy of the people and identities may be (another replica linked someone)."""
SESSIONS_REFRESH_S = 60.0
"""How stale the session-to-person map may be: it only serves the events filter for sessions another replica
claimed (this replica notes its own claims at once), and reading it is a scan of the owned sessions."""
SIGNIN_PREFIX = "rcp_"
"""Sign-in credentials start with this: recognisable when leaked, never taken for the gateway token."""
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I: read aloud or retyped from a phone


def _now_ms() -> int:
    return int(time.time() * 1000)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def person_key(agent_id: str, person_id: str) -> str:
    """The one conversation of a person who chose one (their DMs everywhere and their web chat)."""
    return f"agent:{agent_id}:person:{person_id}"


@dataclass(frozen=True, slots=True)
class PersonView:
    """A person as the rest of the gateway sees them (no database row leaves this package)."""

    id: str
    name: str
    role: str
    one_conversation: bool = False
    max_cost_per_day: float | None = None
    agent_id: str | None = None
    """The agent that answers them (None: the gateway's default agent)."""

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"

    def confined(self, *, admins_read_transcripts: bool = False) -> bool:
        return confined(self.role, admins_read_transcripts=admins_read_transcripts)


def _view(p: Person) -> PersonView:
    return PersonView(p.id, p.name, p.role, bool(p.one_conversation), p.max_cost_per_day, p.agent_id)


class PeopleService:
    """People, their identities, link codes and web sign-ins (``gateway.people.store``)."""

    def __init__(self, db: Database, config: ConfigStore) -> None:
        self._db = db
        self._config = config
        self._by_identity: dict[tuple[str, str], PersonView] = {}
        self._people: dict[str, PersonView] = {}
        self._session_person: dict[str, str] = {}
        """Whose each person's session is, for the events filter (``gateway.access``), which cannot await."""
        self._loaded_at = 0.0
        self._sessions_loaded_at = 0.0
        self._on_remove: list[Callable[[str], Awaitable[None]]] = []

    # -- start and the in-memory copy ---------------------------------------------------------------

    async def start(self) -> None:
        await self.adopt_owners()
        await self._load()

    async def _load(self) -> None:
        async with self._db.reading() as s:
            people = {p.id: _view(p) for p in (await s.execute(select(Person))).scalars()}
            idents = (await s.execute(select(PersonIdentity))).scalars().all()
        self._people = people
        self._by_identity = {(i.channel, i.sender_id): people[i.person_id] for i in idents if i.person_id in people}
        self._loaded_at = time.monotonic()
        if people and time.monotonic() - self._sessions_loaded_at > SESSIONS_REFRESH_S:
            await self._load_sessions()

    async def _load_sessions(self) -> None:
        async with self._db.reading() as s:
            owned = (await s.execute(select(SessionRecord.key, SessionRecord.person_id)
                                     .where(SessionRecord.person_id.is_not(None)))).all()
        self._session_person = {key: pid for key, pid in owned if pid is not None}
        self._sessions_loaded_at = time.monotonic()

    async def _fresh(self) -> None:
        if time.monotonic() - self._loaded_at > REFRESH_S:
            await self._load()

    @property
    def enabled(self) -> bool:
        """Whether anyone is on record (without people the gateway behaves as a single-owner one)."""
        return bool(self._people)

    async def adopt_owners(self) -> int:
        """The owner lists of the config become the owner person, once (no owner on record yet). Returns how
        many identities were adopted."""
        config = self._config.config
        entries: list[tuple[str, str]] = []
        for raw in config.channels.ownerAllowFrom:
            channel, sep, sender = str(raw).strip().partition(":")
            if sep and sender and sender != "*":
                entries.append((channel.lower(), sender))
        sections = {**{n: getattr(config.channels, n) for n in type(config.channels).model_fields},
                    **(config.channels.model_extra or {})}
        for channel, section in sections.items():
            owners = section.get("ownerAllowFrom") if isinstance(section, dict) else getattr(section,
                                                                                            "ownerAllowFrom", None)
            for raw in owners or []:
                sender = str(raw).strip()
                prefix, sep, rest = sender.partition(":")
                if sep and prefix.lower() == channel:
                    sender = rest
                if sender and sender != "*" and ":" not in sender:
                    entries.append((channel, sender))
        if not entries:
            return 0
        now = _now_ms()
        async with self._db.session() as s:
            if await s.scalar(select(func.count()).select_from(Person).where(Person.role == "owner")):
                return 0
            owner_id = "owner" if await s.get(Person, "owner") is None else f"owner-{uuid.uuid4().hex[:6]}"
            s.add(Person(id=owner_id, name="Owner", role="owner", created_at=now, updated_at=now))
            await s.flush()
            seen: set[tuple[str, str]] = set()
            for channel, sender in entries:
                if (channel, sender) in seen:
                    continue
                seen.add((channel, sender))
                if await s.scalar(select(PersonIdentity.id).where(PersonIdentity.channel == channel,
                                                                  PersonIdentity.sender_id == sender)) is None:
                    s.add(PersonIdentity(person_id=owner_id, channel=channel, sender_id=sender, linked_by="upgrade",
                                         created_at=now))
                await s.execute(update(SessionRecord)
                                .where(SessionRecord.channel == channel, SessionRecord.peer_id == sender,
                                       SessionRecord.chat_type == "dm", SessionRecord.person_id.is_(None))
                                .values(person_id=owner_id))
        log.info("the owner lists became the owner person", person=owner_id, identities=len(seen))
        return len(seen)

    def note_session(self, key: str, person_id: str) -> None:
        """A session became ``person_id``'s (its events go to them from now on)."""
        self._session_person[key] = person_id

    def role_of(self, person_id: str) -> str | None:
        """A person's role as this replica last read it (None: no such person): what the access model asks."""
        person = self._people.get(person_id)
        return person.role if person is not None else None

    def person_of_chat(self, channel: str, chat_id: str) -> str | None:
        """The person a chat belongs to: the one whose identity on ``channel`` it is (a DM's chat is its sender)."""
        person = self._by_identity.get((channel, chat_id))
        return person.id if person is not None else None

    def owner_of(self, session_key: str) -> str | None:
        """The person a session belongs to (None: nobody's), as this replica last read it."""
        return self._session_person.get(session_key)

    # -- who is this ---------------------------------------------------------------------------------

    async def by_identity(self, channel: str, sender_id: str) -> PersonView | None:
        await self._fresh()
        return self._by_identity.get((channel, sender_id))

    def peek(self, person_id: str) -> PersonView | None:
        """The person as this replica last read them (no await: for checks on a hot path)."""
        return self._people.get(person_id)

    async def get(self, person_id: str, *, field: str = "id") -> PersonView:
        await self._fresh()
        found = self._people.get(person_id)
        if found is None:
            await self._load()
            found = self._people.get(person_id)
        if found is None:
            raise InvalidRequest(f"unknown {field}: no person '{person_id}'", details={"field": field})
        return found

    def admins_read_transcripts(self) -> bool:
        return bool(self._config.config.people.adminsReadTranscripts)

    async def describe(self, person_id: str | None = None) -> list[dict[str, Any]]:
        """People with their identities (one person, or all)."""
        async with self._db.reading() as s:
            q = select(Person).order_by(Person.created_at, Person.id)
            if person_id is not None:
                q = q.where(Person.id == person_id)
            people = (await s.execute(q)).scalars().all()
            idents = (await s.execute(select(PersonIdentity).order_by(PersonIdentity.created_at))).scalars().all()
        by_person: dict[str, list[PersonIdentity]] = {}
        for i in idents:
            by_person.setdefault(i.person_id, []).append(i)
        return [p.to_dict(by_person.get(p.id, [])) for p in people]

    # -- administration ------------------------------------------------------------------------------

    async def create(self, person_id: str, *, name: str | None, role: str, one_conversation: bool = False,
                     max_cost_per_day: float | None = None, agent_id: str | None = None) -> PersonView:
        if not _SLUG.match(person_id):
            raise InvalidRequest("invalid id: lower-case letters, digits, - and _ (up to 64)", details={"field": "id"})
        _check_role(role)
        now = _now_ms()
        async with self._db.session() as s:
            if await s.get(Person, person_id) is not None:
                raise InvalidRequest(f"invalid id: '{person_id}' is taken", details={"field": "id"})
            s.add(Person(id=person_id, name=name or person_id, role=role, one_conversation=one_conversation,
                         max_cost_per_day=max_cost_per_day, agent_id=agent_id, created_at=now, updated_at=now))
        await self._load()
        return self._people[person_id]

    async def update(self, person_id: str, **changes: Any) -> PersonView:
        """Change ``name``, ``role``, ``one_conversation`` or ``max_cost_per_day`` (None leaves a field as is,
        except ``max_cost_per_day`` where ``clear_budget`` removes it)."""
        clear_budget = changes.pop("clear_budget", False)
        clear_agent = changes.pop("clear_agent", False)
        async with self._db.session() as s:
            row = await s.get(Person, person_id)
            if row is None:
                raise InvalidRequest(f"unknown id: no person '{person_id}'", details={"field": "id"})
            role = changes.get("role")
            if role is not None:
                _check_role(role)
                if row.role == "owner" and role != "owner":
                    await _keep_an_owner(s, person_id)
                row.role = role
            if changes.get("name"):
                row.name = changes["name"]
            if changes.get("one_conversation") is not None:
                row.one_conversation = bool(changes["one_conversation"])
            if changes.get("max_cost_per_day") is not None:
                row.max_cost_per_day = float(changes["max_cost_per_day"])
            if clear_budget:
                row.max_cost_per_day = None
            if changes.get("agent_id") is not None:
                row.agent_id = changes["agent_id"]
            if clear_agent:
                row.agent_id = None
            row.updated_at = _now_ms()
        await self._load()
        return self._people[person_id]

    async def remove(self, person_id: str) -> None:
        """Forget a person: their identities, codes and sign-ins go; their sessions stay (the owner's to see)."""
        async with self._db.session() as s:
            row = await s.get(Person, person_id)
            if row is None:
                raise InvalidRequest(f"unknown id: no person '{person_id}'", details={"field": "id"})
            if row.role == "owner":
                await _keep_an_owner(s, person_id)
            for table in (PersonIdentity, LinkCode, Signin):
                await s.execute(delete(table).where(table.person_id == person_id))
            await s.execute(update(SessionRecord).where(SessionRecord.person_id == person_id).values(person_id=None))
            await s.delete(row)
        await self._load()
        for listener in self._on_remove:
            try:
                await listener(person_id)
            except Exception:  # one capability failing must not undo the removal
                log.exception("a capability failed to forget a removed person", person=person_id)

    def on_remove(self, listener: Callable[[str], Awaitable[None]]) -> None:
        """Call ``listener(person_id)`` after a person is removed here (``/mcp`` revokes their own tokens)."""
        self._on_remove.append(listener)

    async def link(self, person_id: str, channel: str, sender_id: str, *, by: str) -> None:
        """Make ``channel:sender_id`` one of the person's identities (moving it from anyone else)."""
        channel, sender_id = channel.strip().lower(), sender_id.strip()
        if not channel or not sender_id:
            raise InvalidRequest("give channel and senderId", details={"field": "senderId" if channel else "channel"})
        async with self._db.session() as s:
            if await s.get(Person, person_id) is None:
                raise InvalidRequest(f"unknown id: no person '{person_id}'", details={"field": "id"})
            await s.execute(delete(PersonIdentity).where(PersonIdentity.channel == channel,
                                                         PersonIdentity.sender_id == sender_id))
            s.add(PersonIdentity(person_id=person_id, channel=channel, sender_id=sender_id, linked_by=by,
                                 created_at=_now_ms()))
            await s.execute(update(SessionRecord)
                            .where(SessionRecord.channel == channel, SessionRecord.peer_id == sender_id,
                                   SessionRecord.chat_type == "dm", SessionRecord.person_id.is_(None))
                            .values(person_id=person_id))
        await self._load()

    async def unlink(self, channel: str, sender_id: str) -> bool:
        async with self._db.session() as s:
            gone = await s.execute(delete(PersonIdentity).where(PersonIdentity.channel == channel.strip().lower(),
                                                                PersonIdentity.sender_id == sender_id.strip()))
        await self._load()
        return bool(getattr(gone, "rowcount", 0))

    # -- codes: linking a chat, signing in to the web chat -------------------------------------------

    async def new_code(self, person_id: str, purpose: str) -> str:
        """A fresh single-use code for ``purpose`` (``link`` or ``signin``), good for ``CODE_TTL_S``."""
        code = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(8 if purpose == "link" else 32))
        now = _now_ms()
        async with self._db.session() as s:
            await s.execute(delete(LinkCode).where(LinkCode.expires_at < now))
            s.add(LinkCode(code_hash=_hash(code), person_id=person_id, purpose=purpose, created_at=now,
                           expires_at=now + CODE_TTL_S * 1000))
        return code

    async def _take_code(self, code: str, purpose: str) -> str | None:
        """The person a live code of ``purpose`` names, the code used up; None when there is no such code."""
        async with self._db.session() as s:
            row = await s.get(LinkCode, _hash(code.strip().upper() if purpose == "link" else code.strip()))
            if row is None or row.purpose != purpose:
                return None
            await s.delete(row)
            return row.person_id if row.expires_at >= _now_ms() else None

    async def redeem_link(self, code: str, channel: str, sender_id: str) -> PersonView | None:
        person_id = await self._take_code(code, "link")
        if person_id is None:
            return None
        await self.link(person_id, channel, sender_id, by="code")
        return self._people.get(person_id)

    async def redeem_signin(self, code: str, label: str) -> tuple[str, PersonView] | None:
        """A sign-in link opened: a new credential for the browser (shown once), or None."""
        person_id = await self._take_code(code, "signin")
        if person_id is None:
            return None
        credential = SIGNIN_PREFIX + secrets.token_urlsafe(32)
        async with self._db.session() as s:
            s.add(Signin(id=uuid.uuid4().hex[:16], person_id=person_id, token_hash=_hash(credential),
                         label=label[:200], created_at=_now_ms()))
        return credential, await self.get(person_id)

    # -- web sign-ins ---------------------------------------------------------------------------------

    async def authenticate(self, credential: str | None) -> tuple[PersonView, str] | None:
        """The person a live sign-in credential belongs to, and the sign-in's id (None: not one, or revoked)."""
        if not credential or not credential.startswith(SIGNIN_PREFIX):
            return None
        now = _now_ms()
        async with self._db.session() as s:
            row = (await s.execute(select(Signin).where(Signin.token_hash == _hash(credential)))).scalar_one_or_none()
            if row is None or row.revoked_at is not None:
                return None
            row.last_used_at = now
            person_id, signin_id = row.person_id, row.id
        try:
            return await self.get(person_id), signin_id
        except InvalidRequest:
            return None

    async def signins(self, person_id: str | None = None, *, include_revoked: bool = False) -> list[dict[str, Any]]:
        async with self._db.reading() as s:
            q = select(Signin).order_by(Signin.created_at.desc())
            if person_id is not None:
                q = q.where(Signin.person_id == person_id)
            if not include_revoked:
                q = q.where(Signin.revoked_at.is_(None))
            return [r.to_dict() for r in (await s.execute(q)).scalars()]

    async def revoke_signin(self, signin_id: str, *, person_id: str | None = None) -> bool:
        """Revoke one sign-in (only among ``person_id``'s when given). Its open connections are closed by the
        caller (``gateway.people.methods``)."""
        async with self._db.session() as s:
            row = await s.get(Signin, signin_id)
            if row is None or row.revoked_at is not None or (person_id is not None and row.person_id != person_id):
                return False
            row.revoked_at = _now_ms()
            return True

    # -- budgets -------------------------------------------------------------------------------------

    async def budget_refusal(self, person_id: str) -> str | None:
        """Why a turn of this person must not start (their ``maxCostPerDay`` is spent), or None."""
        person = await self.get(person_id)
        since = day_start_ms(datetime.now(UTC).date())
        limit = person.max_cost_per_day
        if limit is not None:
            spent = await self._spent(since, TurnUsage.person_id == person_id)
            if spent >= limit:
                return (f"{person.name}'s budget for today is spent (${spent:.2f} of ${limit:.2f}); new turns start "
                        f"again at 00:00 UTC, or an admin raises it (remoteclaw people set {person.id} "
                        "--max-cost-per-day N)")
        team = self._config.config.people.maxCostPerDay
        if team is not None and not person.is_owner:
            spent = await self._spent(since, TurnUsage.person_id.is_not(None))
            if spent >= team:
                return (f"the team's budget for today is spent (${spent:.2f} of ${team:.2f}); new turns start again "
                        "at 00:00 UTC, or the owner raises people.maxCostPerDay")
        return None

    async def _spent(self, since_ms: int, whose: Any) -> float:
        async with self._db.reading() as s:
            total = await s.scalar(select(func.coalesce(func.sum(TurnUsage.cost_usd), 0.0))
                                   .where(whose, TurnUsage.at_ms >= since_ms))
        return float(total or 0.0)

    def may_use(self, person: PersonView, agent_people: list[str] | None) -> bool:
        """Whether ``person`` may talk to an agent whose ``people`` list is ``agent_people`` (None: everyone)."""
        if agent_people is None or person.is_owner:
            return True
        return person.id in agent_people or f"role:{person.role}" in agent_people

    def require_agent_open(self, person: PersonView, agent_id: str, agent_people: list[str] | None, *,
                           who: str) -> None:
        """``may_use``, refused as a request naming ``sessionKey`` (the session is of an agent not open to them).

        Raises:
            Forbidden: ``SESSION_FORBIDDEN``; ``who`` is how the message names the person ("you", their id).
        """
        if not self.may_use(person, agent_people):
            raise Forbidden(f"sessionKey: agent '{agent_id}' is not open to {who} (agents.list[].people)",
                            details={"code": "SESSION_FORBIDDEN", "field": "sessionKey"})

    def may_work_in(self, person: PersonView | None, project_people: list[str] | None, *, is_owner: bool) -> bool:
        """Whether a conversation of ``person`` (None: nobody's, e.g. a group) may work in a project whose
        ``people`` list is ``project_people``. A project folder is the owner's unless its list opens it: once people
        are on record, a member's turn must not read or write the owner's checkout. Before, everyone may, as ever."""
        if is_owner or (person is not None and person.is_owner):
            return True
        if project_people is None:
            return not self.enabled
        return person is not None and (person.id in project_people or f"role:{person.role}" in project_people)



def _check_role(role: str) -> None:
    if role not in ROLES:
        raise InvalidRequest(f"invalid role: '{role}' (one of {', '.join(ROLES)})", details={"field": "role"})


async def _keep_an_owner(s: Any, leaving: str) -> None:
    others = await s.scalar(select(func.count()).select_from(Person)
                            .where(Person.role == "owner", Person.id != leaving))
    if not others:
        raise InvalidRequest("role: the last owner cannot stop being one (make someone else owner first)",
                             details={"field": "role"})
