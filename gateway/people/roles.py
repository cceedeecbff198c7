"""The four roles and what each may do at the gateway's doors.

=========  =====================================================================================================
``owner``  everything, as the gateway token: every session, config, people; their runs get the owner tools.
``admin``  administers people, pairing, channels and ordinary settings (operator.admin), but reads only their
           own transcripts unless ``people.adminsReadTranscripts`` is on; never becomes someone else, nor changes
           what is the owner's (``gateway.config.owner_only``, and the ``exec`` of ``gateway.access``).
``member`` their own sessions, transcripts, usage and approvals; their runs' tools reach all their own
           sessions (their other chats, their web chat) and nobody else's, and work in their own workspaces.
``guest``  as a member at the web chat; their runs' tools reach only the chat the run came from.
=========  =====================================================================================================
"""

from __future__ import annotations

from typing import Final, Literal

from gateway.dispatch.callers import ADMIN, APPROVALS, PAIRING, QUESTIONS, READ, WRITE

__all__ = ["ROLES", "Role", "confined", "scopes_for"]

Role = Literal["owner", "admin", "member", "guest"]
ROLES: Final[tuple[Role, ...]] = ("owner", "admin", "member", "guest")

_SCOPES: Final[dict[str, frozenset[str]]] = {
    "owner": frozenset({READ, WRITE, ADMIN, APPROVALS, PAIRING, QUESTIONS}),
    "admin": frozenset({READ, WRITE, ADMIN, APPROVALS, PAIRING, QUESTIONS}),
    "member": frozenset({READ, WRITE, APPROVALS, QUESTIONS}),
    "guest": frozenset({READ, WRITE, APPROVALS, QUESTIONS}),
}


def scopes_for(role: str) -> frozenset[str]:
    """The operator scopes a person's web sign-in carries (an unknown role: read only)."""
    return _SCOPES.get(role, frozenset({READ}))


def confined(role: str, *, admins_read_transcripts: bool = False) -> bool:
    """Whether a person in ``role`` sees only their own sessions."""
    if role == "owner":
        return False
    return not (role == "admin" and admins_read_transcripts)
