"""``runtime: acp``: any agent that speaks the Agent Client Protocol, one process per turn like the other runtimes.

The agent is named by a preset (``agents.list[].agent: opencode``, see ``acp_presets``) or configured by its
command (``agents.list[].acp: {command, args, env}``; with a preset, these override its defaults). The
conversation itself (initialize, ``session/new`` or ``session/resume``/``session/load`` with our MCP shim in
``mcpServers``, the prompt, its updates, permission requests, ``session/cancel``) is ``acp_turn``'s, over the
maintained SDK (``agent-client-protocol``); this module only builds the command, its environment and files.
The process is started and confined exactly like every other runtime's (``spec.confine``: the sandbox).
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.agents.runtimes.acp_presets import AcpPreset, preset
from gateway.agents.runtimes.base import Event, Invocation, Parser, RunSpec, Runtime, instructions_file

if TYPE_CHECKING:
    from gateway.agents.runtimes.driver import ProcessRunner
    from gateway.agents.runtimes.process import ProcessResult
    from gateway.config import AgentConfig

__all__ = ["AcpParser", "AcpRuntime"]


class AcpParser(Parser):
    """Nothing to parse: the SDK reads the agent's output (``acp_turn``) and hands over events directly."""

    def feed(self, obj: dict[str, Any]) -> list[Event]:
        return []


class AcpRuntime(Runtime):
    """An ACP agent; ``configured(agent)`` gives the instance for one agent entry (its preset and command)."""

    name = "acp"
    executable = ""
    self_driven = True

    def __init__(self, agent_preset: AcpPreset | None = None, command: str | None = None,
                 args: tuple[str, ...] | None = None, env: dict[str, str] | None = None) -> None:
        self.preset = agent_preset
        self.executable = command or (agent_preset.command if agent_preset else "")
        self.args = args if args is not None else (agent_preset.args if agent_preset else ())
        self.extra_env = {**(agent_preset.env if agent_preset else {}), **(env or {})}
        base = agent_preset.credentials_of if agent_preset else None
        if base:
            from gateway.agents.runtimes import get_runtime

            known = get_runtime(base)
            self.credential_env, self.logins = known.credential_env, known.logins
            self.credentials, self.settings = known.credentials, known.settings

    def configured(self, agent: AgentConfig) -> AcpRuntime:
        acp = agent.acp
        return AcpRuntime(preset(agent.agent), command=acp.command if acp else None,
                          args=tuple(acp.args) if acp and acp.args is not None else None,
                          env=dict(acp.env) if acp else None)

    def command(self, spec: RunSpec) -> list[str]:
        if spec.command:  # agents.list[].command still overrides the executable and leading args
            return list(spec.command)
        return [self.executable, *self.args]

    def build(self, spec: RunSpec) -> Invocation:
        if not self.executable and not spec.command:
            raise ValueError("runtime acp needs agents.list[].agent (a preset) or agents.list[].acp.command")
        p = self.preset
        env = {**self.extra_env, **spec.env, "PWD": str(spec.workspace)}  # OpenCode takes its project from $PWD
        argv = self.command(spec)
        if spec.model and p is not None and p.model_flag:
            argv += [p.model_flag, spec.model]
        elif spec.model and p is not None and p.model_env:
            env.setdefault(p.model_env, spec.model)
        files: dict[Path, str] = dict(p.files(spec, env) if p else {})
        instructions = p.instructions if p is not None else "AGENTS.md"
        if instructions:
            path = spec.workspace / instructions
            files[path] = instructions_file(path, spec.system_prompt)
        # stdin stays open: the SDK writes the conversation on it (nothing before the process starts)
        return Invocation(argv=argv, env=env, cwd=spec.workspace, files=files, stdin=b"", keep_stdin=True)

    def session_meta(self, spec: RunSpec) -> dict[str, Any]:
        return self.preset.session_meta(spec.system_prompt) if self.preset is not None else {}

    def parser(self) -> AcpParser:
        return AcpParser()

    async def drive(self, inv: Invocation, spec: RunSpec, emit: Callable[[Event], None], *,
                    no_output_timeout: float, on_spawn: Callable[[float], None] | None,
                    process: ProcessRunner | None = None) -> ProcessResult:
        """Run the turn's process (with ``process``: here, or on the turn's node) and its ACP conversation
        (``acp_turn``); the driver calls this instead of reading NDJSON itself."""
        # the SDK's schema takes about a second to import: off the event loop, once
        turn = await asyncio.to_thread(importlib.import_module, "gateway.agents.runtimes.acp_turn")
        modes = self.preset.modes.get(spec.permissions, ()) if self.preset is not None else ()
        return await turn.run_acp_turn(inv, spec, emit, meta=self.session_meta(spec), modes=modes,
                                       no_output_timeout=no_output_timeout, on_spawn=on_spawn, process=process)

    def session_expired(self, message: str) -> bool:
        return "could not be resumed" in message.lower() or super().session_expired(message)

