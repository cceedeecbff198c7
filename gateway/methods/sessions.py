"""Session methods: list, resolve, patch, reset, delete, ``agents.list``, sub-agents (spawn and manage)."""

from __future__ import annotations

import re
import uuid
from typing import Any, Literal

from pydantic import Field, model_validator

from gateway.dispatch.dispatcher import READ, WRITE, CallContext, NoParams, Params, method
from gateway.people.service import person_key
from gateway.protocol import Forbidden, InvalidRequest
from gateway.runs import RunRequest
from gateway.server.session_events import announce
from gateway.sessions import parse_key
from gateway.store.models import utcnow
from gateway.store.transcripts import SessionRepo, SessionWithin
from gateway.webchat.files import delete_files

Key = Field(None, min_length=1, max_length=512)
_FILE_MARKER = re.compile(r"\[attachment: (?:image|file) [^\]]*\]")


async def check_visible(ctx: CallContext, key: str, field: str = "sessionKey") -> None:
    """Refuse a confined caller (a non-owner agent run) a session outside its scope.

    Non-owner runs see their own session, the sub-agents they spawned and the sessions of the chat they
    came from; never, say, the owner's main session. A session that does not exist yet holds nothing to see.

    Raises:
        Forbidden: ``SESSION_FORBIDDEN``, naming ``field``.
    """
    scope = ctx.caller.confined_to
    if scope is None:
        return
    async with ctx.db.reading() as s:  # a read: it need not wait its turn behind SQLite's writer
        row = await SessionRepo.get(s, key)
    if row is None or scope.allows(key, channel=row.channel, peer_id=row.peer_id, parent_key=row.parent_key,
                                   person_id=row.person_id):
        return
    raise Forbidden(f"{field} '{key}' is not a conversation this agent run may see",
                    details={"code": "SESSION_FORBIDDEN", "field": field})


def _shorten(text: str | None, limit: int) -> str | None:
    """One line of a message for a list: file markers (meant for the agent) out, long text cut."""
    if not text:
        return None
    line = " ".join(_FILE_MARKER.sub(" ", text).split()) or "(a file)"
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def is_owner(ctx: CallContext) -> bool:
    """Runs an operator starts are the owner's only when the operator holds admin (and, for a person signed in
    with their own credential, sees everything: the owner, or an admin allowed to read every transcript)."""
    caller = ctx.caller
    return "operator.admin" in caller.scopes and (caller.person_id is None or caller.confined_to is None)


async def claim_session(ctx: CallContext, key: str) -> None:
    """Before a person's message goes into session ``key``: it must be theirs, or new in their own name space.

    A person signed in with their own credential writes only to their sessions. A new one must be named
    ``agent:<id>:person:<them>`` (or under it), so nobody can create, ahead of its owner, the session a chat of
    someone else's will land in. What they create is theirs (``sessions.person_id``).

    Raises:
        Forbidden: ``SESSION_FORBIDDEN`` naming ``sessionKey``.
    """
    person_id = ctx.caller.person_id
    if person_id is None:
        return
    await check_visible(ctx, key)
    person = await ctx.people.get(person_id)
    agent = ctx.sessions.agent(parse_key(key)[0], field="sessionKey")
    ctx.people.require_agent_open(person, agent.id, agent.people, who="you")
    async with ctx.db.session() as s:
        row = await SessionRepo.get(s, key)
        if row is not None and row.person_id is not None:
            return
        agent_id = parse_key(key)[0]
        mine = person_key(agent_id, person_id)
        if key != mine and not key.startswith(mine + ":"):
            if row is not None and ctx.caller.confined_to is None:
                return  # the owner (or an admin who reads everything) writing to anyone's session
            raise Forbidden(f"sessionKey '{key}' is not yours: start a conversation under {mine}",
                            details={"code": "SESSION_FORBIDDEN", "field": "sessionKey"})
    await ctx.sessions.ensure(key, person_id=person_id)
    async with ctx.db.session() as s:
        row = await SessionRepo.get(s, key)
        if row is not None and row.person_id is None:
            row.person_id = person_id
    ctx.people.note_session(key, person_id)


