"""OpenCode (``opencode run --format json``, the prompt on stdin).

MCP goes in a per-run ``opencode.json`` in the workspace (a ``local`` server with its own
``environment``); the system prompt is a workspace file listed in ``instructions``. Auto-update
and sharing are off. OpenCode prints no final summary line, so the parser adds up the steps'
token counts and reports ``done`` at end of stream.

The prompt goes on stdin, never argv: ``opencode run`` re-quotes every argument that contains a
space (wrapping it in ``"`` and escaping inner quotes), so an argv prompt reaches the model altered.
OpenCode names our tools ``remoteclaw_<tool>``; events carry ``mcp__remoteclaw__<tool>`` like the
other CLIs.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.agents.runtimes.base import Event, Fronted, Invocation, Parser, RunSpec, Runtime, mcp_server_name

__all__ = ["OpenCodeParser", "OpenCodeRuntime", "fronted_config"]

_OUR_PREFIX = f"{mcp_server_name}_"


def _tool_name(name: Any) -> Any:
    if isinstance(name, str) and name.startswith(_OUR_PREFIX):
        return f"mcp__{mcp_server_name}__{name[len(_OUR_PREFIX):]}"
    return name


class OpenCodeParser(Parser):
    def __init__(self) -> None:
        super().__init__()
        self.usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        self.cost: float | None = None  # step_finish parts carry what each step cost
        self.failed = False
        self.steps = 0

    def feed(self, obj: dict[str, Any]) -> list[Event]:
        self.session_id = obj.get("sessionID") or self.session_id
        kind, part = obj.get("type"), obj.get("part") or {}
        if kind == "text" and part.get("text"):
            return [Event("text", text=part["text"])]
        if kind == "reasoning" and part.get("text"):
            return [Event("thinking", text=part["text"])]
        if kind == "tool_use":
            state = part.get("state") or {}
            cid, name = part.get("callID") or part.get("id"), _tool_name(part.get("tool"))
            out = [Event("tool_use", tool_id=cid, tool_name=name, tool_input=state.get("input"))]
            if state.get("status") in ("completed", "error"):
                is_err = state.get("status") == "error"
                out.append(Event("tool_result", tool_id=cid, tool_name=name, is_error=is_err,
                                 tool_output=state.get("error") if is_err else state.get("output")))
            return out
        if kind == "step_finish":
            self.steps += 1
            tokens = part.get("tokens") or {}
            cache = tokens.get("cache") or {}
            self.usage["input"] += int(tokens.get("input") or 0)
            self.usage["output"] += int(tokens.get("output") or 0)
            self.usage["cacheRead"] += int(cache.get("read") or 0)
            self.usage["cacheWrite"] += int(cache.get("write") or 0)
            if isinstance(part.get("cost"), int | float):
                self.cost = (self.cost or 0.0) + float(part["cost"])
            return []
        if kind == "error":
            self.failed = True
            err = obj.get("error") or {}
            msg = (err.get("data") or {}).get("message") or err.get("message") or err.get("name") or "error"
            return [Event("error", text=str(msg))]
        return []

    def finish(self) -> list[Event]:
        if self.steps == 0 and not self.failed:
            return []
        return [Event("done", session_id=self.session_id, usage=dict(self.usage), is_error=self.failed,
                      cost_usd=self.cost)]


def fronted_config(fronted: Fronted) -> dict[str, Any]:
    """The user's providers (their config file is hidden from the run) with each ``baseURL`` at the model
    gateway and the stand-in as the key (``gateway.credentials``)."""
    out = dict(fronted.config)
    providers = {}
    for name, entry in (fronted.config.get("provider") or {}).items():
        url = fronted.base_urls.get(name)
        opts = {**(entry.get("options") or {}), **({"baseURL": url, "apiKey": fronted.key} if url else {})}
        providers[name] = {**entry, "options": opts}
    out["provider"] = providers
    return out


class OpenCodeRuntime(Runtime):
    name = "opencode"
    executable = "opencode"
    credential_env = ("*_API_KEY", "OPENCODE_*")  # OpenCode talks to any provider, each with its own key
    logins = (".local/share/opencode", ".config/opencode")
    credentials = (".local/share/opencode/auth.json",)
    settings = (".config/opencode",)  # its providers and models are configured there

    def build(self, spec: RunSpec) -> Invocation:
        config = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "instructions": [".remoteclaw/INSTRUCTIONS.md"],
            "mcp": {spec.mcp.name: {"type": "local", "command": [spec.mcp.command, *spec.mcp.args],
                                    "environment": dict(spec.mcp.env), "enabled": True}},
        }
        if spec.fronted is not None:
            config.update(fronted_config(spec.fronted))
        files = {spec.workspace / "opencode.json": json.dumps(config, indent=2),
                 spec.workspace / ".remoteclaw" / "INSTRUCTIONS.md": spec.system_prompt + "\n"}
        argv = [*self.command(spec), "run", "--format", "json"]
        if spec.model:
            argv += ["--model", spec.model]
        if spec.resume_id:
            argv += ["--session", spec.resume_id]
        # OpenCode takes its project directory from $PWD, not the real cwd: an inherited PWD (the
        # gateway's) would make it load that folder's config and snapshot it instead of the workspace.
        env = {**spec.mcp.env, **spec.env, "OPENCODE_DISABLE_AUTOUPDATE": "true", "PWD": str(spec.workspace)}
        return Invocation(argv=argv, env=env, cwd=spec.workspace, files=files, stdin=spec.prompt.encode())

    def parser(self) -> OpenCodeParser:
        return OpenCodeParser()
