"""The ``people.*`` methods: administering people (admins), and a person's view of themselves and their
sign-ins (anyone signed in as a person)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.access import Access, Obj, is_owner
from gateway.dispatch.dispatcher import ADMIN, READ, CallContext, Caller, NoParams, Params, method
from gateway.people.roles import Role
from gateway.people.signin import signin_base
from gateway.protocol import Forbidden, InvalidRequest

PersonId = Field(min_length=1, max_length=64, description="The person's id (a slug such as alice).")


def _acting_owner(ctx: CallContext) -> bool:
    """Who may make or unmake owners: the owner (``gateway.access.is_owner``)."""
    return is_owner(ctx.caller, ctx.people.role_of)


def _guard_owner_role(ctx: CallContext, *roles: str | None) -> None:
    if "owner" in roles and not _acting_owner(ctx):
        raise Forbidden("role: only an owner makes or unmakes owners", details={"field": "role"})


class CreateParams(Params):
    id: str = PersonId
    name: str | None = Field(None, min_length=1, max_length=200)
    role: Role = "member"
    oneConversation: bool = Field(False, description="All their direct chats (and their web chat) are one "
                                  "conversation.")
    maxCostPerDay: float | None = Field(None, gt=0, description="US dollars their turns may spend per UTC day.")
    agentId: str | None = Field(None, min_length=1, max_length=128, description="The agent that answers them "
                                "(default: the gateway's default agent).")


class IdParams(Params):
    id: str = PersonId


class UpdateParams(Params):
    id: str = PersonId
    name: str | None = Field(None, min_length=1, max_length=200)
    role: Role | None = None
    oneConversation: bool | None = None
    maxCostPerDay: float | None = Field(None, gt=0, description="null (given) removes their budget.")
    agentId: str | None = Field(None, min_length=1, max_length=128, description="null (given): the default agent.")


class LinkParams(Params):
    id: str = PersonId
    channel: str = Field(min_length=1, max_length=64)
    senderId: str = Field(min_length=1, max_length=256)


class UnlinkParams(Params):
    channel: str = Field(min_length=1, max_length=64)
    senderId: str = Field(min_length=1, max_length=256)


class SigninsParams(Params):
    id: str | None = Field(None, min_length=1, max_length=64, description="Whose (admins); default: yourself.")
    includeRevoked: bool = False


class RevokeParams(Params):
    signinId: str = Field(min_length=1, max_length=32)


@method("people.list", access=Access("person", "admin"), params=NoParams, scope=ADMIN)
async def people_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Everyone on record with their role, limits and linked chat identities."""
    people = await ctx.people.describe()
    return {"people": people, "count": len(people)}


@method("people.get", access=Access("person", "read", ("id",)), params=IdParams, scope=ADMIN)
async def people_get(p: IdParams, ctx: CallContext) -> dict[str, Any]:
    found = await ctx.people.describe(p.id)
    if not found:
        raise InvalidRequest(f"unknown id: no person '{p.id}'", details={"field": "id"})
    return {"person": found[0]}


@method("people.create", access=Access("person", "admin", ("id",)), params=CreateParams, scope=ADMIN)
async def people_create(p: CreateParams, ctx: CallContext) -> dict[str, Any]:
    _guard_owner_role(ctx, p.role)
    if p.agentId is not None:
        ctx.sessions.agent(p.agentId)  # an unknown one names agentId
    person = await ctx.people.create(p.id, name=p.name, role=p.role, one_conversation=p.oneConversation,
                                     max_cost_per_day=p.maxCostPerDay, agent_id=p.agentId)
    await ctx.audit("people.create", person.id, {"role": person.role})
    return {"person": (await ctx.people.describe(person.id))[0]}


@method("people.update", access=Access("person", "admin", ("id",)), params=UpdateParams, scope=ADMIN)
async def people_update(p: UpdateParams, ctx: CallContext) -> dict[str, Any]:
    current = await ctx.people.get(p.id)
    if p.role is not None and p.role != current.role:
        _guard_owner_role(ctx, p.role, current.role)
    clear = "maxCostPerDay" in p.model_fields_set and p.maxCostPerDay is None
    if p.agentId is not None:
        ctx.sessions.agent(p.agentId)
    await ctx.people.update(p.id, name=p.name, role=p.role, one_conversation=p.oneConversation,
                            max_cost_per_day=p.maxCostPerDay, clear_budget=clear, agent_id=p.agentId,
                            clear_agent="agentId" in p.model_fields_set and p.agentId is None)
    await ctx.audit("people.update", p.id, p.model_dump(exclude_unset=True, exclude={"id"}))
    return {"person": (await ctx.people.describe(p.id))[0]}


@method("people.remove", access=Access("person", "admin", ("id",)), params=IdParams, scope=ADMIN)
async def people_remove(p: IdParams, ctx: CallContext) -> dict[str, Any]:
    current = await ctx.people.get(p.id)
    _guard_owner_role(ctx, current.role)
    await ctx.people.remove(p.id)
    closed = _close_connections(ctx, person_id=p.id)
    await ctx.audit("people.remove", p.id)
    return {"ok": True, "id": p.id, "closedConnections": closed}


@method("people.link", access=Access("person", "become", ("id",)), params=LinkParams, scope=ADMIN)
async def people_link(p: LinkParams, ctx: CallContext) -> dict[str, Any]:
    """Make a chat sender (``channel`` + ``senderId``) one of the person's identities (moving it from whoever held
    it). Whoever writes from that chat is then that person, so it is decided as becoming them: one's own, or the
    owner's for anyone; nor may an admin take another person's chat for themselves."""
    current = await ctx.people.get(p.id)
    _guard_owner_role(ctx, current.role)
    holder = await ctx.people.by_identity(p.channel.strip().lower(), p.senderId.strip())
    if holder is not None and holder.id != p.id:
        await ctx.access.check(ctx.caller, "become", Obj("person", person_id=holder.id), "senderId")
    await ctx.people.link(p.id, p.channel, p.senderId, by=f"admin:{_who(ctx)}")
    await ctx.audit("people.link", p.id, {"channel": p.channel, "senderId": p.senderId})
    return {"person": (await ctx.people.describe(p.id))[0]}


