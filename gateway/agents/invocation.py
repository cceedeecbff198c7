"""Which command runs an agent, whether this machine has it, and how to install it.

Shared by ``remoteclaw doctor``, ``agents.list`` (the web chat's empty state names the agent and, when its
CLI is missing, the command that installs it) and the per-turn facts in the transcript.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.config import AgentConfig

__all__ = ["INSTALL", "NAMES", "Desk", "cli_argv", "cli_facts", "missing_cli"]

INSTALL = {"claude": "npm install -g @anthropic-ai/claude-code", "codex": "npm install -g @openai/codex",
           "gemini": "npm install -g @google/gemini-cli", "opencode": "npm install -g opencode-ai"}
"""How each built-in runtime's CLI is installed."""

NAMES = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "opencode": "OpenCode"}
"""Each built-in runtime as people call it."""


@dataclass(frozen=True, slots=True)
class Desk:
    """Where a session's CLI is started by hand to continue its conversation (``/handoff``): the folder its turns
    run in, the state folder that outlives them, the HOME its CLI filed the conversation under (None: the
    machine's), the command (None: the agent's own) and the node it is on (None: the gateway's machine)."""

    workspace: Path
    state_dir: Path | None
    home: Path | None
    argv: list[str] | None = None
    node: str | None = None


def missing_cli(runtime: str, command: str, *, denied: bool = False) -> str:
    """What a chat is told when an agent's CLI cannot be started, in words a person acts on."""
    if denied:
        return (f"the gateway may not run {command} (permission denied), so the agent cannot answer. Make it "
                f"executable on the gateway's machine (chmod +x {command}), then send your message again.")
    name = NAMES.get(runtime, command)
    how = INSTALL.get(runtime)
    install = f"Install {name} there with: {how}" if how else f"Install {command} there and put it on PATH"
    return (f"{name} is not installed on the gateway's machine ({command} was not found), so the agent cannot "
            f"answer. {install}, log in to it once, then send your message again.")


def cli_argv(agent: AgentConfig) -> list[str]:
    """The command that starts ``agent``: its configured ``command``, or its runtime's executable."""
    from gateway.agents.runtimes import runtime_for

    return list(agent.command) if agent.command else [runtime_for(agent).executable]


def cli_facts(agent: AgentConfig) -> dict[str, Any]:
    """``{command, path, shown, found, install}``: ``path`` is where ``command`` resolves (None when missing),
    ``shown`` the same as a person reads it (``~/.local/bin/claude`` for a path in the gateway user's HOME)."""
    try:
        command = cli_argv(agent)[0]
    except ValueError:  # an unknown runtime: the config check names it elsewhere
        return {"command": None, "path": None, "shown": None, "found": False, "install": None}
    path = shutil.which(command)
    home = str(Path.home())
    shown = "~" + path[len(home):] if path and home != "/" and path.startswith(home + "/") else path
    return {"command": command, "path": path, "shown": shown, "found": path is not None,
            "install": None if path else INSTALL.get(agent.runtime, f"install {command} and put it on PATH")}
