"""What this node lends the gateway for agent turns: decided by the node's owner, kept in ``agents.json``.

The gateway owner places an agent on the node (``agents.list[].node``); the node's owner decides which agent
CLIs may run here (``clis``: runtime -> command) and in which folders (``folders``), whether the runs use the
gateway's model credentials through its model gateway (``credentials: gateway``, the default) or this machine's
own CLI logins (``own``), and whether they are sandboxed (``sandbox: bwrap``, the default, or ``off``). Nobody on
the gateway side can change it.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodes.state import read_json, write_private

__all__ = ["KEYS", "AgentHostSettings"]

FILE = "agents.json"
KEYS = ("enabled", "clis", "folders", "credentials", "sandbox")
CREDENTIALS = ("gateway", "own")
SANDBOX = ("bwrap", "off")


@dataclass(slots=True)
class AgentHostSettings:
    enabled: bool = False
    """Offer ``agent.run`` at connect (``remoteclaw node run --agents`` offers it for one run)."""
    clis: dict[str, list[str]] = field(default_factory=dict)
    """Runtime name (claude, codex, gemini, opencode) -> the command that starts it here."""
    folders: list[str] = field(default_factory=list)
    """Absolute folders an agent's workspace may be in (besides the node's own per-session folders)."""
    credentials: str = "gateway"
    sandbox: str = "bwrap"

    @classmethod
    def load(cls, state: Path) -> AgentHostSettings:
        data = read_json(state / FILE)
        out = cls()
        for key in KEYS:
            if key in data:
                out.set(key, data[key])
        return out

    def save(self, state: Path) -> None:
        write_private(state / FILE, {"enabled": self.enabled, "clis": self.clis, "folders": self.folders,
                                     "credentials": self.credentials, "sandbox": self.sandbox})

    @classmethod
    def update(cls, state: Path, key: str, value: Any) -> AgentHostSettings:
        settings = cls.load(state)
        settings.set(key, value)
        settings.save(state)
        return settings

    def set(self, key: str, value: Any) -> None:
        """Set one key from its JSON or command-line form; ``ValueError`` names the key and what it takes."""
        if key == "enabled":
            if isinstance(value, str) and value.lower() in ("true", "false"):
                value = value.lower() == "true"
            if not isinstance(value, bool):
                raise ValueError("enabled takes true or false")
            self.enabled = value
        elif key == "clis":
            self.clis = _clis(value)
        elif key == "folders":
            if isinstance(value, str):
                value = [v for v in value.split(os.pathsep if os.pathsep in value else ",") if v.strip()]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError("folders takes a list of absolute folders (comma-separated on the command line)")
            folders = [str(Path(v.strip()).expanduser()) for v in value]
            bad = [f for f in folders if not os.path.isabs(f)]
            if bad:
                raise ValueError(f"folders must be absolute paths: {', '.join(bad)}")
            self.folders = folders
        elif key == "credentials":
            if value not in CREDENTIALS:
                raise ValueError("credentials takes gateway (the gateway's model gateway holds the key) or own "
                                 "(this machine's CLI logins)")
            self.credentials = value
        elif key == "sandbox":
            if value not in SANDBOX:
                raise ValueError("sandbox takes bwrap or off")
            self.sandbox = value
        else:
            raise ValueError(f"unknown key {key!r}; keys: {', '.join(KEYS)}")

    def resolved(self) -> dict[str, list[str]]:
        """The lent CLIs whose program is found here, with the program as an absolute path."""
        out = {}
        for runtime, command in self.clis.items():
            exe = command[0] if os.sep in command[0] else shutil.which(command[0])
            if exe and os.access(exe, os.X_OK):
                out[runtime] = [os.path.realpath(exe) if os.sep not in command[0] else exe, *command[1:]]
        return out

    def describe(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "clis": self.clis, "found": self.resolved(), "folders": self.folders,
                "credentials": self.credentials, "sandbox": self.sandbox}


def _clis(value: Any) -> dict[str, list[str]]:
    """``{"claude": "claude"}``, ``{"claude": ["python3", "cli.py"]}`` or ``claude=claude,codex=/opt/codex``."""
    if isinstance(value, str):
        pairs = [p for p in value.split(",") if p.strip()]
        value = {}
        for pair in pairs:
            name, sep, command = pair.partition("=")
            value[name.strip()] = command.strip() if sep else name.strip()
    if not isinstance(value, dict):
        raise ValueError("clis takes runtime=command pairs, e.g. claude=claude,codex=/opt/codex/bin/codex")
    out: dict[str, list[str]] = {}
    for name, command in value.items():
        words = shlex.split(command) if isinstance(command, str) else command
        if not isinstance(name, str) or not name or not isinstance(words, list) or not words \
                or not all(isinstance(w, str) and w for w in words):
            raise ValueError(f"clis: {name!r} needs a command (a program, and its leading arguments)")
        out[name] = words
    return out
