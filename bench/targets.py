"""The two gateways under test: how to launch each offline on a loopback port, and its CLI.

Both run with a fresh state folder, a shared-secret token, no chat channels, and every switch that
would make them reach beyond 127.0.0.1 turned off (OpenClaw: update checks, hosted model catalog,
Bonjour, channels, model prewarm, the skill hub).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench.procs import free_port

__all__ = ["ROOT", "OpenClawTarget", "RemoteClawTarget", "Target", "find_openclaw"]

ROOT = Path(__file__).resolve().parents[1]


def find_openclaw() -> tuple[Path, Path]:
    """(node binary, openclaw.mjs) as installed by ``scripts/install-openclaw``."""
    base = Path(os.environ.get("OPENCLAW_DIR") or ROOT / ".cache" / "openclaw")
    node = base / "node" / "node_modules" / ".bin" / "node"
    entry = base / "cli" / "node_modules" / "openclaw" / "openclaw.mjs"
    if not (node.exists() and entry.exists()):
        raise FileNotFoundError(f"openclaw is not installed under {base}: run scripts/install-openclaw")
    return node, entry


@dataclass
class Target:
    """One gateway flavour. Subclasses fill in the command lines and environment."""

    name: str
    state: Path
    token: str = field(default_factory=lambda: "bench-" + secrets.token_hex(12))
    port: int = field(default_factory=free_port)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    def server_argv(self) -> list[str]:
        raise NotImplementedError

    def cli_argv(self, method: str) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def cwd(self) -> Path:
        return ROOT

    def prepare(self) -> None:
        """Create the state folder (and config) before the first launch."""
        self.state.mkdir(parents=True, exist_ok=True)

    def version(self) -> str:
        return ""

    def launch(self, log: Path) -> subprocess.Popen[bytes]:
        out = log.open("ab")
        # A new session, so the whole tree (workers, brokers) can be stopped and measured together.
        return subprocess.Popen(self.server_argv(), cwd=self.cwd(), env=self.env(), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


@dataclass
class RemoteClawTarget(Target):
    """Our gateway, ``remoteclaw gateway run``, from a source tree (this repo by default)."""

    root: Path = ROOT
    python: str = sys.executable

    def cwd(self) -> Path:
        return self.root

    def server_argv(self) -> list[str]:
        return [self.python, "-m", "gateway.cli", "gateway", "run", "--port", str(self.port)]

    def cli_argv(self, method: str) -> list[str]:
        # The console script a user runs; fall back to the module when the venv has none.
        script = Path(self.python).parent / "remoteclaw"
        head = [str(script)] if script.exists() and self.root == ROOT else [self.python, "-m", "gateway.cli"]
        return [*head, "gateway", "call", method, "--url", self.url, "--token", self.token, "--json"]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
        # Measure an installed gateway, which has its bytecode cached (pip compiles it); the
        # benchmark warms the cache with one discarded launch first.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(REMOTECLAW_STATE_DIR=str(self.state), REMOTECLAW_GATEWAY_TOKEN=self.token)
        if self.root != ROOT:
            env["PYTHONPATH"] = str(self.root)
        return env

    def version(self) -> str:
        out = subprocess.run([self.python, "-c", "import gateway; print(gateway.__version__)"], cwd=self.root,
                             env=self.env(), capture_output=True, text=True, check=False)
        return out.stdout.strip()


OPENCLAW_OFFLINE_ENV = {
    "OPENCLAW_NO_AUTO_UPDATE": "1",  # no update checks or usage statistics
    "OPENCLAW_DISABLE_BONJOUR": "1",  # no LAN multicast
    "OPENCLAW_SKIP_CHANNELS": "1",  # no chat transports (we run none either)
    "OPENCLAW_NO_RESPAWN": "1",  # stay one supervised process tree
    "OPENCLAW_SKIP_GMAIL_WATCHER": "1",
    "OPENCLAW_SKIP_STARTUP_MODEL_PREWARM": "1",  # would call a model API
    "OPENCLAW_SKIP_BROWSER_CONTROL_SERVER": "1",  # would launch a browser
    # The skill hub is looked up in the background ~20 s after start: point it at a closed loopback port.
    "OPENCLAW_CLAWHUB_URL": "http://127.0.0.1:9",
    "CLAWHUB_DISABLE_TELEMETRY": "1",
}


@dataclass
class OpenClawTarget(Target):
    """The reference gateway from npm, ``openclaw gateway run``, with its own HOME."""

    def __post_init__(self) -> None:
        self.node, self.entry = find_openclaw()

    @property
    def home(self) -> Path:
        return self.state / "home"

    def prepare(self) -> None:
        config_dir = self.home / ".openclaw"
        config_dir.mkdir(parents=True, exist_ok=True)
        config = {
            "gateway": {"mode": "local", "port": self.port, "bind": "loopback",
                        "auth": {"mode": "token", "token": self.token}},
            "update": {"checkOnStart": False},
            "models": {"catalogRefresh": {"enabled": False}},
            "logging": {"file": str(self.state / "openclaw.log")},
        }
        (config_dir / "openclaw.json").write_text(json.dumps(config, indent=2))

    def server_argv(self) -> list[str]:
        return [str(self.node), str(self.entry), "gateway", "run", "--port", str(self.port), "--bind", "loopback",
                "--token", self.token, "--allow-unconfigured"]

    def cli_argv(self, method: str) -> list[str]:
        return [str(self.node), str(self.entry), "gateway", "call", method, "--url", self.url, "--token", self.token,
                "--json"]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
        env.update(OPENCLAW_OFFLINE_ENV, HOME=str(self.home))
        return env

    def version(self) -> str:
        out = subprocess.run([str(self.node), str(self.entry), "--version"], env=self.env(), capture_output=True,
                             text=True, check=False)
        return out.stdout.strip()
