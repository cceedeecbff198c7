"""Session methods: list, resolve, patch, reset, delete, ``agents.list``, sub-agents (spawn and manage)."""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from gateway.access import Access, Obj
from gateway.access import is_owner as owner_authority
from gateway.access.rows import session_obj
from gateway.agents.context import is_owner_run
from gateway.agents.spawn import SpawnParent, wider_than
from gateway.dispatch.dispatcher import READ, WRITE, CallContext, NoParams, Params, method
from gateway.people.service import person_key
from gateway.protocol import Forbidden, InvalidRequest
from gateway.runs import RunRequest
from gateway.sessions.events import announce
from gateway.sessions.service import parse_key
from gateway.sessions.store import SessionRepo, SessionWithin
from gateway.store.base import utcnow
from gateway.webchat.files import delete_files

if TYPE_CHECKING:
    from gateway.config import AgentConfig

Key = Field(None, min_length=1, max_length=512)
_FILE_MARKER = re.compile(r"\[attachment: (?:image|file) [^\]]*\]")


async def check_visible(ctx: CallContext, key: str, field: str = "sessionKey") -> None:
    """Refuse the caller a session it may not read, as the access model decides (``gateway.access``): for a
    handler that meets a session besides the one its request named. A session that does not exist yet holds
    nothing to see.

    Raises:
        Forbidden: ``SESSION_FORBIDDEN``, naming ``field``.
    """
    await ctx.access.check_session(ctx.caller, "read", key, field)


def _shorten(text: str | None, limit: int) -> str | None:
    """One line of a message for a list: file markers (meant for the agent) out, long text cut."""
    if not text:
        return None
    line = " ".join(_FILE_MARKER.sub(" ", text).split()) or "(a file)"
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def is_owner(ctx: CallContext) -> bool:
    """Runs an operator starts are the owner's tier only when the caller is the owner (``gateway.access.is_owner``):
    an admin the owner lets read every transcript still runs at their own tier, so their run's token is no owner's."""
    return owner_authority(ctx.caller, ctx.people.role_of)


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


@method("sessions.list", access=Access("session", "read", each=True), params=ListParams, scope=READ, baseline=True)
async def sessions_list(p: ListParams, ctx: CallContext) -> dict[str, Any]:
    """Sessions, most recently active first, filtered by a search over keys and labels; the global and
    unknown sessions only when asked for (see ``gateway/sessions/service.py``). A session of an agent placed on a
    node names the node (``execNode``: its id) to a caller that may read nodes."""
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
    on_nodes = await _placed_on_nodes(ctx)
    for row in ctx.access.visible(ctx.caller, rows, session_obj):  # the query prefiltered; the model decides
        d = row.to_dict()
        if (node_id := on_nodes.get(row.agent_id)) is not None:
            d["execNode"] = node_id  # OpenClaw's Systems page lists the session under that node
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


@method("sessions.resolve", access=Access("session", "read", ("key", "sessionKey", "label")),
        params=KeyParams, scope=READ)
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


@method("sessions.patch", access=Access("session", "write", ("key", "sessionKey", "label")),
        params=PatchParams, scope=WRITE, aliases=("sessions:patch",))
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


@method("sessions.reset", access=Access("session", "write", ("key", "sessionKey", "label")),
        params=KeyParams, scope=WRITE)
async def sessions_reset(p: KeyParams, ctx: CallContext) -> dict[str, Any]:
    """Start the session over: stop its run, clear its transcript and forget the CLI's resume ids."""
    sessions = ctx.sessions
    key = await sessions.resolve(key=p.target, label=p.label)
    await check_visible(ctx, key)
    removed = await sessions.reset(key)
    announce(ctx.broadcast, key, "reset")
    return {"ok": True, "key": key, "removedMessages": removed}


@method("sessions.delete", access=Access("session", "write", ("key", "sessionKey", "label")),
        params=KeyParams, scope=WRITE)
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


