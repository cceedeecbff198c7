"""``mcp.tokens.create``, ``mcp.tokens.list``, ``mcp.tokens.revoke``: who may use the tools over HTTP.

Admin only: a token can carry the owner tier. ``create`` answers the token once; afterwards only its
hash exists (``gateway.mcp_http.tokens``). Creating and revoking go to the audit log (``token.create``,
``token.revoke``), never the token itself.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from gateway.dispatch.dispatcher import ADMIN, CallContext, NoParams, Params, method
from gateway.mcp_http import tokens
from gateway.mcp_http.transport import MCP_HTTP
from gateway.protocol import InvalidRequest


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


@method("mcp.tokens.create", params=CreateParams, scope=ADMIN, idempotent=True)
async def tokens_create(p: CreateParams, ctx: CallContext) -> dict[str, Any]:
    """A new remote MCP token; the answer is the only time the token is shown."""
    if p.sessionKey is not None:
        ctx.sessions.normalize_key(p.sessionKey)  # an unknown agent is refused, naming the field
    ttl = tokens.parse_ttl(p.expires) if p.expires else None
    token, row = await tokens.create(ctx.db, name=p.name, owner=p.owner, profile=p.profile,
                                     session_key=p.sessionKey, ttl_s=ttl)
    await ctx.audit("token.create", f"mcp-token:{row.id}", {"kind": "mcp", "name": row.name, "owner": row.owner,
                                                            "profile": row.profile, "sessionKey": row.session_key,
                                                            "expiresAt": row.expires_at})
    return {**row.to_dict(), "token": token}


@method("mcp.tokens.list", scope=ADMIN)
async def tokens_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Every remote MCP token (never the token itself), oldest first."""
    listed = await tokens.list_tokens(ctx.db)
    return {"tokens": listed, "count": len(listed)}


@method("mcp.tokens.revoke", params=RevokeParams, scope=ADMIN)
async def tokens_revoke(p: RevokeParams, ctx: CallContext) -> dict[str, Any]:
    """Revoke a token by id or name: its next request is refused with 401."""
    revoked = await tokens.revoke(ctx.db, p.id)
    mcp = ctx.services.find(MCP_HTTP)
    if mcp is not None:
        mcp.forget_grants()
    if not revoked:
        raise InvalidRequest(f"no active MCP token with id or name {p.id!r}", details={"field": "id"})
    await ctx.audit("token.revoke", f"mcp-token:{p.id}", {"kind": "mcp", "revoked": revoked})
    return {"ok": True, "revoked": revoked}
