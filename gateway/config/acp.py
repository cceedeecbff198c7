"""``agents.list[].acp``: the command of an agent reached through the Agent Client Protocol (``runtime: acp``)."""

from __future__ import annotations

from pydantic import Field

from gateway.config.sections import Section

__all__ = ["ACP_AGENTS", "AcpAgentCommand"]

ACP_AGENTS = ("claude-acp", "codex-acp", "gemini", "opencode")
"""The presets ``agents.list[].agent`` may name (``gateway.agents.runtimes.acp_presets`` says what each is)."""


class AcpAgentCommand(Section):
    """How to start an ACP agent; with a preset (``agents.list[].agent``), each field given overrides its default."""

    command: str | None = Field(None, min_length=1, description="The agent's executable (a name on PATH or a path).")
    args: list[str] | None = Field(None, description="Its arguments (the preset's when unset).")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for the agent's process.")
