"""What a spawned sub-agent inherits from the run that spawned it, and which agents that run may spawn on.

Why: a child run is a run of its own, with the sandbox, network, binds, ``passEnv`` and ``env`` of the agent it
runs on. If a run could pick any agent, a stranger's sandboxed run would spawn a child on the owner's unsandboxed
agent and read the config through it (issue #51). So a child runs as its parent: for the parent's person (their
sessions, budget and usage), at the parent's tier; only on an agent that person may use; and for a non-owner run,
only on an agent confined at least as tightly as its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.config import AgentConfig, Config
    from gateway.sandbox.config import SandboxConfig

__all__ = ["SpawnParent", "wider_than"]

_NETWORK_RANK = {"none": 0, "loopback": 1, "open": 2}


@dataclass(frozen=True, slots=True)
class SpawnParent:
    """Who a child is spawned for: the facts its run request and session carry."""

    person_id: str | None
    """Whose child it is: the child's session is theirs (who sees it, whose budget pays, whose usage it is)."""
    is_owner: bool
    """The tier the child runs at: the spawning run's (``context.is_owner_run``); False unless a run is the owner's."""
    agent: AgentConfig | None = None
    """The spawning run's agent, whose confinement bounds a non-owner child's; None: not spawned by a run."""
    session_key: str | None = None
    """The spawning run's session: the child's parent when none is named."""


def wider_than(target: AgentConfig, own: AgentConfig, config: Config) -> list[str]:
    """What of ``target``'s confinement is wider than ``own``'s for a non-owner run (empty: nothing, it may spawn
    there): an unsandboxed mode, a more open network, binds, ``passEnv`` names or ``env`` values its own agent lacks.

    A run whose own agent is not sandboxed (``mode: off``) already sees what any child could: nothing is wider.
    """
    mine, theirs = config.agents.sandbox_for(own), config.agents.sandbox_for(target)
    if mine.mode == "off":
        return []
    wider: list[str] = []
    if theirs.mode == "off":
        wider.append("sandbox.mode")
    if _NETWORK_RANK[theirs.network] > _NETWORK_RANK[mine.network]:
        wider.append("sandbox.network")
    if _binds(theirs) - _binds(mine) - {(path, False) for path, writable in _binds(mine) if writable}:
        wider.append("sandbox.binds")
    if set(theirs.passEnv) - set(mine.passEnv):
        wider.append("sandbox.passEnv")
    if any(own.env.get(name) != value for name, value in target.env.items()):
        wider.append("env")
    return wider


def _binds(settings: SandboxConfig) -> set[tuple[str, bool]]:
    return {(bind.path, bind.writable) for bind in settings.binds}
