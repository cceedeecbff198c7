"""``mcp.tokens.create``, ``mcp.tokens.list``, ``mcp.tokens.revoke``: who may use the tools over HTTP.

An operator needs admin: a token can carry the owner tier. A person signed in with their own credential
(``gateway.people``) makes tokens for themselves: baseline tier, reaching their own conversations only, listed
and revoked by them (admins see and revoke everyone's); only the owner makes owner-tier ones. ``create`` answers
the token once; afterwards only its hash exists (``gateway.mcp_http.tokens``). Creating and revoking go to the
audit log (``token.create``, ``token.revoke``), never the token itself.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from gateway.access import Access, Obj
from gateway.dispatch.dispatcher import ADMIN, READ, WRITE, CallContext, NoParams, Params, method
from gateway.mcp_http import tokens
from gateway.mcp_http.transport import MCP_HTTP
from gateway.people.service import PersonView, person_key
from gateway.protocol import Forbidden, InvalidRequest
from gateway.sessions.service import parse_key
from gateway.sessions.store import SessionRepo


class CreateParams(Params):
    name: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9 ._@-]+$",
                      description="What the token is for, e.g. laptop-claude")
    owner: bool = Field(False, description="Owner tier: every tool, admin scope. Default: the baseline tools.")
    profile: Literal["minimal", "messaging", "coding", "full"] = "full"
    sessionKey: str | None = Field(None, min_length=1, max_length=512,
                                   description="The session the tools act for (default: the main session; a "
                                               "person's token: their own conversation)")
    expires: str | None = Field(None, max_length=16, description="Lifetime, e.g. 30d, 12h; default: none")
    personId: str | None = Field(None, min_length=1, max_length=64,
                                 description="Whose token it is (admins: anyone's but the owner's; a person signed "
                                             "in with their own credential: theirs by default)")
    idempotencyKey: str | None = Field(None, max_length=256)


class RevokeParams(Params):
    id: str = Field(min_length=1, max_length=128, description="The token's id or name")


def _missing_admin() -> Forbidden:
    return Forbidden(f"missing scope: {ADMIN}", details={"code": "MISSING_SCOPE", "missingScope": ADMIN})


async def _signed_in(ctx: CallContext) -> PersonView | None:
    """The person the caller signed in as with their own credential (None: the gateway token, a device)."""
    person_id = ctx.caller.person_id
    if person_id is None:
        return None
    person = ctx.people.peek(person_id)
    if person is None:
        try:
            person = await ctx.people.get(person_id)
        except InvalidRequest:
            raise Forbidden("your sign-in's person is no longer on record", details={"code": "FORBIDDEN"}) from None
    return person


async def _whose(ctx: CallContext, person_id: str | None) -> PersonView | None:
    """The person a new token is for (None: the gateway's, an operator's token, as before people).

    A person signed in with their own credential makes theirs (the owner: the gateway's); the owner may name anyone
    else but the owner with ``personId`` (a token of someone's acts as them, so an admin makes only their own).

    Raises:
        Forbidden: an operator without admin scope (``MISSING_SCOPE``), or anyone but the owner naming someone else.
    """
    me = await _signed_in(ctx)
    admin = ADMIN in ctx.caller.scopes
    if person_id is None:
        if me is not None:
            return None if me.is_owner else me
        if not admin:
            raise _missing_admin()
        return None
    if not admin and (me is None or person_id != me.id):
        raise Forbidden("personId: you make tokens for yourself only", details={"code": "FORBIDDEN",
                                                                               "field": "personId"})
    target = await ctx.people.get(person_id, field="personId")
    if target.is_owner:
        raise InvalidRequest("personId: the owner's tokens are the gateway's; leave personId out",
                             details={"field": "personId"})
    # A person's token acts as that person: for oneself, or made by the owner (an admin becomes nobody).
    await ctx.access.check(ctx.caller, "become", Obj("person", person_id=person_id), "personId")
    return target


async def _their_session(ctx: CallContext, person: PersonView, key: str | None) -> str:
    """The session a person's token acts in: ``key`` if it is theirs (or new in their own name space, then made
    theirs), by default their own conversation with their agent.

    Raises:
        Forbidden: ``SESSION_FORBIDDEN`` naming ``sessionKey`` (someone else's, or an agent not open to them).
    """
    key = ctx.sessions.normalize_key(key or person_key(person.agent_id or ctx.sessions.default_agent_id, person.id))
    agent = ctx.sessions.agent(parse_key(key)[0], field="sessionKey")
    ctx.people.require_agent_open(person, agent.id, agent.people, who=person.id)
    async with ctx.db.reading() as s:
        row = await SessionRepo.get(s, key)
    if row is not None and row.person_id == person.id:
        return key
    mine = person_key(agent.id, person.id)
    if (row is None or row.person_id is None) and (key == mine or key.startswith(mine + ":")):
        await ctx.sessions.ensure(key, person_id=person.id)
        async with ctx.db.session() as s:
            row = await SessionRepo.get(s, key)
            if row is not None and row.person_id is None:
                row.person_id = person.id
        ctx.people.note_session(key, person.id)
        return key
    raise Forbidden(f"sessionKey '{key}' is not a conversation of {person.id}'s: name one of theirs, or one under "
                    f"{mine}", details={"code": "SESSION_FORBIDDEN", "field": "sessionKey"})


@method("mcp.tokens.create", access=Access("token", "create", own=True),
        params=CreateParams, scope=WRITE, idempotent=True, secret=("token",))
async def tokens_create(p: CreateParams, ctx: CallContext) -> dict[str, Any]:
    """A new remote MCP token; the answer is the only time the token is shown. A person's is their own: baseline
    tier, acting in a conversation of theirs (by default their own conversation), reaching their conversations."""
    person = await _whose(ctx, p.personId)
    session_key = p.sessionKey
    if person is not None:
        if p.owner:
            raise Forbidden("owner: only the owner makes owner-tier tokens; a person's own token has the baseline "
                            "tools and reaches their own conversations", details={"code": "FORBIDDEN",
                                                                                  "field": "owner"})
        session_key = await _their_session(ctx, person, session_key)
    elif session_key is not None:
        ctx.sessions.normalize_key(session_key)  # an unknown agent is refused, naming the field
    ttl = tokens.parse_ttl(p.expires) if p.expires else None
    person_id = person.id if person is not None else None
    token, row = await tokens.create(ctx.db, name=p.name, owner=p.owner, profile=p.profile,
                                     session_key=session_key, ttl_s=ttl, person_id=person_id)
    await ctx.audit("token.create", f"mcp-token:{row.id}", {"kind": "mcp", "name": row.name, "owner": row.owner,
                                                            "profile": row.profile, "sessionKey": row.session_key,
                                                            "expiresAt": row.expires_at, "personId": person_id})
    return {**row.to_dict(), "token": token}


async def _only_own(ctx: CallContext) -> str | None:
    """The person whose tokens alone the caller may list or revoke (None: everyone's, for admins).

    Raises:
        Forbidden: an operator without admin scope (``MISSING_SCOPE``).
    """
    me = await _signed_in(ctx)
    if ADMIN in ctx.caller.scopes:
        return None
    if me is None:
        raise _missing_admin()
    return me.id


@method("mcp.tokens.list", access=Access("token", "read", each=True), scope=READ)
async def tokens_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Every remote MCP token (never the token itself), oldest first; a member's or guest's own only."""
    listed = await tokens.list_tokens(ctx.db, person_id=await _only_own(ctx))
    return {"tokens": listed, "count": len(listed)}


@method("mcp.tokens.revoke", access=Access("token", "write", each=True), params=RevokeParams, scope=WRITE)
async def tokens_revoke(p: RevokeParams, ctx: CallContext) -> dict[str, Any]:
    """Revoke a token by id or name: its next request is refused with 401. A member revokes their own only
    (another's is as unknown as one that never existed)."""
    revoked = await tokens.revoke(ctx.db, p.id, person_id=await _only_own(ctx))
    mcp = ctx.services.find(MCP_HTTP)
    if mcp is not None:
        mcp.forget_grants()
    if not revoked:
        raise InvalidRequest(f"no active MCP token with id or name {p.id!r}", details={"field": "id"})
    await ctx.audit("token.revoke", f"mcp-token:{p.id}", {"kind": "mcp", "revoked": revoked})
    return {"ok": True, "revoked": revoked}