class ListParams(Params):
    search: str | None = Field(None, max_length=256)
    limit: int | None = Field(None, ge=1, description="At most 1000 are answered (OpenClaw's schema has no cap).")
    includeGlobal: bool = Field(False, description="Also list agent:<id>:global, the session shared by everyone.")
    includeUnknown: bool = Field(False, description="Also list agent:<id>:unknown (turns of an unknown sender).")
    includeDerivedTitles: bool = Field(False, description="Add derivedTitle: the first user message, shortened.")
    includeLastMessage: bool = Field(False, description="Add lastMessagePreview: the newest message, shortened.")
    agentId: str | None = None
    hasBoard: bool | None = None  # sent by OpenClaw's Control UI (not in its schema); we have no boards: ignored


@method("sessions.list", params=ListParams, scope=READ, baseline=True)
async def sessions_list(p: ListParams, ctx: CallContext) -> dict[str, Any]:
    """Sessions, most recently active first, filtered by a search over keys and labels; the global and
    unknown sessions only when asked for (see ``gateway/sessions.py``)."""
    runs = ctx.runs
    scope = ctx.caller.confined_to
    within = None if scope is None else SessionWithin(scope.session_key, scope.person_id, scope.channel, scope.chat_id)
    async with ctx.db.reading() as s:
        hidden = [name for name, shown in (("global", p.includeGlobal), ("unknown", p.includeUnknown)) if not shown]
        rows = await SessionRepo.search(s, search=p.search, limit=min(p.limit, 1000) if p.limit else None,
                                        hide_names=hidden, agent_id=p.agentId or None, within=within)
        keys = [r.key for r in rows]
        titles = await SessionRepo.first_user_texts(s, keys) if p.includeDerivedTitles else {}
        latest = await SessionRepo.last_texts(s, keys) if p.includeLastMessage else {}
    out = []
    for row in rows:
        # the query filtered already; the rule itself has the last word
        if scope is not None and not scope.allows(row.key, channel=row.channel, peer_id=row.peer_id,
                                                  parent_key=row.parent_key, person_id=row.person_id):
            continue
        d = row.to_dict()
        if runs is not None:
            d["run"] = runs.lane_state(row.key)
        if p.includeDerivedTitles:
            d["derivedTitle"] = _shorten(titles.get(row.key), 60)
        if p.includeLastMessage:
            d["lastMessagePreview"] = _shorten(latest.get(row.key), 120)
        out.append(d)
    default = ctx.sessions.agent(None)
    # What OpenClaw answers beside the list (its Control UI reads it for the model picker): the default agent's
    # CLI as the provider, its model (None: the CLI picks), no context size we could know.
    defaults = {"modelProvider": default.runtime, "model": default.model, "contextTokens": None,
                "agentRuntime": {"id": default.runtime, "source": "agent"}}
    return {"sessions": out, "count": len(out), "defaultAgentId": default.id, "defaults": defaults}


class KeyParams(Params):
    key: str | None = Key
    sessionKey: str | None = Key
    label: str | None = Field(None, min_length=1, max_length=256)

    @property
    def target(self) -> str | None:
        return self.key or self.sessionKey


@method("sessions.resolve", params=KeyParams, scope=READ)
async def sessions_resolve(p: KeyParams, ctx: CallContext) -> dict[str, Any]:
    """Find a session by key or label."""
    key = await ctx.sessions.resolve(key=p.target, label=p.label)
    return {"ok": True, "key": key, "agentId": parse_key(key)[0]}


class PatchParams(Params):
    key: str | None = Key
    sessionKey: str | None = Key
    label: str | None = Field(None, max_length=256, description="New label; empty string or null clears it.")
    model: str | None = Field(None, max_length=128)

    @model_validator(mode="after")
    def _needs_key(self) -> PatchParams:
        if not (self.key or self.sessionKey):
            raise ValueError("give key or sessionKey")
        return self


