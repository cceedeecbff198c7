"""Agent CLI adapters (Claude Code, Codex, Gemini CLI, OpenCode), selected by ``agents.list[].runtime``.

Runtimes are found through the ``remoteclaw.runtimes`` extension point (``gateway.composition.entry_points``), like
channel types: the built-in four are entry points of this distribution, and a plugin adds another the
same way. Each is imported on first use, so the gateway loads only the adapters it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.agents.runtimes.base import Event, Invocation, McpServer, Parser, RunSpec, Runtime
from gateway.composition.entry_points import RUNTIMES

if TYPE_CHECKING:
    from gateway.config import AgentConfig

__all__ = ["Event", "Invocation", "McpServer", "Parser", "RunSpec", "Runtime", "get_runtime", "runtime_for"]


def get_runtime(name: str) -> Runtime:
    """A fresh adapter for ``name``.

    Raises:
        ValueError: no runtime has that name.
    """
    if name not in RUNTIMES:
        raise ValueError(RUNTIMES.unknown(name))
    cls: type[Runtime] = RUNTIMES.load(name)
    return cls()


def runtime_for(agent: AgentConfig) -> Runtime:
    """The adapter of one agent entry: its runtime, configured by the entry (``runtime: acp`` and its preset).

    Raises:
        ValueError: no runtime has that name, or the entry does not configure it well enough.
    """
    return get_runtime(agent.runtime).configured(agent)
