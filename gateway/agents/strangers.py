"""Senders nobody has on record: what they never share with anyone (#51, safe defaults).

A sender let in by pairing, ``allowFrom`` or ``dmPolicy: open`` is not a person on record and not the owner. Whatever
``session.dmScope`` says, their direct chat is a session of their own, so their run never reads another's
transcript, resumes another's CLI session or works in another's project, and never becomes where another's answers
are delivered:

- ``main`` would put them in ``agent:<id>:main`` with the owner; ``per-peer`` would join a sender of another
  channel who happens to have the same id. Both become ``per-channel-peer`` for them; the stricter
  ``per-account-channel-peer`` stays.
- A session's delivery target (its last channel and chat, where cron's ``channel: "last"``, heartbeats and
  ``agent {deliver: true}`` without a target go) moves only with its owner's own messages.
- Their conversation works in no project: a project folder is someone's checkout.

The owner is whoever the channel's owner lists (or the person on record with the owner role) say. Group chats keep
their group session: everyone there sees the conversation anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.sessions.service import main_key

if TYPE_CHECKING:
    from gateway.people.service import PersonView

__all__ = ["dm_scope_for", "moves_route", "strangers_conversation"]


def dm_scope_for(dm_scope: str, *, is_owner: bool, person: PersonView | None) -> str:
    """The ``dmScope`` a direct chat's session key is derived with: the operator's, but never a shared one for a
    sender who is not on record."""
    if is_owner or person is not None or dm_scope == "per-account-channel-peer":
        return dm_scope
    return "per-channel-peer"


def moves_route(key: str, *, agent_id: str, chat_type: str, is_owner: bool, person: PersonView | None,
                session_person: str | None) -> bool:
    """Whether a message may make its chat the session's delivery target: only the session's owner's own.

    The agent's main session is the owner's; a session of a person on record is theirs; any other direct session is
    its one sender's (the key names them). A group's target is the group, whoever writes."""
    if chat_type != "dm":
        return True
    if key == main_key(agent_id):
        return is_owner
    if session_person is not None:
        return person is not None and person.id == session_person
    return True


def strangers_conversation(*, is_owner: bool, person_id: str | None, chat_type: str | None) -> bool:
    """Whether a turn is a direct chat of someone not on record (neither owner nor person): it works in no project."""
    return not is_owner and person_id is None and chat_type == "dm"
