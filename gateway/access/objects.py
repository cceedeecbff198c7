"""What is acted on: the kinds of object, the actions, and the declaration each method carries (``Access``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["ACTIONS", "KINDS", "SESSION_BOUND", "Access", "Action", "Kind", "Obj"]

Kind = Literal[
    "session",   # a conversation: its transcript, runs, project, diff, subscriptions (owned by a person or a chat)
    "run",       # one agent turn, found by its id: decided as its session
    "approval",  # an approval or question an agent raised: decided as the session it came from
    "chat",      # a delivery target on a chat app (channel + chat id): the person linked to it, or its session's
    "usage",     # what turns cost: per session and per person
    "memory",    # an agent's memories: per person
    "token",     # a /mcp token or a web sign-in: its person's
    "person",    # a person on record: themselves; people are administered by admins
    "config",    # the gateway's config; the settings that widen access or run code are the owner's alone
    "agent",     # an agent's identity, model, files
    "node",      # a paired machine: running things on it is the owner's
    "pairing",   # pending senders and devices, channels' status
    "cron",      # scheduled jobs: they run as nobody's owner-tier turn, so changing them is an admin's
    "plugin",    # plugins and their tools
    "voice",     # speech: anyone's for their own conversations; the providers an admin's
    "gateway",   # the process itself: health, presence, logs, restart
]
KINDS: Final[tuple[str, ...]] = Kind.__args__  # type: ignore[attr-defined]

Action = Literal[
    "read",     # see it
    "write",    # change it, or talk into it
    "create",   # make a new one (a session in one's own name space)
    "admin",    # administer it (people, pairing, config, cron)
    "exec",     # run code or a command somewhere with it (nodes, agents' commands, plugins, restart)
    "become",   # act as it (a sign-in link for a person)
]
ACTIONS: Final[tuple[str, ...]] = Action.__args__  # type: ignore[attr-defined]

SESSION_BOUND: Final = frozenset({"session", "run", "approval", "usage"})
"""Kinds decided by the session they belong to."""


@dataclass(frozen=True, slots=True)
class Access:
    """What a method (or chat command) acts on, declared beside it: the kind of object, the action, and where the
    request names it.

    ``locate``: the params fields that name the object, in the order they are tried (``("sessionKey", "label")``);
    empty when the method names none: then the object is the kind as a whole (``config``, ``gateway``), or, with
    ``each``, a list the handler answers item by item through ``ctx.access`` (``sessions.list``).
    """

    kind: Kind
    action: Action
    locate: tuple[str, ...] = ()
    each: bool = False
    """A list or search: only the items the caller may ``action`` are answered."""
    own: bool = False
    """The caller's own object of this kind (``people.me``, a token list of one's own): nothing to find."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown object kind: {self.kind}")
        if self.action not in ACTIONS:
            raise ValueError(f"unknown action: {self.action}")
        if isinstance(self.locate, str):
            object.__setattr__(self, "locate", (self.locate,))

    def describe(self) -> str:
        """One line for the generated threat table (docs/security.md)."""
        where = f" named by {' or '.join(self.locate)}" if self.locate else ""
        many = " (each item)" if self.each else " (the caller's own)" if self.own else ""
        return f"{self.action} {self.kind}{where}{many}"


@dataclass(frozen=True, slots=True)
class Obj:
    """One object as the decision needs it: its kind, its identity, and whose it is.

    For a session-bound object: the session ``key`` and the chat, parent and person stored with it
    (``exists`` False: no such session yet, only its name). For a chat: ``channel`` and ``peer_id``, and the
    person linked to that chat. For a token, memory or person: ``person_id``.
    """

    kind: Kind
    key: str | None = None
    person_id: str | None = None
    channel: str | None = None
    peer_id: str | None = None
    parent_key: str | None = None
    exists: bool = True
    owner_only: bool = False
    """A setting or command only the owner may use (an agent's command, sandbox mode, node exec...)."""
