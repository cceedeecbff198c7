"""Agent CLI adapters (Claude Code, Codex, Gemini CLI, OpenCode), selected by ``agents.list[].runtime``."""

from __future__ import annotations

from channels.runtimes.base import Event, Invocation, McpServer, Parser, RunSpec, Runtime

__all__ = ["Event", "Invocation", "McpServer", "Parser", "RunSpec", "Runtime", "get_runtime"]


def get_runtime(name: str) -> Runtime:
    """The adapter for ``name``; imported lazily so the gateway loads only what it uses."""
    if name == "claude":
        from channels.runtimes.claude import ClaudeRuntime

        return ClaudeRuntime()
    if name == "codex":
        from channels.runtimes.codex import CodexRuntime

        return CodexRuntime()
    if name == "gemini":
        from channels.runtimes.gemini import GeminiRuntime

        return GeminiRuntime()
    if name == "opencode":
        from channels.runtimes.opencode import OpenCodeRuntime

        return OpenCodeRuntime()
    raise ValueError(f"unknown runtime: {name}")
