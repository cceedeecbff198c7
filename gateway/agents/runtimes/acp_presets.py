"""The agents ``runtime: acp`` knows by name (``agents.list[].agent``), and what each needs around the protocol.

ACP fixes the conversation (initialize, session/new with our MCP server, prompt, updates, permission requests), not
how an agent is installed, which model it uses, where it reads a system prompt or which login it needs. A preset
says those for one agent: its command line, its environment, the instructions file it reads in its working
directory (the system prompt: ACP has no field for one, except Claude's adapter's ``_meta.systemPrompt``), the
per-run files that keep it offline and quiet, and which bespoke runtime's credentials and logins it shares (the
sandbox shows those to the run). An agent without a preset is configured by ``agents.list[].acp`` alone.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.agents.runtimes import toml

if TYPE_CHECKING:
    from gateway.agents.runtimes.base import RunSpec

__all__ = ["PRESETS", "AcpPreset", "preset"]


@dataclass(frozen=True, slots=True)
class AcpPreset:
    """One known ACP agent.

    ``credentials_of``: the bespoke runtime whose ``credential_env``/``logins``/``credentials``/``settings`` apply
    (the same CLI underneath). ``instructions``: the file in the workspace the agent reads as project
    instructions, where the system prompt goes (None: sent in ``_meta.systemPrompt``, Claude's adapter).
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    credentials_of: str | None = None
    instructions: str | None = "AGENTS.md"
    model_flag: str | None = None
    """The agent's command-line option naming the model (``--model``), when it has one."""
    model_env: str | None = None
    """Or the variable that names it (Claude's adapter reads ``ANTHROPIC_MODEL``)."""
    modes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The agent's session mode (``session/set_mode``) for each of our permission modes, in order of preference:
    one in which the agent asks its client (our permission handler then answers by the mode)."""

    def files(self, spec: RunSpec, env: dict[str, str]) -> dict[Path, str]:
        """Per-run files beyond the instructions file (written 0600, restored after the run); may add to ``env``."""
        return {}

    def session_meta(self, system_prompt: str) -> dict[str, Any]:
        """``_meta`` of ``session/new`` and ``session/load``."""
        return {}


@dataclass(frozen=True, slots=True)
class _Claude(AcpPreset):
    def session_meta(self, system_prompt: str) -> dict[str, Any]:
        # the adapter appends it to Claude Code's own system prompt (its ``claude_code`` preset)
        return {"systemPrompt": {"append": system_prompt}}


@dataclass(frozen=True, slots=True)
class _Gemini(AcpPreset):
    def files(self, spec: RunSpec, env: dict[str, str]) -> dict[Path, str]:
        # the same project settings as headless mode (gemini.py) minus the MCP server, which comes in session/new
        settings: dict[str, Any] = {"telemetry": {"enabled": False}, "privacy": {"usageStatisticsEnabled": False},
                                    "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}
        seen = {**os.environ, **env}
        login = any(seen.get(k) == "true" for k in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA"))
        if seen.get("GOOGLE_GEMINI_BASE_URL") and not login:
            settings["security"] = {"auth": {"selectedType": "gemini-api-key"}}
        return {spec.workspace / ".gemini" / "settings.json": json.dumps(settings, indent=2)}


@dataclass(frozen=True, slots=True)
class _OpenCode(AcpPreset):
    def files(self, spec: RunSpec, env: dict[str, str]) -> dict[Path, str]:
        # "ask" for what changes things: OpenCode then sends session/request_permission, which the run's permission
        # mode answers (allowlist refuses, ask puts it to the person, bypass allows)
        config: dict[str, Any] = {"$schema": "https://opencode.ai/config.json", "autoupdate": False,
                                  "share": "disabled",
                                  "permission": {"edit": "ask", "bash": "ask", "webfetch": "ask"}}
        if spec.fronted is not None:  # the user's providers, at the model gateway (``opencode.fronted_config``)
            from gateway.agents.runtimes.opencode import fronted_config

            config.update(fronted_config(spec.fronted))
        if spec.model:
            config["model"] = spec.model
        return {spec.workspace / "opencode.json": json.dumps(config, indent=2)}


@dataclass(frozen=True, slots=True)
class _Codex(AcpPreset):
    def files(self, spec: RunSpec, env: dict[str, str]) -> dict[Path, str]:
        # the bespoke runtime's per-run CODEX_HOME (the user's config read, never written; offline switches; the
        # login copied; sessions kept per gateway session), without our MCP server: it comes in session/new
        from gateway.agents.runtimes.codex import CodexRuntime

        built = CodexRuntime().build(replace(spec, permissions="allowlist"))
        env["CODEX_HOME"] = built.env["CODEX_HOME"]
        home = Path(env["CODEX_HOME"])
        config = CodexRuntime().config(spec)
        config.pop("mcp_servers", None)
        return {home / "config.toml": toml.dumps(config)}


PRESETS: dict[str, AcpPreset] = {
    # Claude's adapter starts in "auto" (a classifier decides, nobody is asked): "default" asks the client
    "claude-acp": _Claude("claude-acp", "claude-agent-acp", credentials_of="claude", instructions=None,
                          model_env="ANTHROPIC_MODEL",
                          modes={"allowlist": ("default",), "ask": ("default",), "ask-dangerous": ("default",),
                                 "bypass": ("bypassPermissions", "default")}),
    "codex-acp": _Codex("codex-acp", "codex-acp", credentials_of="codex"),
    "gemini": _Gemini("gemini", "gemini", ("--acp",), {"GEMINI_CLI_TRUST_WORKSPACE": "true"},
                      credentials_of="gemini", instructions="GEMINI.md", model_flag="--model"),
    "opencode": _OpenCode("opencode", "opencode", ("acp",), {"OPENCODE_DISABLE_AUTOUPDATE": "true"},
                          credentials_of="opencode"),
}
"""``claude-acp`` and ``codex-acp`` are the adapters from npm (``@agentclientprotocol/claude-agent-acp``, formerly
``@zed-industries/claude-code-acp``; ``@agentclientprotocol/codex-acp``); Gemini CLI and OpenCode speak ACP
themselves (``gemini --acp``; ``--experimental-acp`` is its deprecated name)."""


def preset(name: str | None) -> AcpPreset | None:
    """The preset called ``name``; None for None.

    Raises:
        ValueError: no preset has that name.
    """
    if name is None:
        return None
    if name not in PRESETS:
        raise ValueError(f"unknown ACP agent {name!r}; known: {', '.join(sorted(PRESETS))} "
                         "(or give agents.list[].acp.command)")
    return PRESETS[name]