@method("people.unlink", access=Access("person", "admin"), params=UnlinkParams, scope=ADMIN)
async def people_unlink(p: UnlinkParams, ctx: CallContext) -> dict[str, Any]:
    owner = await ctx.people.by_identity(p.channel.strip().lower(), p.senderId.strip())
    if owner is not None:
        _guard_owner_role(ctx, owner.role)
    removed = await ctx.people.unlink(p.channel, p.senderId)
    if not removed:
        raise InvalidRequest(f"senderId: {p.channel}:{p.senderId} is nobody's identity", details={"field": "senderId"})
    await ctx.audit("people.unlink", owner.id if owner else "", {"channel": p.channel, "senderId": p.senderId})
    return {"ok": True}


@method("people.linkCode", access=Access("person", "become", ("id",)), params=IdParams, scope=ADMIN)
async def people_link_code(p: IdParams, ctx: CallContext) -> dict[str, Any]:
    """A code the person sends (``/link <code>``) from a chat to make it theirs: whoever sends it becomes them, so
    it is for oneself, or made by the owner (a person gets their own with ``/link`` in a chat of theirs)."""
    await ctx.people.get(p.id)
    code = await ctx.people.new_code(p.id, "link")
    await ctx.audit("people.linkCode", p.id)
    return {"code": code, "send": f"/link {code}"}


@method("people.loginLink", access=Access("person", "become", ("id",)), params=IdParams, scope=ADMIN)
async def people_login_link(p: IdParams, ctx: CallContext) -> dict[str, Any]:
    """A one-time web sign-in link for the person (what ``/login`` gives them in a chat)."""
    person = await ctx.people.get(p.id)
    _guard_owner_role(ctx, person.role)
    code = await ctx.people.new_code(p.id, "signin")
    await ctx.audit("people.loginLink", p.id)
    base = signin_base(ctx.config, ctx.listen)
    return {"url": f"{base.rstrip('/')}/#signin={code}"}


@method("people.me", access=Access("person", "read", own=True), params=NoParams, scope=READ)
async def people_me(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Who the caller is signed in as: a person (with their identities, main session and the id of the web sign-in
    they came with, so a page can mark its own among their sign-ins), or nobody (the gateway token, a device, an
    agent run)."""
    person_id = ctx.caller.person_id
    if person_id is None:
        return {"person": None}
    described = await ctx.people.describe(person_id)
    if not described:
        return {"person": None}
    from gateway.people.service import person_key

    agent = described[0].get("agentId") or ctx.sessions.default_agent_id
    return {"person": described[0], "mainSessionKey": person_key(agent, person_id),
            "signinId": ctx.caller.extra.get("signinId")}


@method("people.signins.list", access=Access("person", "read", ("id",)), params=SigninsParams, scope=READ)
async def signins_list(p: SigninsParams, ctx: CallContext) -> dict[str, Any]:
    """Web sign-ins: your own, or (admins) a person's, or everyone's with ``id`` given as ``*``."""
    whose = _whose(ctx, p.id)
    signins = await ctx.people.signins(None if whose == "*" else whose, include_revoked=p.includeRevoked)
    return {"signins": signins, "count": len(signins)}


@method("people.signins.revoke", access=Access("token", "write", own=True), params=RevokeParams, scope=READ)
async def signins_revoke(p: RevokeParams, ctx: CallContext) -> dict[str, Any]:
    """Revoke a web sign-in (your own; admins anyone's): it no longer signs in, and its open pages are closed."""
    mine = ctx.caller.person_id if ADMIN not in ctx.caller.scopes else None
    if mine is None and ADMIN not in ctx.caller.scopes:
        raise Forbidden("people.signins.revoke: sign in as a person, or as an admin", details={"field": "signinId"})
    if not await ctx.people.revoke_signin(p.signinId, person_id=mine):
        raise InvalidRequest(f"unknown signinId: no live sign-in '{p.signinId}'", details={"field": "signinId"})
    closed = _close_connections(ctx, signin_id=p.signinId)
    await ctx.audit("people.signins.revoke", p.signinId)
    return {"ok": True, "closedConnections": closed}


def _whose(ctx: CallContext, wanted: str | None) -> str:
    caller = ctx.caller
    if wanted is None or wanted == caller.person_id:
        if caller.person_id is None:
            if ADMIN not in caller.scopes:
                raise Forbidden("people.signins.list: sign in as a person", details={"field": "id"})
            return "*"
        return caller.person_id
    if ADMIN not in caller.scopes:
        raise Forbidden("id: only admins list another person's sign-ins", details={"field": "id"})
    return wanted


def _who(ctx: CallContext) -> str:
    caller = ctx.caller
    return caller.person_id or caller.device_id or caller.display_name or caller.client_id


def _close_connections(ctx: CallContext, *, person_id: str | None = None, signin_id: str | None = None) -> int:
    """Close this replica's connections of a removed person or a revoked sign-in (they sign in no more)."""

    def holds(caller: Caller) -> bool:
        return caller.person_id is not None and (
            (person_id is not None and caller.person_id == person_id)
            or (signin_id is not None and caller.extra.get("signinId") == signin_id))

    return ctx.close_connections(holds, "signed out")

