"""Liveness and status: ``health``, ``status``, ``system-presence``."""

from __future__ import annotations

import os
import sys
from typing import Any

from pydantic import Field

from gateway.access import Access
from gateway.dispatch.dispatcher import READ, CallContext, NoParams, Params, method, registry


@method("health", access=Access("gateway", "read"), scope=READ, baseline=True, inline=True)
async def health(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Is the gateway up, and how long has it been."""
    return ctx.server.health()


class StatusParams(Params):
    sessionKey: str | None = Field(None, min_length=1, max_length=512)


@method("status", access=(Access("gateway", "read"), Access("session", "read", ("sessionKey",))),
        params=StatusParams, scope=READ, baseline=True)
async def status(p: StatusParams, ctx: CallContext) -> dict[str, Any]:
    """Gateway status; with ``sessionKey``, that session's status (``gateway.sessions.service``)."""
    server = ctx.server
    if p.sessionKey:
        from gateway.projects.methods import open_projects, project_place
        from gateway.sessions.methods import check_visible

        await check_visible(ctx, ctx.sessions.normalize_key(p.sessionKey))
        out = await ctx.sessions.status(p.sessionKey)
        agent = ctx.sessions.agent(out["agentId"], field="sessionKey")
        out["projects"] = open_projects(ctx, agent, out.get("personId"))  # what the web chat's picker offers
        if agent.node is not None:  # the header shows where the turns run: the node's folder or worktree
            out["node"] = agent.node
            if out.get("project"):
                where = await project_place(ctx, agent, out["project"], out["key"])
                out["projectPath"], out["branch"] = where["path"], where["branch"]
        return out
    host, port = ctx.listen
    answer: dict[str, Any] = {
        "version": server.version,
        "instanceId": server.instance_id,  # this start of the gateway (hello-ok server.bootId)
        "replicaId": server.replica_id,  # the replica across restarts: what its session leases are held as
        "pid": os.getpid(),
        "python": sys.version.split()[0],
        "startedAtMs": server.started_at_ms,
        "uptimeMs": server.uptime_ms(),
        "listen": {"host": host, "port": port},
        "stateDir": str(ctx.state_dir),
        "database": "sqlite" if ctx.db.is_sqlite else "postgresql",
        "connections": len(server.connections),
        "methods": len(registry.names()),
        "defaultAgentId": ctx.config.agents.default,
        "cliCommand": _cli_command(),  # how a person types `remoteclaw` on this machine (the web chat's hints)
        # Each agent's CLI and where it resolves (agents.list is OpenClaw's closed shape: no room there).
        "agents": [{"id": a["id"], "runtime": a["runtime"], "model": a["model"], "cli": a["cli"]}
                   for a in ctx.sessions.agents()],
        "recoveredAtStart": server.recovered,  # turns the previous process left: interrupted, retried, requeued
        "adoptedFromReplicas": dict(server.replicas.adopted) if server.replicas else {},  # of replicas that died
        "eventBus": server.bus.status() if server.bus else None,  # Redis between replicas: outages, events not relayed
    }
    if not _the_owner(ctx):  # where the config, token and database are is the owner's to know
        del answer["stateDir"]
    return answer


def _the_owner(ctx: CallContext) -> bool:
    """The owner at the controls: the gateway token or a device, or the owner's own sign-in; never an agent run
    (whose workspace must not learn where the state dir is), nor another person."""
    caller = ctx.caller
    if caller.reach is not None or caller.run_session is not None:
        return False
    if caller.person_id is None:
        return True
    person = ctx.people.peek(caller.person_id)
    return person is not None and person.is_owner


class PresenceParams(Params):
    offset: int | None = Field(None, ge=0, le=1_000_000_000,
                               description="Ours: the first entry of a page (oldest first).")
    limit: int | None = Field(None, ge=1, le=10_000, description="Ours: entries per page.")


@method("system-presence", access=Access("gateway", "read"), params=PresenceParams, scope=READ)
async def system_presence(p: PresenceParams, ctx: CallContext) -> list[dict[str, Any]] | dict[str, Any]:
    """Who is connected right now (OpenClaw ``PresenceEntry`` list); with ``offset``/``limit``, one page of it
    as ``{presence, total, offset, limit, stateVersion}`` (a crowd too large for one answer).

    Asking is also how a client that is not a UI opts in to the ``presence`` deltas that follow
    (``gateway.server.presence``): it has the list now, and keeps it current from the events.
    """
    server = ctx.server
    board = server.presence_board
    conn = server.connections.get(ctx.caller.conn_id)
    if conn is not None and ctx.caller.role == "operator":
        board.watch(conn)
    if p.offset is None and p.limit is None:
        return server.presence()
    offset, limit = p.offset or 0, p.limit or 1000
    return {"presence": board.page(offset, limit), "total": len(board), "offset": offset, "limit": limit,
            "stateVersion": board.state_version()}


def _cli_command() -> str:
    from gateway.installation import cli_command

    return cli_command()
