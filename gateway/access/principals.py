"""Who calls: every kind of principal the gateway knows, built from the ``Caller`` a connection was given.

=========  ==========================================================================================================
``owner``  the gateway token (a device paired with it too), or a person whose role is ``owner``
``admin``  a person with role ``admin``: administers people, pairing and channels; not the owner's settings
``member`` a person with role ``member``: their own sessions, chats, usage, memory and tokens
``guest``  a person with role ``guest``: as a member, at the web chat
``run``    an agent run holding its run token: owner tier (the owner's own message) or baseline tier (anyone
           else's), confined to its session, the sessions it spawned and the chat it came from (or, in a person's
           session, to that person's things)
``token``  a ``/mcp`` token: as a run of its person (or the owner's tier for the owner's own token)
``node``   a paired machine: only the node methods
=========  ==========================================================================================================

A paired stranger never connects: they reach the gateway only through a chat, whose commands are decided for
the run principal of their session (``Principal.for_chat``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from gateway.dispatch.callers import ADMIN, Caller, SessionScope

__all__ = ["KINDS", "Principal", "PrincipalKind", "is_owner", "principal_of"]

PrincipalKind = Literal["owner", "admin", "member", "guest", "run", "token", "node"]
KINDS: Final[tuple[PrincipalKind, ...]] = ("owner", "admin", "member", "guest", "run", "token", "node")
MCP_CLIENT: Final = "remoteclaw-mcp-http"


@dataclass(frozen=True, slots=True)
class Principal:
    """One caller as the authorization model sees it.

    ``sees_all``: reads and writes every session (the owner, an owner-tier run, an admin the owner lets read
    transcripts). Otherwise ``scope`` says which sessions and chats are theirs (``SessionScope``).
    """

    kind: PrincipalKind
    person_id: str | None = None
    sees_all: bool = False
    scope: SessionScope | None = None
    owner_tier: bool = False
    """The owner's authority: the owner, or a run or token acting for the owner."""
    scopes: frozenset[str] = frozenset()
    node_id: str | None = None
    """A node's own id (its device key's): what it may report about is its own (``Obj("node", key=...)``)."""

    @property
    def is_owner(self) -> bool:
        """The owner, or a run or ``/mcp`` token holding the owner's tier: what only the owner may do."""
        return self.owner_tier

    @property
    def is_run(self) -> bool:
        return self.kind in ("run", "token")

    @property
    def session_key(self) -> str | None:
        """A run's own session (a token's, when it was made for one)."""
        return self.scope.session_key if self.scope is not None else None

    @classmethod
    def for_chat(cls, session_key: str | None, channel: str, chat_id: str, *, person_id: str | None,
                 owner: bool) -> Principal:
        """Who speaks in a chat: a chat command is decided as the run of that chat's session would be (no session
        yet at the inbound door: then the chat and the person are all it has)."""
        if owner:
            return cls("run", person_id=person_id, sees_all=True, owner_tier=True, scopes=frozenset({ADMIN}))
        return cls("run", person_id=person_id,
                   scope=SessionScope(session_key, channel, chat_id, person_id=person_id))


def principal_of(caller: Caller, role_of: Callable[[str], str | None]) -> Principal:
    """The principal behind a connection's caller. ``role_of`` reads a person's current role (a demoted admin is
    a member from their next call on)."""
    if caller.role == "node":
        return Principal("node", scopes=caller.scopes, node_id=caller.device_id)
    scope = caller.confined_to
    if caller.run_session is not None or caller.client_id == MCP_CLIENT:
        owner = scope is None and caller.methods is None
        kind: PrincipalKind = "run" if caller.run_session is not None else "token"
        return Principal(kind, person_id=caller.person_id or (scope.person_id if scope else None), sees_all=owner,
                         scope=scope, owner_tier=owner, scopes=caller.scopes)
    if caller.person_id is not None:
        role = role_of(caller.person_id) or "guest"
        kind = role if role in ("owner", "admin", "member") else "guest"  # type: ignore[assignment]
        return Principal(kind, person_id=caller.person_id, sees_all=scope is None and kind in ("owner", "admin"),
                         scope=scope, owner_tier=kind == "owner", scopes=caller.scopes)
    owner = ADMIN in caller.scopes
    return Principal("owner", sees_all=scope is None, scope=scope, owner_tier=owner, scopes=caller.scopes)


def is_owner(caller: Caller, role_of: Callable[[str], str | None]) -> bool:
    """Whether the caller has the owner's authority (the gateway token, an owner's device or sign-in, a run or
    ``/mcp`` token of the owner's tier): the one test of "is this the owner" for what only the owner may do. An
    admin is not, even one the owner lets read every transcript."""
    return principal_of(caller, role_of).is_owner
