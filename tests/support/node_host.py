"""Node hosts as real processes: ours (``python -m nodes run``) and OpenClaw's (``openclaw node run``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.targets import OPENCLAW_OFFLINE_ENV
from tests.support.gateway_proc import ROOT

__all__ = ["NodeHostProcess", "OpenClawNodeHost", "openclaw_paths"]


class NodeHostProcess:
    """``python -m nodes run`` with its own state dir; ``token`` None starts it without the gateway token."""

    def __init__(self, state: Path, port: int, *, token: str | None, name: str = "testbox",
                 browser: bool = False) -> None:
        self.state = state
        self.browser = browser
        self.extra_env: dict[str, str] = {}
        self.port = port
        self.token = token
        self.name = name
        self.log = state.parent / f"{state.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
        env["REMOTECLAW_NODE_STATE_DIR"] = str(self.state)
        if self.token:
            env["REMOTECLAW_GATEWAY_TOKEN"] = self.token
        env.update(self.extra_env)
        return env

    def start(self) -> NodeHostProcess:
        self.state.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nodes", "run", "--port", str(self.port), "--display-name", self.name,
             *([] if self.browser else ["--no-browser"])],
            cwd=ROOT, env=self.env(), stdout=self.log.open("ab"), stderr=subprocess.STDOUT)
        return self

    def approvals(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``remoteclaw-node approvals ...`` against this node's state dir."""
        return subprocess.run([sys.executable, "-m", "nodes", "approvals", *args], cwd=ROOT, env=self.env(),
                              capture_output=True, text=True, timeout=30, check=False)

    def browser_settings(self, **settings: Any) -> None:
        """Write the node's ``browser.json`` (what its owner would set with ``remoteclaw node browser set``)."""
        self.state.mkdir(parents=True, exist_ok=True)
        (self.state / "browser.json").write_text(json.dumps(settings))

    def output(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def __enter__(self) -> NodeHostProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def openclaw_paths() -> tuple[Path, Path]:
    """(node binary, openclaw.mjs) as ``scripts/install-openclaw`` installs them; fails (never skips) without."""
    from bench.targets import find_openclaw

    try:
        return find_openclaw()
    except FileNotFoundError as exc:
        raise AssertionError(str(exc)) from None


class OpenClawNodeHost:
    """OpenClaw's headless node host, ``openclaw node run``, with a private HOME (its identity lives there)."""

    def __init__(self, home: Path, port: int, token: str, *, name: str = "ocnode", browser: bool = False) -> None:
        self.node, self.entry = openclaw_paths()
        self.browser = browser
        self.home = home
        self.port = port
        self.token = token
        self.name = name
        self.log = home.parent / f"{home.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, Any]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
        env.update(OPENCLAW_OFFLINE_ENV, HOME=str(self.home), OPENCLAW_GATEWAY_TOKEN=self.token,
                   PATH=f"{self.node.parent}:{env.get('PATH', '')}")
        if self.browser:
            env.pop("OPENCLAW_SKIP_BROWSER_CONTROL_SERVER")
        return env

    def start(self) -> OpenClawNodeHost:
        self.home.mkdir(parents=True, exist_ok=True)
        if self.browser:  # its browser control, on Debian's Chromium, allowed to open loopback test pages
            config = {"browser": {"executablePath": "/usr/bin/chromium", "headless": True, "noSandbox": True,
                                  "ssrfPolicy": {"dangerouslyAllowPrivateNetwork": True}}}
            (self.home / ".openclaw").mkdir(exist_ok=True)
            (self.home / ".openclaw" / "openclaw.json").write_text(json.dumps(config))
        self.proc = subprocess.Popen(
            [str(self.node), str(self.entry), "node", "run", "--host", "127.0.0.1", "--port", str(self.port),
             "--no-tls", "--display-name", self.name],
            env=self.env(), stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def output(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)

    def __enter__(self) -> OpenClawNodeHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
