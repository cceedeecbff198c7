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

from gateway.dispatch.dispatcher import ADMIN, READ, WRITE, CallContext, NoParams, Params, method
from gateway.mcp_http import tokens
from gateway.mcp_http.transport import MCP_HTTP
from gateway.methods.sessions import claim_session
from gateway.people.service import person_key
from gateway.protocol import Forbidden, InvalidRequest


class CreateParams(Params):
    name: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9 ._@-]+$",
                      description="What the token is for, e.g. laptop-claude")
    owner: bool = Field(False, description="Owner tier: every tool, admin scope. Default: the baseline tools.")
    profile: Literal["minimal", "messaging", "coding", "full"] = "full"
    sessionKey: str | None = Field(None, min_length=1, max_length=512,
                                   description="The session the tools act for (default: the main session)")
    expires: str | None = Field(None, max_length=16, description="Lifetime, e.g. 30d, 12h; default: none")
    idempotencyKey: str | None = Field(None, max_length=256)


class RevokeParams(Params):
    id: str = Field(min_length=1, max_length=128, description="The token's id or name")


def _maker(ctx: CallContext) -> str | None:
    """Whose tokens the caller makes: a person's own (their id), or None for the owner and operators with admin.

    Raises:
        Forbidden: an operator without admin scope (``MISSING_SCOPE``).
    """
    caller = ctx.caller
    person = ctx.people.peek(caller.person_id) if caller.person_id is not None else None
    if person is not None:
        return None if person.is_owner else person.id
    if ADMIN not in caller.scopes:
        raise Forbidden(f"missing scope: {ADMIN}", details={"code": "MISSING_SCOPE", "missingScope": ADMIN})
    return None


@method("mcp.tokens.create", params=CreateParams, scope=WRITE, idempotent=True)
async def tokens_create(p: CreateParams, ctx: CallContext) -> dict[str, Any]:
    """A new remote MCP token; the answer is the only time the token is shown. A person's is their own: baseline
    tier, for a conversation of theirs (by default their own conversation)."""
    person_id = _maker(ctx)
    session_key = p.sessionKey
    if person_id is not None:
        if p.owner:
            raise Forbidden("owner: only the owner makes owner-tier tokens; yours reach your own conversations",
                            details={"code": "FORBIDDEN", "field": "owner"})
        person = await ctx.people.get(person_id)
        session_key = ctx.sessions.normalize_key(session_key or person_key(
            person.agent_id or ctx.sessions.default_agent_id, person_id))
        await claim_session(ctx, session_key)  # theirs, or new in their own name space (naming sessionKey)
    elif session_key is not None:
        ctx.sessions.normalize_key(session_key)  # an unknown agent is refused, naming the field
    ttl = tokens.parse_ttl(p.expires) if p.expires else None
    token, row = await tokens.create(ctx.db, name=p.name, owner=p.owner, profile=p.profile,
                                     session_key=session_key, ttl_s=ttl, person_id=person_id)
    await ctx.audit("token.create", f"mcp-token:{row.id}", {"kind": "mcp", "name": row.name, "owner": row.owner,
                                                            "profile": row.profile, "sessionKey": row.session_key,
                                                            "expiresAt": row.expires_at, "personId": person_id})
    return {**row.to_dict(), "token": token}


def _only_own(ctx: CallContext) -> str | None:
    """The person whose tokens alone the caller may list or revoke (None: everyone's, for admins)."""
    person_id = _maker(ctx)
    return None if person_id is None or ADMIN in ctx.caller.scopes else person_id


@method("mcp.tokens.list", scope=READ)
async def tokens_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Every remote MCP token (never the token itself), oldest first; a member's own only."""
    listed = await tokens.list_tokens(ctx.db, person_id=_only_own(ctx))
    return {"tokens": listed, "count": len(listed)}


@method("mcp.tokens.revoke", params=RevokeParams, scope=WRITE)
async def tokens_revoke(p: RevokeParams, ctx: CallContext) -> dict[str, Any]:
    """Revoke a token by id or name: its next request is refused with 401. A member revokes their own only
    (another's is as unknown as one that never existed)."""
    revoked = await tokens.revoke(ctx.db, p.id, person_id=_only_own(ctx))
    mcp = ctx.services.find(MCP_HTTP)
    if mcp is not None:
        mcp.forget_grants()
    if not revoked:
        raise InvalidRequest(f"no active MCP token with id or name {p.id!r}", details={"field": "id"})
    await ctx.audit("token.revoke", f"mcp-token:{p.id}", {"kind": "mcp", "revoked": revoked})
    return {"ok": True, "revoked": revoked}