@method("agents.list", access=Access("agent", "read"), scope=READ, baseline=True)
async def agents_list(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """The configured agents and which one is the default, in OpenClaw's shape (``AgentsListResult``): each
    agent's CLI is its ``agentRuntime.id`` (``claude``, ``codex``...); an agent placed on a node says so to a
    caller that may read nodes (``node_placement``)."""
    svc = ctx.sessions
    placed = {a.id: a for a in ctx.config.agents.list if a.node is not None}
    sees_nodes = bool(placed) and ctx.access.allows(ctx.caller, "read", Obj("node"))
    agents = []
    for a in svc.agents():
        # Every agent names its model, as ``models.list`` lists it (``<runtime>/<model or default>``): OpenClaw's
        # Control UI offers no chat for an agent without one.
        row = {"id": a["id"], "kind": "agent", "name": a["name"],
               "agentRuntime": {"id": a["runtime"], "source": "agent"},
               "model": {"primary": f"{a['runtime']}/{a.get('model') or 'default'}"}}
        if sees_nodes and a["id"] in placed:
            row.update(node_placement(placed[a["id"]]))
        agents.append(row)
    # Sessions are per agent and per sender (``agent:<id>:<...>``); OpenClaw's "global" would be one session for
    # every chat, which we do not have (dmScope "main" shares the agent's main session among DMs only).
    return {"defaultId": svc.default_agent_id, "mainKey": "main", "agents": agents, "scope": "per-sender"}


async def _placed_on_nodes(ctx: CallContext) -> dict[str, str]:
    """The id of the node each node-placed agent runs on, by agent id, for a caller that may read nodes (a node
    the gateway does not know is left out)."""
    placed = [a for a in ctx.config.agents.list if a.node is not None]
    if not placed or ctx.nodes is None or not ctx.access.allows(ctx.caller, "read", Obj("node")):
        return {}
    out = {}
    for agent in placed:
        assert agent.node is not None
        node = await ctx.nodes.store.find(agent.node)
        if node is not None:
            out[agent.id] = str(node["nodeId"])
    return out


def node_placement(agent: AgentConfig) -> dict[str, Any]:
    """What ``agents.list`` says of an agent whose turns run on a node, in the fields OpenClaw's schema has: its
    runtime is placed on a device that offers ``agent.run`` (taking no worker slot of the node's), and its
    ``workspace`` names the node (``<node>:<folder>``, as scp writes a path on another machine)."""
    folder = agent.workspace or "(a private folder per session)"
    return {"workspace": f"{agent.node}:{folder}",
            "agentRuntime": {"id": agent.runtime, "source": "agent", "devicePlacementSupported": True,
                             "cloudPlacementSupported": False,
                             "devicePlacement": {"requiredNodeCommands": ["agent.run"], "consumesWorkerSlot": False}}}


# -- sub-agents ------------------------------------------------------------------------------


class SpawnParams(Params):
    task: str = Field(min_length=1, max_length=200_000)
    agentId: str | None = None
    label: str | None = Field(None, min_length=1, max_length=256)
    parent: str | None = Field(None, min_length=1, max_length=512)
    idempotencyKey: str | None = Field(None, max_length=256)


async def spawning_parent(ctx: CallContext) -> SpawnParent:
    """Who the caller spawns for (``gateway.agents.spawn``): an agent run, for its session's person at its tier; a
    person signed in, for themselves; anyone else (the gateway token, a device) for nobody, at the baseline tier.

    Raises:
        Forbidden: the calling run has ended (its token dies with it).
    """
    caller = ctx.caller
    run_id = caller.extra.get("runId")
    if run_id is not None:
        run = ctx.runs.runs.get(run_id)
        if run is None or run.ended_at is not None:
            raise Forbidden("this agent run has ended: its token spawns nothing", details={"code": "RUN_ENDED"})
        row = await ctx.sessions.get(run.session_key)
        return SpawnParent(row.person_id if row is not None else None, is_owner_run(run),
                           ctx.sessions.agent(run.agent_id), run.session_key)
    return SpawnParent(caller.person_id, False)


async def _check_spawn_agent(ctx: CallContext, parent: SpawnParent, agent: AgentConfig) -> None:
    """A child only on an agent its person may use; for a non-owner run, one confined no more loosely than its own.

    Raises:
        Forbidden: ``SPAWN_FORBIDDEN`` naming ``agentId``.
    """
    if parent.is_owner:
        return
    if agent.people is not None:
        person = None
        if parent.person_id is not None:
            try:
                person = await ctx.people.get(parent.person_id)
            except InvalidRequest:  # removed since
                person = None
        if person is None or not ctx.people.may_use(person, agent.people):
            raise Forbidden(f"agentId: agent '{agent.id}' is not open to this conversation's person "
                            "(agents.list[].people)", details={"code": "SPAWN_FORBIDDEN", "field": "agentId"})
    if parent.agent is not None and parent.agent.id != agent.id:
        wider = wider_than(agent, parent.agent, ctx.config)
        if wider:
            raise Forbidden(f"agentId: agent '{agent.id}' is confined more loosely than agent '{parent.agent.id}' "
                            f"this run is on ({', '.join(wider)}): a non-owner run spawns only on agents confined "
                            "at least as tightly as its own", details={"code": "SPAWN_FORBIDDEN", "field": "agentId"})


async def spawn_child(ctx: CallContext, *, task: str, agent_id: str | None, label: str | None,
                      parent: str | None) -> dict[str, Any]:
    """A child session working on ``task``, for the spawner's person at its tier (``spawning_parent``): nothing is
    created or run unless the agent is one the spawner may use."""
    svc = ctx.sessions
    spawner = await spawning_parent(ctx)
    parent = parent or spawner.session_key  # a run's child hangs on the run's own session
    agent = svc.agent(agent_id or (parse_key(parent)[0] if parent else None), field="agentId")
    if parent:
        parent = await svc.resolve(key=parent)
        await check_visible(ctx, parent, field="parent")
    await _check_spawn_agent(ctx, spawner, agent)
    if label:
        async with ctx.db.session() as s:
            if await SessionRepo.by_label(s, label) is not None:
                raise InvalidRequest(f"invalid sessions.spawn params: at /label: '{label}' is already used",
                                     details={"field": "label"})
    key = f"agent:{agent.id}:subagent:{uuid.uuid4()}"
    await svc.ensure(key, kind="subagent", parent_key=parent, label=label, person_id=spawner.person_id)
    run, status = await ctx.runs.submit(RunRequest(
        session_key=key, agent_id=agent.id, message=task, source="spawn", is_owner=spawner.is_owner))
    return {"sessionKey": key, "runId": run.id, "status": status, "parent": parent, "label": label}


@method("sessions.spawn", access=Access("session", "write", ("parent",)),
        params=SpawnParams, scope=WRITE, idempotent=True, aliases=("sessions:spawn",), baseline=True)
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


@method("sessions.subagents", access=Access("session", "write", ("sessionKey",)),
        params=SubagentsParams, scope=WRITE, aliases=("subagents",), baseline=True)
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
