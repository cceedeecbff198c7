"""The decision: ``may(principal, action, obj)``. Nothing else in the gateway decides who reaches what.

Read as a table (docs/security.md has it in full, generated from the method registry):

- **sessions** (and what is bound to one: runs, approvals, usage): whoever sees everything (the owner, an
  owner-tier run, an admin the owner lets read transcripts); else a session within the principal's scope (a
  person's own sessions; a run's own session, the sessions it spawned and the chat it came from). A session that
  does not exist yet may be created only in one's own name space (``agent:<id>:person:<me>…``, or under a run's
  own session key), so nobody takes, ahead of its owner, the key someone else's chat will land in.
- **chats** (delivery targets): the owner's tier anywhere; a run its own chat; a person the chats linked to them.
- **people**: admins administer them but cannot administer the owner or become anyone (a sign-in link is for
  oneself, or made by the owner); everyone reads themselves.
- **usage**: a conversation's is decided as the conversation; a person's spending by the owner, admins and
  themselves.
- **tokens and memory**: their person's (admins may list and revoke tokens: that is administering people).
- **config, cron, pairing**: read by operators, changed by admins; what widens access or runs code
  (``Obj.owner_only``) by the owner alone.
- **nodes, plugins, the gateway**: read by operators; ``exec`` (running a command on a machine, enabling code,
  restarting) by the owner's tier alone.
"""

from __future__ import annotations

from gateway.access.objects import SESSION_BOUND, Action, Obj
from gateway.access.principals import Principal
from gateway.protocol import Forbidden

__all__ = ["may", "refusal", "require"]


def may(p: Principal, action: Action, obj: Obj) -> bool:
    """Whether ``p`` may do ``action`` to ``obj``."""
    if p.kind == "node":  # a node calls the node methods only (their scope says so), about itself: an object that
        # names its node (an agent turn placed there) is that node's alone
        return obj.kind == "node" and action == "write" and (obj.key is None or obj.key == p.node_id)
    if p.kind == "owner" and p.scope is None and obj.kind != "node":
        # The gateway token (or a device paired with it): its scopes decide, and what only the owner may do
        # needs the owner's tier (operator.admin).
        return p.is_owner or not (action == "exec" or obj.owner_only)
    kind = obj.kind
    if kind == "node" and action == "write":
        return False  # what a node reports about itself: only nodes do (above)
    if kind == "usage" and obj.key is None:  # a person's (or everyone's) spending, not one conversation's
        if p.is_owner or p.kind == "admin":
            return True  # the team's spending is administering people, not reading transcripts
        return p.person_id is not None and obj.person_id == p.person_id
    if kind in SESSION_BOUND:
        return _session(p, action, obj)
    if kind == "chat":
        return _chat(p, obj)
    if kind in ("token", "memory"):
        if p.is_owner:
            return True
        if p.kind == "admin" and kind == "token" and action in ("read", "admin"):
            return True  # listing and revoking people's tokens is administering people
        if p.person_id is not None:
            return obj.person_id == p.person_id
        return p.is_run and obj.person_id is None and obj.key is not None and obj.key == p.session_key
    if kind == "person":
        if p.is_owner:
            return True
        mine = p.person_id is not None and obj.person_id == p.person_id
        if action == "become":
            return mine
        if p.kind == "admin":
            return not obj.owner_only  # the owner's own record is the owner's
        return mine and action == "read"
    if p.is_run and not p.is_owner:
        # what a baseline run's tools show: agents, the gateway's health, plugin tools (each tiered by the host)
        return (action == "read" and kind in ("agent", "gateway")) or (kind == "plugin" and action in ("read", "write"))
    if kind == "voice" and action in ("read", "write"):
        return True  # speech for one's own conversations; the providers are set by admins
    if action == "exec" or obj.owner_only:
        return p.is_owner
    if action == "read":
        return True
    return p.is_owner or p.kind == "admin"


def _session(p: Principal, action: Action, obj: Obj) -> bool:
    if p.sees_all:
        return True
    key = obj.key or ""
    scope = p.scope
    if obj.exists:
        if scope is not None:
            return scope.allows(key, channel=obj.channel, peer_id=obj.peer_id, parent_key=obj.parent_key,
                                person_id=obj.person_id)
        return p.person_id is not None and obj.person_id == p.person_id
    if action == "read":
        return True  # nothing to see yet; its events, once there are any, are decided as they happen
    return _own_name_space(p, key)


def _own_name_space(p: Principal, key: str) -> bool:
    """A new session's key is the principal's to take: under their person key, or under their run's session."""
    own = p.session_key
    if own is not None and key.startswith(own + ":"):
        return True
    if p.person_id is None:
        return False
    parts = key.split(":")
    return len(parts) >= 4 and parts[0] == "agent" and parts[2] == "person" and parts[3] == p.person_id


def _chat(p: Principal, obj: Obj) -> bool:
    if p.sees_all and (p.is_owner or p.kind == "admin"):
        return True
    if p.is_owner:
        return True
    scope = p.scope
    if scope is not None and obj.channel is not None and obj.peer_id is not None \
            and scope.allows_chat(obj.channel, obj.peer_id):
        return True
    return p.person_id is not None and obj.person_id == p.person_id


def refusal(p: Principal, action: Action, obj: Obj, field: str | None) -> Forbidden:
    """The error a refused request gets: the object named by its field, never whose it is."""
    what = {"session": "a conversation", "run": "a run", "approval": "an approval or question",
            "usage": "a conversation's usage", "chat": "a chat", "token": "a token", "memory": "a memory",
            "person": "a person"}.get(obj.kind, f"the {obj.kind}")
    who = ("this agent run" if p.kind == "run" else "this token" if p.kind == "token"
           else "your sign-in" if p.person_id is not None else "this connection")
    named = f"{field} '{obj.key or obj.person_id or obj.peer_id or ''}'" if field else what
    if obj.owner_only or action == "exec":
        text = f"{named}: only the owner may {action} {what}"
        code = "OWNER_ONLY"
    else:
        text = f"{named} is not {what} {who} may {action}"
        bound = obj.kind in ("session", "run", "approval", "usage", "chat")
        code = "SESSION_FORBIDDEN" if bound else "FORBIDDEN_OBJECT"
    details: dict[str, str] = {"code": code}
    if field:
        details["field"] = field
    return Forbidden(text, details=details)


def require(p: Principal, action: Action, obj: Obj, field: str | None = None) -> None:
    """``may``, or the ``Forbidden`` that names ``field``."""
    if not may(p, action, obj):
        raise refusal(p, action, obj, field)
