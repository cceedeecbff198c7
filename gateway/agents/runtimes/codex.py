"""OpenAI Codex (``codex exec --json``).

Codex reads one config file, ``$CODEX_HOME/config.toml``. Each run gets its own CODEX_HOME: the
user's config (model, provider) is read, never written; their MCP servers are dropped; ours is
added with ``required = true`` (Codex waits for it) and tool approval off; update checks,
analytics and the plugin/app features that reach for public hosts are switched off. With the model
gateway (``spec.fronted``) the provider points at the gateway and takes the run's stand-in, and ``auth.json`` (an
API key or the ChatGPT login) is never copied: the gateway holds it. Without it, ``auth.json`` is copied so a
logged-in user stays logged in. Sessions (for ``exec resume``) live in a directory
that outlives the run (``spec.state_dir``), linked into the per-run CODEX_HOME.

With a permission mode that asks (``ask``, ``ask-dangerous``) the runtime drives ``codex app-server`` instead of
``codex exec`` (same CODEX_HOME, same sessions): see ``codex_app``.

Codex hands MCP servers only a short whitelist of variables (HOME, PATH, ...), so the
``REMOTECLAW_*`` context goes in the server's ``env`` table.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

from gateway.agents.runtimes import toml
from gateway.agents.runtimes.base import (
    ASKING_MODES,
    Event,
    Invocation,
    Parser,
    RunSpec,
    Runtime,
    Stdin,
    instructions_file,
)
from gateway.agents.runtimes.codex_app import AppServerClient, initialize, mcp_call_events

__all__ = ["CodexParser", "CodexRuntime"]


def _base_home(spec: RunSpec) -> Path:
    """The user's CODEX_HOME, read as the model gateway reads it (``gateway.credentials.clis``): below the agent's
    HOME when its env names one."""
    home = Path(spec.env.get("HOME") or Path.home())
    return Path(spec.env.get("CODEX_HOME") or os.environ.get("CODEX_HOME") or home / ".codex").expanduser()


def _user_config(home: Path) -> dict[str, Any]:
    try:
        return tomllib.loads((home / "config.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}


class CodexParser(Parser):
    """``codex exec --json``'s events; or, once ``talk`` is called (the app-server), the JSON-RPC conversation."""

    def __init__(self) -> None:
        super().__init__()
        self.usage: dict[str, int] = {}
        self.failed: str | None = None
        self.app: AppServerClient | None = None

    def talk(self, feed: Stdin, spec: RunSpec) -> None:
        self.app = AppServerClient(feed, spec)

    def finish(self) -> list[Event]:
        if self.app is not None:
            self.app.finish()
        return []

    def feed(self, obj: dict[str, Any]) -> list[Event]:
        if self.app is not None:
            events = self.app.feed_obj(obj)
            self.session_id = self.app.thread_id or self.session_id
            return events
        kind = obj.get("type")
        if kind == "thread.started":
            self.session_id = obj.get("thread_id") or self.session_id
            return []
        if kind in ("item.started", "item.completed"):
            return self._item(obj.get("item") or {}, completed=kind == "item.completed")
        if kind == "turn.completed":
            u = obj.get("usage") or {}
            cached = int(u.get("cached_input_tokens") or 0)
            self.usage = {"input": int(u.get("input_tokens") or 0) - cached, "output": int(u.get("output_tokens") or 0),
                          "cacheRead": cached, "cacheWrite": 0}
            return [Event("done", session_id=self.session_id, usage=self.usage)]
        if kind == "turn.failed":
            msg = ((obj.get("error") or {}).get("message")) or "turn failed"
            return [Event("error", text=msg), Event("done", session_id=self.session_id, usage=self.usage,
                                                    is_error=True)]
        if kind == "error":
            return [Event("error", text=str(obj.get("message") or "error"))]
        return []

    def _item(self, item: dict[str, Any], *, completed: bool) -> list[Event]:
        itype, iid = item.get("type"), item.get("id")
        if itype == "agent_message" and completed and item.get("text"):
            return [Event("text", text=item["text"])]
        if itype == "reasoning" and completed and item.get("text"):
            return [Event("thinking", text=item["text"])]
        if itype == "mcp_tool_call":
            return mcp_call_events(item, completed=completed)
        if itype == "command_execution":
            if not completed:
                return [Event("tool_use", tool_id=iid, tool_name="shell", tool_input={"command": item.get("command")})]
            return [Event("tool_result", tool_id=iid, tool_name="shell", tool_output=item.get("aggregated_output"),
                          is_error=item.get("exit_code") not in (0, None))]
        if itype == "error" and completed:
            return [Event("error", text=str(item.get("message") or "error"))]
        return []