@method("sessions.patch", params=PatchParams, scope=WRITE, aliases=("sessions:patch",))
async def sessions_patch(p: PatchParams, ctx: CallContext) -> dict[str, Any]:
    """Change a session's label or model; creates the session if its key is new but well-formed."""
    svc = ctx.sessions
    key = svc.normalize_key(p.key or p.sessionKey or "")
    await check_visible(ctx, key)
    await claim_session(ctx, key)
    await svc.ensure(key)
    async with ctx.db.session() as s:
        if "label" in p.model_fields_set:
            label = p.label or None
            if label:
                other = await SessionRepo.by_label(s, label)
                if other is not None and other.key != key:
                    raise InvalidRequest(f"invalid sessions.patch params: at /label: '{label}' is already used by "
                                         f"{other.key}", details={"field": "label"})
            row = await SessionRepo.get(s, key)
            assert row is not None
            row.label = label
        row = await SessionRepo.get(s, key)
        assert row is not None
        if "model" in p.model_fields_set:
            row.model = p.model or None
        row.updated_at = utcnow()
        out = {"ok": True, "key": key, "session": row.to_dict()}
    announce(ctx.broadcast, key, "patch")
    return out


@method("sessions.reset", params=KeyParams, scope=WRITE)
async def sessions_reset(p: KeyParams, ctx: CallContext) -> dict[str, Any]:
    """Start the session over: stop its run, clear its transcript and forget the CLI's resume ids."""
    sessions = ctx.sessions
    key = await sessions.resolve(key=p.target, label=p.label)
    await check_visible(ctx, key)
    removed = await sessions.reset(key)
    announce(ctx.broadcast, key, "reset")
    return {"ok": True, "key": key, "removedMessages": removed}


@method("sessions.delete", params=KeyParams, scope=WRITE)
async def sessions_delete(p: KeyParams, ctx: CallContext) -> dict[str, Any]:
    """Stop the session's run and delete the session with its transcript."""
    sessions = ctx.sessions
    key = await sessions.resolve(key=p.target, label=p.label)
    await check_visible(ctx, key)
    await sessions.stop_runs(key)
    async with ctx.db.session() as s:
        deleted = await SessionRepo.delete(s, key)
    await delete_files(ctx.db, session_key=key)
    if deleted:
        announce(ctx.broadcast, key, "delete")
        ctx.hooks.fire("session_end", {"sessionKey": key, "agentId": key.split(":")[1], "reason": "deleted"})
    return {"ok": True, "key": key, "deleted": deleted, "archived": []}  # we delete; nothing is archived


@method("agents.list", scope=READ, baseline=True)
async def agents_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """The configured agents and which one is the default, in OpenClaw's shape (``AgentsListResult``): each
    agent's CLI is its ``agentRuntime.id`` (``claude``, ``codex``...); ``status`` says where the CLI is."""
    svc = ctx.sessions
    agents = []
    for a in svc.agents():
        # Every agent names its model, as ``models.list`` lists it (``<runtime>/<model or default>``): OpenClaw's
        # Control UI offers no chat for an agent without one.
        agents.append({"id": a["id"], "kind": "agent", "name": a["name"],
                       "agentRuntime": {"id": a["runtime"], "source": "agent"},
                       "model": {"primary": f"{a['runtime']}/{a.get('model') or 'default'}"}})
    # Sessions are per agent and per sender (``agent:<id>:<...>``); OpenClaw's "global" would be one session for
    # every chat, which we do not have (dmScope "main" shares the agent's main session among DMs only).
    return {"defaultId": svc.default_agent_id, "mainKey": "main", "agents": agents, "scope": "per-sender"}


# -- sub-agents ------------------------------------------------------------------------------


class SpawnParams(Params):
    task: str = Field(min_length=1, max_length=200_000)
    agentId: str | None = None
    label: str | None = Field(None, min_length=1, max_length=256)
    parent: str | None = Field(None, min_length=1, max_length=512)
    idempotencyKey: str | None = Field(None, max_length=256)


