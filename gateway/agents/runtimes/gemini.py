"""Google Gemini CLI (``gemini --prompt … --output-format stream-json``).

MCP and settings go in a per-run workspace ``.gemini/settings.json`` (project settings), never the
user's ``~/.gemini``. Gemini drops variables whose names look secret (``*TOKEN*``, ``*KEY*``) from
what MCP servers inherit unless the server's own ``env`` block sets them, so the whole
``REMOTECLAW_*`` context is in that block. The system prompt goes in the workspace ``GEMINI.md``.

Two switches the CLI needs to run unattended: the workspace must be trusted
(``GEMINI_CLI_TRUST_WORKSPACE=true``), else it ignores the project settings and turns ``yolo``
approval back into "ask"; and with ``GOOGLE_GEMINI_BASE_URL`` set (a proxy or a local endpoint)
it picks an auth type that its own headless check then rejects ("Invalid auth method selected"),
so we name the API-key auth type explicitly in that case. With a permission mode that asks (``ask``,
``ask-dangerous``) it runs as ``gemini --acp`` instead, in its default approval mode (see ``gemini_acp``).
Sessions are filed per workspace path under ``~/.gemini/tmp``; the executor keeps one stable workspace path per
session, so ``--resume`` (``session/load`` in ACP) finds them.
"""

from __future__ import annotations

import json
import os
from typing import Any

from gateway.agents.runtimes import gemini_acp
from gateway.agents.runtimes.base import (
    ASKING_MODES,
    Event,
    Invocation,
    Parser,
    RunSpec,
    Runtime,
    Stdin,
    instructions_file,
    mcp_server_name,
)

__all__ = ["GeminiParser", "GeminiRuntime"]

_OUR_PREFIX = f"mcp_{mcp_server_name}_"


def _tool_name(name: Any) -> Any:
    """Gemini calls our tools ``mcp_remoteclaw_<tool>``; transcripts use ``mcp__remoteclaw__<tool>`` for every CLI."""
    if isinstance(name, str) and name.startswith(_OUR_PREFIX):
        return f"mcp__{mcp_server_name}__{name[len(_OUR_PREFIX):]}"
    return name


class GeminiParser(Parser):
    """``--output-format stream-json``'s events; or, once ``talk`` is called (``--acp``), the ACP conversation."""

    def __init__(self) -> None:
        super().__init__()
        self.model: str | None = None
        self._text: list[str] = []
        self.acp: gemini_acp.AcpClient | None = None

    def talk(self, feed: Stdin, spec: RunSpec) -> None:
        self.acp = gemini_acp.AcpClient(feed, spec)
        self.model = spec.model

    def _flush(self) -> list[Event]:
        if not self._text:
            return []
        text, self._text = "".join(self._text), []
        return [Event("text", text=text)]

    def feed(self, obj: dict[str, Any]) -> list[Event]:
        if self.acp is not None:
            events = self.acp.feed_obj(obj)
            self.session_id = self.acp.session_id or self.session_id
            for ev in events:
                ev.tool_name = _tool_name(ev.tool_name)
                if ev.kind == "done":
                    ev.model = self.model
            return events
        kind = obj.get("type")
        if kind == "init":
            self.session_id = obj.get("session_id") or self.session_id
            self.model = obj.get("model") or self.model
            return []
        if kind == "message":
            if obj.get("role") == "assistant" and obj.get("content"):
                if not obj.get("delta"):
                    return [*self._flush(), Event("text", text=str(obj["content"]))]
                self._text.append(str(obj["content"]))
            return []
        if kind == "tool_use":
            return [*self._flush(), Event("tool_use", tool_id=obj.get("tool_id"),
                                          tool_name=_tool_name(obj.get("tool_name")), tool_input=obj.get("parameters"))]
        if kind == "tool_result":
            err = obj.get("error")
            output = obj.get("output") if not err else (err.get("message") if isinstance(err, dict) else str(err))
            return [Event("tool_result", tool_id=obj.get("tool_id"), tool_output=output,
                          is_error=obj.get("status") == "error")]
        if kind == "error":
            if obj.get("severity") == "warning":
                return []
            return [*self._flush(), Event("error", text=str(obj.get("message") or "error"))]
        if kind == "result":
            stats = obj.get("stats") or {}
            cached = int(stats.get("cached") or 0)
            # ``input_tokens`` counts the cached prompt too; ``input`` (newer CLIs) is the uncached part.
            fresh = stats["input"] if stats.get("input") is not None else int(stats.get("input_tokens") or 0) - cached
            usage = {"input": max(0, int(fresh)), "output": int(stats.get("output_tokens") or 0),
                     "cacheRead": cached, "cacheWrite": 0}
            out = self._flush()
            if obj.get("status") not in (None, "success"):
                err = obj.get("error") or {}
                out.append(Event("error", text=str(err.get("message") if isinstance(err, dict) else err or "failed")))
                out.append(Event("done", session_id=self.session_id, usage=usage, model=self.model, is_error=True))
            else:
                out.append(Event("done", session_id=self.session_id, usage=usage, model=self.model))
            return out
        return []

    def finish(self) -> list[Event]:
        if self.acp is not None:
            self.acp.finish()
        return self._flush()


class GeminiRuntime(Runtime):
    name = "gemini"
    executable = "gemini"
    credential_env = ("GEMINI_*", "GOOGLE_*")
    logins = (".gemini",)
    credentials = (".gemini/oauth_creds.json", ".gemini/google_accounts.json")
    settings = (".gemini/settings.json",)  # which way it logs in

    def build(self, spec: RunSpec) -> Invocation:
        settings = {
            "mcpServers": {spec.mcp.name: {"command": spec.mcp.command, "args": list(spec.mcp.args),
                                           "env": dict(spec.mcp.env), "trust": True, "timeout": 60000}},
            "telemetry": {"enabled": False},
            "privacy": {"usageStatisticsEnabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        }
        env = {**os.environ, **spec.env}
        vertex_or_login = any(env.get(k) == "true" for k in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA"))
        if env.get("GOOGLE_GEMINI_BASE_URL") and not vertex_or_login:
            settings["security"] = {"auth": {"selectedType": "gemini-api-key"}}
        files = {spec.workspace / ".gemini" / "settings.json": json.dumps(settings, indent=2),
                 spec.workspace / "GEMINI.md": instructions_file(spec.workspace / "GEMINI.md", spec.system_prompt)}
        model = ["--model", spec.model] if spec.model else []
        run_env = {**spec.mcp.env, "GEMINI_CLI_TRUST_WORKSPACE": "true", **spec.env}
        if spec.permissions in ASKING_MODES:  # headless mode denies what would ask; ACP asks its client
            return Invocation(argv=[*self.command(spec), "--acp", *model], env=run_env, cwd=spec.workspace,
                              files=files, stdin=gemini_acp.initialize(), keep_stdin=True)
        argv = [*self.command(spec), "--output-format", "stream-json", "--approval-mode", "yolo", *model]
        if spec.resume_id:
            argv += ["--resume", spec.resume_id]
        argv += ["--prompt", spec.prompt]
        return Invocation(argv=argv, env=run_env, cwd=spec.workspace, files=files)

    def parser(self) -> GeminiParser:
        return GeminiParser()

    def session_expired(self, message: str) -> bool:
        # ACP's ``session/load`` refused (``gemini_acp``): the session is gone for Gemini, start afresh
        return "could not be loaded" in message.lower() or super().session_expired(message)