class CodexRuntime(Runtime):
    name = "codex"
    executable = "codex"
    credential_env = ("OPENAI_*", "CODEX_*", "AZURE_OPENAI_*")
    # No login to show: without the model gateway, $CODEX_HOME/auth.json is copied into the run's own CODEX_HOME
    # (``build``); with it, the gateway holds the file and the run holds a stand-in.

    def config(self, spec: RunSpec) -> dict[str, Any]:
        cfg = _user_config(_base_home(spec))
        cfg.pop("mcp_servers", None)
        if spec.model:
            cfg["model"] = spec.model
        cfg["check_for_update_on_startup"] = False
        if spec.sandboxed:  # Codex's own bubblewrap sandbox cannot start inside ours, which confines it already
            cfg["sandbox_mode"] = "danger-full-access"
        cfg["analytics"] = {**(cfg.get("analytics") or {}), "enabled": False}
        cfg["features"] = {**(cfg.get("features") or {}), "plugins": False, "remote_plugin": False, "apps": False}
        if spec.fronted is not None:  # the model gateway: each provider's base_url points there
            providers = cfg.setdefault("model_providers", {})
            for name, url in spec.fronted.base_urls.items():
                if name == "openai":  # the built-in provider cannot be redefined: one of ours in its place
                    cfg["model_provider"] = name = "remoteclaw"
                    providers[name] = {"name": "OpenAI (remoteclaw)", "wire_api": "responses"}
                # Codex's own login (auth.json: a key, or the ChatGPT login) stays with the gateway: the provider
                # takes the run's stand-in from its env_key instead (``gateway.credentials.clis`` names it)
                entry = {**(providers.get(name) or {}), "base_url": url}
                entry.pop("requires_openai_auth", None)
                entry.setdefault("env_key", "OPENAI_API_KEY")
                providers[name] = entry
        cfg["mcp_servers"] = {spec.mcp.name: {
            "command": spec.mcp.command, "args": list(spec.mcp.args), "env": dict(spec.mcp.env),
            "required": True, "default_tools_approval_mode": "approve", "startup_timeout_sec": 30,
        }}
        return cfg

    def build(self, spec: RunSpec) -> Invocation:
        home = spec.workspace / ".remoteclaw" / "codex-home"
        files = {home / "config.toml": toml.dumps(self.config(spec)),
                 spec.workspace / "AGENTS.md": instructions_file(spec.workspace / "AGENTS.md", spec.system_prompt)}
        base = _base_home(spec)
        home.mkdir(parents=True, exist_ok=True)
        if (base / "auth.json").is_file() and spec.fronted is None:  # fronted: the gateway holds the login
            shutil.copyfile(base / "auth.json", home / "auth.json")
        if spec.state_dir is not None:
            sessions = spec.state_dir / "codex-sessions"
            sessions.mkdir(parents=True, exist_ok=True)
            link = home / "sessions"
            if not link.exists():
                link.symlink_to(sessions, target_is_directory=True)
        env = {**spec.env, "CODEX_HOME": str(home)}
        if spec.permissions in ASKING_MODES:  # the app-server asks its client; ``exec`` never asks
            return Invocation(argv=[*self.command(spec), "app-server"], env=env, cwd=spec.workspace, files=files,
                              stdin=initialize(), keep_stdin=True)
        argv = [*self.command(spec), "exec"]
        opts = ["--json", "--skip-git-repo-check"]
        if spec.resume_id:
            argv += ["resume", *opts, spec.resume_id, "-"]
        else:
            argv += [*opts, "-"]
        return Invocation(argv=argv, env=env, cwd=spec.workspace, files=files, stdin=spec.prompt.encode())

    def parser(self) -> CodexParser:
        return CodexParser()
