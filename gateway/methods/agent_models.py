"""Models: ``models.list`` and ``models.authStatus``, from the agent CLIs the config names.

Our agents are CLIs that pick and authenticate their own model: the gateway holds no provider keys. So a
"model" here is an agent's CLI with its configured ``model`` (or the CLI's default), its "provider" is the
runtime (claude, codex, gemini, opencode), and its auth status is what we can see from outside the CLI: an
API key in the environment the CLI will get, or the credentials file its login writes. We never read the
file's content; a login we cannot see is reported ``missing``, which may be wrong for a CLI that keeps its
login elsewhere (a keychain) and still works.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gateway.access import Access
from gateway.agents.invocation import cli_facts
from gateway.dispatch.dispatcher import READ, CallContext, Params, method

if TYPE_CHECKING:
    from gateway.config import AgentConfig

__all__ = ["auth_evidence"]

RUNTIME_LABELS = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "opencode": "OpenCode"}

_AUTH_ENV: dict[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"),
    "opencode": ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"),
}
"""Environment variables that authenticate each CLI without a login."""

_AUTH_FILES: dict[str, tuple[str, ...]] = {
    "claude": (".claude/.credentials.json",),
    "codex": (".codex/auth.json",),
    "gemini": (".gemini/oauth_creds.json",),
    "opencode": (".local/share/opencode/auth.json",),
}
"""Where each CLI's own login keeps its credentials, under the home directory the CLI runs with."""


def auth_evidence(agent: AgentConfig) -> tuple[Literal["ok", "static", "missing"], str]:
    """What we can see of ``agent``'s CLI login: ``static`` (an API key in its environment), ``ok`` (its
    credentials file exists) or ``missing``; and the evidence in words (names only, never values)."""
    env = {**os.environ, **agent.env}
    for name in _AUTH_ENV.get(agent.runtime, ()):
        if env.get(name):
            return "static", f"{name} is set"
    home = Path(env.get("HOME") or Path.home())
    for rel in _AUTH_FILES.get(agent.runtime, ()):
        codex_home = env.get("CODEX_HOME") if agent.runtime == "codex" else None
        base = Path(codex_home) / "auth.json" if codex_home else home / rel
        if base.is_file():
            return "ok", f"{base} exists"
    return "missing", "no API key in the environment and no login file found"


def _agents(ctx: CallContext, agent_id: str | None) -> list[AgentConfig]:
    svc = ctx.sessions
    return [svc.agent(agent_id)] if agent_id else list(ctx.config.agents.list)


class ModelsListParams(Params):
    agentId: str | None = Field(None, min_length=1)
    includeProviderCapabilities: bool | None = None
    preparedOnly: bool | None = None
    refresh: bool | None = None
    view: Literal["default", "configured", "provider-config", "all"] | None = None
    sessionKey: str | None = Field(None, min_length=1, description="Sent by the Control UI; accepted and ignored.")


@method("models.list", access=Access("agent", "read"), params=ModelsListParams, scope=READ)
async def models_list(p: ModelsListParams, ctx: CallContext) -> dict[str, Any]:
    """One entry per agent CLI and model the config names; unavailable when the CLI is not installed."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for agent in _agents(ctx, p.agentId):
        model_id = f"{agent.runtime}/{agent.model or 'default'}"
        if model_id in seen:
            continue
        seen.add(model_id)
        label = RUNTIME_LABELS.get(agent.runtime, agent.runtime)
        entry: dict[str, Any] = {"id": model_id, "name": f"{label} ({agent.model or 'CLI default'})",
                                 "provider": agent.runtime, "tags": ["cli"],
                                 "available": bool(cli_facts(agent)["found"])}
        out.append(entry)
    return {"models": out}


class AuthStatusParams(Params):
    refresh: bool | None = None
    agentId: str | None = None


@method("models.authStatus", access=Access("agent", "read"), params=AuthStatusParams, scope=READ)
async def models_auth_status(p: AuthStatusParams, ctx: CallContext) -> dict[str, Any]:
    """Per agent CLI (provider = runtime): whether it is installed and what shows it is logged in."""
    providers: dict[str, dict[str, Any]] = {}
    for agent in _agents(ctx, p.agentId or None):
        if agent.runtime in providers:
            continue
        facts = cli_facts(agent)
        status, evidence = auth_evidence(agent)
        if not facts["found"]:
            status, evidence = "missing", f"{facts['command']} is not installed ({facts['install']})"
        providers[agent.runtime] = {
            "provider": agent.runtime, "authProvider": agent.runtime,
            "displayName": RUNTIME_LABELS.get(agent.runtime, agent.runtime), "status": status,
            "profiles": [], "evidence": evidence, "cli": facts,
        }
    return {"ts": int(time.time() * 1000), "providers": list(providers.values())}
