"""Who calls a gateway method: the operator scopes, the ``Caller`` fixed at handshake, and the reach of a non-owner
agent run (``SessionScope``). Plain data with no gateway imports, so any service can name a caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["ADMIN", "APPROVALS", "NODE", "OPERATOR_SCOPES", "PAIRING", "QUESTIONS", "READ", "WRITE", "Caller",
           "SessionScope", "grants"]

READ: Final = "operator.read"
WRITE: Final = "operator.write"
ADMIN: Final = "operator.admin"
APPROVALS: Final = "operator.approvals"
PAIRING: Final = "operator.pairing"
QUESTIONS: Final = "operator.questions"
"""Answering agents' questions (OpenClaw's ``question.*`` methods); admin implies it, as every scope."""
NODE: Final = "node"
"""Pseudo-scope: only clients connected with role ``node`` may call the method."""

OPERATOR_SCOPES: Final = (READ, WRITE, ADMIN, APPROVALS, PAIRING, QUESTIONS)


def grants(granted: frozenset[str], needed: str) -> bool:
    """Whether an operator holding ``granted`` scopes may use a method needing ``needed``.

    admin implies every operator scope; write implies read.
    """
    if needed in granted or ADMIN in granted:
        return True
    return needed == READ and WRITE in granted


@dataclass(frozen=True, slots=True)
class SessionScope:
    """What a confined caller may look at. A non-owner agent run: its own session, the sessions it spawned, and
    the sessions of the chat it came from (``channel`` + ``chat_id``, when it came from one). A person who sees
    only their own things (``person_id``: a member's web sign-in, or their run): every session that is theirs."""

    session_key: str | None
    channel: str | None = None
    chat_id: str | None = None
    person_id: str | None = None

    def allows(self, key: str, *, channel: str | None = None, peer_id: str | None = None,
               parent_key: str | None = None, person_id: str | None = None) -> bool:
        """Whether a session (its key, and the chat, parent and person stored with it) is within this scope."""
        if self.session_key is not None and (key == self.session_key or parent_key == self.session_key):
            return True
        if self.person_id is not None:
            return person_id == self.person_id
        return self.channel is not None and channel == self.channel and peer_id == self.chat_id

    def allows_chat(self, channel: str, chat_id: str) -> bool:
        return self.channel is not None and channel == self.channel and chat_id == self.chat_id


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: fixed at handshake time for the life of the connection."""

    conn_id: str
    role: str
    scopes: frozenset[str]
    client_id: str
    client_mode: str
    remote: str
    device_id: str | None = None
    display_name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    methods: frozenset[str] | None = None
    """When set, the only methods this caller may use (a non-owner agent run's token); None: no limit."""
    confined_to: SessionScope | None = None
    """When set, the only sessions and chats this caller may read (a non-owner agent run); None: all."""
    person_id: str | None = None
    """A person signed in with their own credential (``gateway.people``); None: the gateway token, a device, a run."""
    reach: tuple[str, ...] | None = None
    """An agent run: the only folders it may name files in for the gateway to read (what the run itself can
    see: its workspace); None: not a run, the caller's scopes decide."""
    run_session: str | None = None
    """An agent run (owner tier too): the session whose turn it is, so what the run does can be told apart
    (the audit log's ``agent-run:<sessionKey>``); None: not a run."""
    run_node: str | None = None
    """An agent run whose turn is on a node (``agents.list[].node``): that node's id. A file the run names is the
    node's, read there inside the turn's folder (``gateway.sandbox.reach.read_run_file``); None: here."""
