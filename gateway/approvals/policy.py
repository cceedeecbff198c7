"""``exec.approvals.get``: our approval policy in the shape of OpenClaw's exec-approvals file, read-only.

OpenClaw keeps its exec approvals in a file (``exec-approvals.json``: defaults, per-agent security and ask
levels, an allowlist of "allow always" patterns), and its Control UI's Devices page reads it with this
method. Ours is each agent's ``permissions`` in the config and the "allow always" rules in the database, so
this answers a view of those, mapped to OpenClaw's levels: ``allowlist`` is security allowlist with ask
off, ``ask`` and ``ask-dangerous`` ask on a miss, ``bypass`` is full. ``path`` names where each part lives,
``hash`` changes when either does. Changing it goes through ``config.patch`` and ``approvals.rules.revoke``,
so ``exec.approvals.set`` is not offered.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from gateway.access import Access
from gateway.approvals.service import APPROVALS_SERVICE
from gateway.dispatch.dispatcher import APPROVALS, CallContext, NoParams, method

_LEVELS: dict[str, tuple[str, str]] = {
    "allowlist": ("allowlist", "off"),
    "ask": ("allowlist", "on-miss"),
    "ask-dangerous": ("allowlist", "on-miss"),
    "bypass": ("full", "off"),
}
"""Our permission mode -> OpenClaw's (security, ask)."""

DEFAULTS = {"security": "allowlist", "ask": "off", "askFallback": "deny", "autoAllowSkills": False}


@method("exec.approvals.get", access=Access("config", "read"), scope=APPROVALS)
async def exec_approvals_get(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Each agent's permission mode and its "allow always" rules, as an exec-approvals snapshot."""
    agents: dict[str, dict[str, Any]] = {}
    for agent in ctx.config.agents.list:
        security, ask = _LEVELS[agent.permissions]
        agents[agent.id] = {"security": security, "ask": ask, "askFallback": "deny", "allowlist": []}
    approvals = ctx.services.find(APPROVALS_SERVICE)
    for rule in await approvals.rules() if approvals is not None else []:
        entry: dict[str, Any] = {"id": rule.id, "pattern": rule.pattern, "source": "allow-always"}
        if rule.last_used_at is not None:
            entry["lastUsedAt"] = rule.last_used_at
        agents.setdefault(rule.agent_id, {"allowlist": []})["allowlist"].append(entry)
    file = {"version": 1, "defaults": DEFAULTS, "agents": agents}
    return {"path": "config: agents.list[].permissions; database: approval_rules", "exists": True,
            "hash": hashlib.sha256(orjson.dumps(file, option=orjson.OPT_SORT_KEYS)).hexdigest(),
            "file": file, "resolvedDefaults": DEFAULTS}
