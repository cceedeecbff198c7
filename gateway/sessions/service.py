"""Session keys and the sessions service (``gateway.sessions.service``).

Every conversation an agent has is a session named ``agent:<agentId>:<rest>``. How direct
messages map onto sessions is the operator's choice (``session.dmScope``):

=========================  =====================================================
``main``                   the owner's DMs share ``agent:<id>:main`` (one continuous chat)
``per-peer``               ``agent:<id>:direct:<peer>`` (same person, any channel)
``per-channel-peer``       ``agent:<id>:<channel>:direct:<peer>``
``per-account-channel-peer`` ``agent:<id>:<channel>:<account>:direct:<peer>``
=========================  =====================================================

A sender nobody has on record (neither the owner nor a person) never shares a session: ``main`` and
``per-peer`` become ``per-channel-peer`` for them (``gateway.agents.strangers``).

Groups always get their own ``agent:<id>:<channel>:group:<chat>`` and a thread or topic inside a group or DM
appends ``:thread:<thread>``. Keys are lower-cased so they compare reliably.

Two names are special, as in OpenClaw: ``agent:<id>:global`` (kind ``global``: one session shared by
everyone, what OpenClaw's ``session.scope: global`` uses) and ``agent:<id>:unknown`` (kind ``unknown``: turns
whose sender could not be told). ``sessions.list`` leaves them out unless asked (``includeGlobal``,
``includeUnknown``); the ``sessions_list`` tool always asks.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gateway.agents.invocation import cli_facts
from gateway.projects.workdir import describe as describe_project
from gateway.protocol import InvalidRequest
from gateway.sessions.store import SessionRecord, SessionRepo
from gateway.store.base import utcnow
from gateway.webchat.files import delete_files

if TYPE_CHECKING:
    from gateway.config import AgentConfig, ConfigStore
    from gateway.hooks.runner import HookRunner
    from gateway.runs import RunQueue
    from gateway.store import Database

__all__ = ["SessionsService", "inbound_key", "main_key", "parse_key"]

RESET_WAIT_MS = 15_000  # a CLI gets SIGTERM, then SIGKILL after a grace period: well inside this
_UNSAFE = re.compile(r"[^a-z0-9._@+=\-]+")
_KEY = re.compile(r"^agent:([a-z0-9][a-z0-9_-]*):(.+)$")


def _part(value: str) -> str:
    """One key segment: lower-cased, with colons and spaces folded so a segment cannot fake another."""
    return _UNSAFE.sub("_", value.strip().lower()) or "_"


def main_key(agent_id: str) -> str:
    return f"agent:{agent_id}:main"


def inbound_key(agent_id: str, dm_scope: str, *, channel: str, account_id: str | None, chat_type: str,
                chat_id: str, sender_id: str, thread_id: str | None = None) -> str:
    """The session key of a message that arrived on a channel (see the module docstring)."""
    prefix = f"agent:{agent_id}"
    ch, acct = _part(channel), _part(account_id or "default")
    if chat_type == "dm":
        peer = _part(sender_id)
        base = {
            "main": f"{prefix}:main",
            "per-peer": f"{prefix}:direct:{peer}",
            "per-channel-peer": f"{prefix}:{ch}:direct:{peer}",
            "per-account-channel-peer": f"{prefix}:{ch}:{acct}:direct:{peer}",
        }[dm_scope]
    else:
        scope = f"{ch}:{acct}" if dm_scope == "per-account-channel-peer" else ch
        base = f"{prefix}:{scope}:{'channel' if chat_type == 'channel' else 'group'}:{_part(chat_id)}"
    if thread_id:
        base += f":thread:{_part(thread_id)}"
    return base


def parse_key(key: str) -> tuple[str, str]:
    """``(agentId, rest)`` of a session key; raises ``InvalidRequest`` naming ``sessionKey``."""
    m = _KEY.match(key)
    if not m:
        raise InvalidRequest(f"invalid sessionKey '{key}': expected agent:<agentId>:<name>",
                             details={"field": "sessionKey"})
    return m.group(1), m.group(2)


def kind_of(key: str) -> str:
    rest = parse_key(key)[1]
    if rest in ("main", "global", "unknown"):
        return rest
    for marker, kind in ((":thread:", "thread"), (":group:", "group"), (":channel:", "group"),
                         ("subagent:", "subagent"), ("cron:", "cron"), ("webchat:", "webchat")):
        if marker in f":{rest}" or rest.startswith(marker):
            return kind
    return "direct"


class SessionsService:
    """Looks up, creates and describes sessions; the one door method handlers use."""

    def __init__(self, db: Database, config: ConfigStore, hooks: HookRunner, runs: RunQueue) -> None:
        self._db = db
        self._config = config
        self._hooks = hooks
        self._runs = runs

    # -- agents ------------------------------------------------------------------------------

    @property
    def default_agent_id(self) -> str:
        cfg = self._config.config.agents
        ids = [a.id for a in cfg.list]
        return cfg.default if cfg.default in ids else (ids[0] if ids else cfg.default)

    def agent(self, agent_id: str | None, *, field: str = "agentId") -> AgentConfig:
        """The configured agent ``agent_id`` (default agent when None); unknown ids name ``field``."""
        wanted = agent_id or self.default_agent_id
        for a in self._config.config.agents.list:
            if a.id == wanted:
                return a
        raise InvalidRequest(f"unknown {field}: no agent '{wanted}' is configured", details={"field": field})

    def agents(self) -> list[dict[str, Any]]:
        return [
            {"id": a.id, "name": a.name or a.id, "runtime": a.runtime, "model": a.model,
             "toolProfile": a.toolProfile, "default": a.id == self.default_agent_id,
             "mainSessionKey": main_key(a.id), "cli": cli_facts(a)}
            for a in self._config.config.agents.list
        ]

    # -- sessions ----------------------------------------------------------------------------

    def normalize_key(self, key: str) -> str:
        """Accept ``main`` for the default agent's main session; check the agent exists."""
        key = key.strip()
        if key == "main":
            return main_key(self.default_agent_id)
        agent_id, _ = parse_key(key)
        self.agent(agent_id, field="sessionKey")
        return key

    async def ensure(self, key: str, **origin: Any) -> dict[str, Any]:
        """Create the session on first use; returns its description."""
        key = self.normalize_key(key)
        agent_id = parse_key(key)[0]
        hooks = self._hooks
        async with self._db.session() as s:
            new = hooks.has("session_start") and await SessionRepo.get(s, key) is None
            row = await SessionRepo.ensure(s, key, agent_id=agent_id, kind=origin.pop("kind", None) or kind_of(key),
                                           **origin)
            described = row.to_dict()
        if new:
            hooks.fire("session_start", {"sessionKey": key, "agentId": agent_id})
        return described

    async def resolve(self, *, key: str | None = None, label: str | None = None) -> str:
        """The key of an existing session by key or label; ``InvalidRequest`` naming the field if none."""
        if key:
            key = self.normalize_key(key)
            async with self._db.session() as s:
                if await SessionRepo.get(s, key) is None:
                    raise InvalidRequest(f"unknown sessionKey: no session '{key}'", details={"field": "sessionKey"})
            return key
        if label:
            async with self._db.session() as s:
                row = await SessionRepo.by_label(s, label)
            if row is None:
                raise InvalidRequest(f"unknown label: no session labelled '{label}'", details={"field": "label"})
            return row.key
        raise InvalidRequest("give sessionKey or label", details={"field": "sessionKey"})

    async def get(self, key: str) -> SessionRecord | None:
        async with self._db.session() as s:
            return await SessionRepo.get(s, key)

    async def stop_runs(self, key: str) -> list[str]:
        """Stop the session's turns and wait for them to end (up to ``RESET_WAIT_MS``); their ids.

        A stopped turn writes its last transcript rows as it ends: before a reset or a delete, not after.
        """
        runs = self._runs
        stopped, _forwarded = await runs.abort_everywhere(key)
        for run_id in stopped:
            await runs.wait(run_id, RESET_WAIT_MS)
        return stopped

    async def reset(self, key: str) -> int:
        """Start the session over: stop its run, clear its transcript, forget the CLIs' resume ids.

        Returns how many transcript entries were removed. The session itself (label, origin) stays.
        """
        await self.stop_runs(key)
        async with self._db.session() as s:
            removed = await SessionRepo.clear_history(s, key)
            row = await SessionRepo.get(s, key)
            if row is not None:
                row.cli_sessions = "{}"
                row.updated_at = utcnow()
        await delete_files(self._db, session_key=key)  # what agents sent to its web chat went with its messages
        self._hooks.fire("session_end", {"sessionKey": key, "agentId": parse_key(key)[0], "reason": "reset"})
        return removed

    async def status(self, key: str) -> dict[str, Any]:
        """What ``status {sessionKey}`` answers: the session, its usage and whether a run is going."""
        key = self.normalize_key(key)
        row = await self.get(key)
        if row is None:
            raise InvalidRequest(f"unknown sessionKey: no session '{key}'", details={"field": "sessionKey"})
        out = row.to_dict()
        agent = self.agent(row.agent_id, field="sessionKey")
        out["runtime"] = agent.runtime
        out["model"] = row.model or agent.model
        out["run"] = self._runs.lane_state(key)
        out["busy"] = out["run"]["active"] is not None
        where = await describe_project(agent, row.project, key)  # the web chat header shows project and branch
        out["project"], out["projectPath"], out["branch"] = where["project"], where["path"], where["branch"]
        out["projects"] = [p.name for p in agent.projects]  # what the web chat's project picker offers
        return out