async def spawn_child(ctx: CallContext, *, task: str, agent_id: str | None, label: str | None,
                      parent: str | None) -> dict[str, Any]:
    svc = ctx.sessions
    agent = svc.agent(agent_id or (parse_key(parent)[0] if parent else None))
    if parent:
        parent = await svc.resolve(key=parent)
    if label:
        async with ctx.db.session() as s:
            if await SessionRepo.by_label(s, label) is not None:
                raise InvalidRequest(f"invalid sessions.spawn params: at /label: '{label}' is already used",
                                     details={"field": "label"})
    key = f"agent:{agent.id}:subagent:{uuid.uuid4()}"
    await svc.ensure(key, kind="subagent", parent_key=parent, label=label)
    run, status = await ctx.runs.submit(RunRequest(
        session_key=key, agent_id=agent.id, message=task, source="spawn", is_owner=False))
    return {"sessionKey": key, "runId": run.id, "status": status, "parent": parent, "label": label}


@method("sessions.spawn", params=SpawnParams, scope=WRITE, idempotent=True, aliases=("sessions:spawn",), baseline=True)
async def sessions_spawn(p: SpawnParams, ctx: CallContext) -> dict[str, Any]:
    """Start a child session that works on ``task``; the parent manages it with ``sessions.subagents``."""
    return await spawn_child(ctx, task=p.task, agent_id=p.agentId, label=p.label, parent=p.parent)


class SubagentsParams(Params):
    action: Literal["list", "status", "cancel", "kill", "send", "spawn"]
    sessionKey: str = Field(min_length=1, max_length=512, description="The parent session.")
    target: str | None = Field(None, description="Child session key, label or run id.")
    childSessionKey: str | None = None
    label: str | None = None
    runId: str | None = None
    message: str | None = Field(None, max_length=200_000)
    task: str | None = Field(None, max_length=200_000)
    agentId: str | None = None
    idempotencyKey: str | None = Field(None, max_length=256)


async def _child(ctx: CallContext, p: SubagentsParams, parent: str) -> dict[str, Any]:
    wanted = p.target or p.childSessionKey or p.label or p.runId
    if not wanted:
        raise InvalidRequest(f"invalid sessions.subagents params: {p.action} needs target", details={"field": "target"})
    runs = ctx.runs
    async with ctx.db.session() as s:
        children = await SessionRepo.children(s, parent)
    for row in children:
        run = runs.runs.get(wanted)
        if wanted in (row.key, row.label) or (run is not None and run.session_key == row.key):
            d = row.to_dict()
            d["run"] = runs.lane_state(row.key)
            return d
    raise InvalidRequest(f"unknown target: '{wanted}' is not a sub-agent of {parent}", details={"field": "target"})


@method("sessions.subagents", params=SubagentsParams, scope=WRITE, aliases=("subagents",), baseline=True)
async def sessions_subagents(p: SubagentsParams, ctx: CallContext) -> dict[str, Any]:
    """List a parent's sub-agents, or check on, cancel, message or add one."""
    svc, runs = ctx.sessions, ctx.runs
    parent = await svc.resolve(key=p.sessionKey)
    await check_visible(ctx, parent)
    if p.action == "list":
        async with ctx.db.session() as s:
            rows = await SessionRepo.children(s, parent)
        items = []
        for row in rows:
            d = row.to_dict()
            d["run"] = runs.lane_state(row.key)
            items.append(d)
        return {"sessionKey": parent, "subagents": items, "count": len(items)}
    if p.action == "spawn":
        if not p.task:
            raise InvalidRequest("invalid sessions.subagents params: spawn needs task", details={"field": "task"})
        return await spawn_child(ctx, task=p.task, agent_id=p.agentId, label=p.label, parent=parent)
    child = await _child(ctx, p, parent)
    if p.action == "status":
        return {"sessionKey": parent, "subagent": child}
    if p.action in ("cancel", "kill"):
        stopped, _forwarded = await runs.abort_everywhere(child["key"])
        return {"sessionKey": parent, "child": child["key"], "aborted": stopped}
    text = p.message or p.task
    if not text:
        raise InvalidRequest("invalid sessions.subagents params: send needs message", details={"field": "message"})
    run, status = await runs.submit(RunRequest(session_key=child["key"], agent_id=child["agentId"], message=text,
                                               source="spawn", is_owner=False))
    return {"sessionKey": parent, "child": child["key"], "runId": run.id, "status": status}
