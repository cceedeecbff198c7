"""What a run's MCP shim is told: the ``REMOTECLAW_*`` variables, its own token, and the prompt."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.dispatch.callers import OPERATOR_SCOPES, READ, WRITE, SessionScope
from gateway.dispatch.registry import registry

if TYPE_CHECKING:
    from pathlib import Path

    from gateway.agents.tokens import RunTokens
    from gateway.config import AgentConfig, Config
    from gateway.runs import Run

__all__ = ["context_env", "is_owner_run", "issue_run_token", "prompt_for"]


def is_owner_run(run: Run) -> bool:
    """Owner tier: every message of the turn came from the owner, and it is not a cron run."""
    return run.is_owner and run.first.source != "cron"


def issue_run_token(tokens: RunTokens, run: Run, reach: tuple[str, ...], *, person_id: str | None = None,
                    node_id: str | None = None) -> str:
    """A token for this run's shim only, capped to its tier (the agent can read it; see ``RunTokens``), naming
    the folders it may name files in (``reach``: what the run itself can see).

    ``person_id``: the run is in the session of a person who sees only their own things (``gateway.people``): its
    tools reach that person's sessions too (their other chats, their web chat), and nobody else's, whatever its
    tier.

    ``node_id``: the run's turn is on that node: the files it names are read there (``reach`` is then empty).
    """
    origin = run.last.origin
    if is_owner_run(run) and person_id is None:
        return tokens.issue(frozenset(OPERATOR_SCOPES), reach=reach, session_key=run.session_key, run_id=run.id,
                            node_id=node_id)
    confine = SessionScope(run.session_key, origin.channel if origin else None, origin.to if origin else None,
                           person_id=person_id)
    return tokens.issue(frozenset({READ, WRITE}), methods=registry.baseline_names(), confine=confine, reach=reach,
                        session_key=run.session_key, run_id=run.id, node_id=node_id)


def context_env(run: Run, *, agent: AgentConfig, config: Config, listen: tuple[str, int], fx_path: Path,
                token: str) -> dict[str, str]:
    """The ``REMOTECLAW_*`` variables the shim reads (see the tool reference's context section)."""
    host, port = listen
    host = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
    origin = run.last.origin
    profile = run.last.tool_profile
    if profile is None:
        profile = agent.toolProfile if "toolProfile" in agent.model_fields_set else config.tools.profile
    env = {
        "REMOTECLAW_GATEWAY_URL": f"ws://{host}:{port}/",
        "REMOTECLAW_GATEWAY_TOKEN": token,
        "REMOTECLAW_SESSION_KEY": run.session_key,
        "REMOTECLAW_SIDE_EFFECTS_FILE": str(fx_path),
        "REMOTECLAW_SENDER_IS_OWNER": "true" if is_owner_run(run) else "false",
        "REMOTECLAW_TOOL_PROFILE": profile,
        "REMOTECLAW_RUN_ID": run.id,
        "REMOTECLAW_AGENT_ID": run.agent_id,
    }
    if origin is not None:
        env["REMOTECLAW_CHANNEL"] = origin.channel
        env["REMOTECLAW_TO"] = origin.to
        if origin.account_id:
            env["REMOTECLAW_ACCOUNT_ID"] = origin.account_id
        if origin.thread_id:
            env["REMOTECLAW_THREAD_ID"] = origin.thread_id
    return env


def prompt_for(run: Run) -> str:
    """The turn's prompt: the message, or every message collected while the session was busy."""
    if len(run.requests) == 1:
        return run.first.message
    parts = [f"({len(run.requests)} messages arrived while you were busy; answer them together.)"]
    parts += [f"[{i}] {m}" for i, m in enumerate(run.messages, 1)]
    return "\n\n".join(parts)
