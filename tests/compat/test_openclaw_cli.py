"""The real ``openclaw`` CLI (npm, pinned by scripts/install-openclaw) as a client of our gateway.

If these fail, an existing OpenClaw client cannot talk to remoteclaw. The CLI must be installed
(``scripts/install-openclaw``): without it the tests fail rather than skip, so CI cannot pass by
accident. Each CLI call is a cold Node process (~1.5-2.5 s), so the list of calls is kept short.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.frame_proxy import RecordingRelay
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.openclaw_schema import FrameLog
from tests.support.ws import RawClient

pytestmark = pytest.mark.openclaw_frames  # every frame received is checked against OpenClaw's schema

# Switches that keep the CLI on loopback and out of the real home (documented by OpenClaw).
OFFLINE_ENV = {"OPENCLAW_NO_AUTO_UPDATE": "1", "OPENCLAW_DISABLE_BONJOUR": "1",
               "OPENCLAW_CLAWHUB_URL": "http://127.0.0.1:9", "CLAWHUB_DISABLE_TELEMETRY": "1"}


def _install() -> tuple[Path, Path]:
    base = Path(os.environ.get("OPENCLAW_DIR") or ROOT / ".cache" / "openclaw")
    node = base / "node" / "node_modules" / ".bin" / "node"
    entry = base / "cli" / "node_modules" / "openclaw" / "openclaw.mjs"
    if not (node.exists() and entry.exists()):
        pytest.fail(f"the openclaw CLI is not installed under {base}: run scripts/install-openclaw")
    return node, entry


class OpenClawCli:
    """Runs ``openclaw`` with a private HOME, so it reads and writes no real config.

    With a ``relay`` (``tests.support.frame_proxy``), the CLI talks to the gateway through it, so every frame
    the gateway sends the real CLI is checked against OpenClaw's schema too (the ``openclaw_frames`` marker).
    """

    def __init__(self, home: Path, relay: RecordingRelay | None = None) -> None:
        self.node, self.entry = _install()
        self.home = home
        self.relay = relay
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
        self.env.update(OFFLINE_ENV, HOME=str(home))

    def run(self, *args: str, timeout: float = 60) -> tuple[int, Any, str]:
        """Exit code, stdout parsed as JSON (None when it is not JSON), stderr."""
        code, text, err = self.run_text(*args, timeout=timeout)
        try:
            out = json.loads(text)
        except ValueError:
            out = None
        return code, out, err

    def run_text(self, *args: str, timeout: float = 60) -> tuple[int, str, str]:
        """Exit code, stdout, stderr."""
        proc = subprocess.run([str(self.node), str(self.entry), *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def url_for(self, gw: GatewayProcess) -> str:
        return self.relay.url if self.relay is not None and self.relay.target == gw.url else gw.url

    def call(self, gw: GatewayProcess, method: str, *extra: str, token: str | None = None) -> tuple[int, Any, str]:
        secret = ["--token", token if token is not None else gw.token or ""] if "--password" not in extra else []
        return self.run("gateway", "call", method, "--url", self.url_for(gw), *secret, *extra, "--json")

    def create_device_identity(self) -> str:
        """Make the CLI's own Ed25519 device identity in its state dir; returns the device id.

        ``gateway call`` only loads an existing identity (it never creates one), and no CLI
        command creates one without also running a gateway or node host, so we call the
        package's own module for it. The bundle's file name and export alias vary by release,
        hence the lookup.
        """
        dist = self.entry.parent / "dist"
        for module in sorted(dist.glob("device-identity-*.mjs")):
            found = re.search(r"\bloadOrCreateDeviceIdentity as (\w+)\b", module.read_text())
            if found:
                break
        else:
            pytest.fail(f"no device-identity module exporting loadOrCreateDeviceIdentity in {dist}")
        script = f"const m = await import({json.dumps(module.as_uri())}); console.log(m.{found[1]}().deviceId);"
        proc = subprocess.run([str(self.node), "--input-type=module", "-e", script], env=self.env,
                              capture_output=True, text=True, timeout=60, check=True)
        return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def cli(gateway: GatewayProcess) -> Iterator[OpenClawCli]:
    with tempfile.TemporaryDirectory(prefix="openclaw-home-") as home, RecordingRelay(gateway.url) as relay:
        yield OpenClawCli(Path(home), relay)


def test_health(cli: OpenClawCli, gateway: GatewayProcess, openclaw_frames: FrameLog) -> None:
    code, out, err = cli.call(gateway, "health")
    assert code == 0, err
    assert out["ok"] is True
    assert isinstance(out["uptimeMs"], int)
    # What the gateway sent the CLI went through the relay: its hello-ok and answer are checked too.
    assert {"connect", "health"} <= {method for method, _frame in openclaw_frames.frames}


def test_status_is_this_gateway(cli: OpenClawCli, gateway: GatewayProcess) -> None:
    code, out, err = cli.call(gateway, "status")
    assert code == 0, err
    assert gateway.proc is not None
    assert out["pid"] == gateway.proc.pid
    assert out["listen"]["port"] == gateway.port


def test_method_with_params(cli: OpenClawCli, gateway: GatewayProcess) -> None:
    code, out, err = cli.call(gateway, "logs.tail", "--params", '{"limit": 2}')
    assert code == 0, err
    assert len(out["lines"]) == 2
    # The CLI's earlier connects are in the gateway's own log: the calls really reached it.
    assert all(isinstance(json.loads(line), dict) for line in out["lines"])


def test_bad_params_name_the_field(cli: OpenClawCli, gateway: GatewayProcess) -> None:
    code, out, _err = cli.call(gateway, "logs.tail", "--params", '{"limit": "lots"}')
    assert code != 0
    assert out["ok"] is False
    assert out["error"]["code"] == "INVALID_REQUEST"
    assert "limit" in out["error"]["message"]


def test_wrong_token_is_refused(cli: OpenClawCli, gateway: GatewayProcess) -> None:
    code, out, _err = cli.call(gateway, "health", token="not-the-token")
    assert code != 0
    assert out["ok"] is False
    assert out["error"]["code"] == "INVALID_REQUEST"
    assert out["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"


async def test_device_proof_is_accepted_and_recorded(cli: OpenClawCli, gateway: GatewayProcess,
                                                     admin: RawClient) -> None:
    # On a loopback URL with a shared token the CLI leaves its device proof out. Given a password
    # (our gateway takes the token there too) and an identity in its state dir, it signs the v3
    # payload with its Ed25519 key: the path every remote OpenClaw client takes.
    device_id = cli.create_device_identity()
    code, out, err = cli.call(gateway, "health", "--password", gateway.token or "")
    assert code == 0, err
    assert out["ok"] is True
    devices = await admin.call("device.pair.list")
    paired = [d for d in devices["paired"] if device_id in d.values()]
    assert paired, devices  # loopback devices are approved on first sight


# -- the CLI's own commands, with their defaults (issue #29) --------------------------------------------------


def _cmd(cli: OpenClawCli, gw: GatewayProcess, *args: str, json_out: bool = True) -> tuple[int, Any, str]:
    """``openclaw <args> --url … --token …`` (and ``--json``): exit code, parsed stdout, stderr."""
    extra = ["--json"] if json_out else []
    return cli.run(*args, "--url", cli.url_for(gw), "--token", gw.token or "", *extra)


READ_METHODS = ["health", "status", "system-presence", "logs.tail", "config.get", "config.schema", "sessions.list",
                "agents.list", "cron.status", "cron.list", "cron.runs", "node.list", "channels.status",
                "plugins.list", "tts.status", "device.pair.list", "node.pair.list"]


@pytest.mark.parametrize("method", READ_METHODS)
def test_gateway_call_read_methods(cli: OpenClawCli, gateway: GatewayProcess, method: str) -> None:
    code, out, err = cli.call(gateway, method)
    assert code == 0, err
    assert out is not None


def test_logs_command(cli: OpenClawCli, gateway: GatewayProcess) -> None:
    """``openclaw logs`` sends ``logs.tail {limit, maxBytes}`` and prints the lines it gets."""
    code, text, err = cli.run_text("logs", "--limit", "20", "--plain", "--url", cli.url_for(gateway),
                                   "--token", gateway.token or "")
    assert code == 0, err
    assert "client connected" in text or "gateway started" in text, text[-2000:]
    code, text, err = cli.run_text("logs", "--json", "--url", cli.url_for(gateway), "--token", gateway.token or "")
    assert code == 0, err
    assert any('"gateway started"' in line or '"client connected"' in line for line in text.splitlines()), text[-2000:]


def test_cron_commands_with_their_defaults(cli: OpenClawCli, gateway: GatewayProcess) -> None:
    """add (no delivery flags: announce to the last chat), list, edit, run, runs, rm."""
    code, added, err = _cmd(cli, gateway, "cron", "add", "--name", "cli digest", "--every", "1h",
                            "--message", "summarise the day")
    assert code == 0, err
    job = added.get("job", added) if isinstance(added, dict) else None
    assert job and job["name"] == "cli digest", added
    assert job["delivery"] == {"mode": "announce", "channel": "last"}
    code, listed, err = _cmd(cli, gateway, "cron", "list")
    assert code == 0, err
    assert job["id"] in {j["id"] for j in listed["jobs"]}, listed
    code, _edited, err = _cmd(cli, gateway, "cron", "edit", job["id"], "--name", "cli digest (renamed)")
    assert code == 0, err
    code, _ran, err = _cmd(cli, gateway, "cron", "run", job["id"])
    assert code == 0, err
    code, runs, err = _cmd(cli, gateway, "cron", "runs", "--id", job["id"])
    assert code == 0, err
    assert all(entry["jobId"] == job["id"] for entry in runs["entries"]), runs
    code, _removed, err = _cmd(cli, gateway, "cron", "rm", job["id"])
    assert code == 0, err
    code, listed, err = _cmd(cli, gateway, "cron", "list", "--all")
    assert code == 0, err
    assert job["id"] not in {j["id"] for j in listed["jobs"]}


@pytest.mark.parametrize("args", [("nodes", "list"), ("nodes", "pending"), ("devices", "list")])
def test_nodes_and_devices_commands(cli: OpenClawCli, gateway: GatewayProcess, args: tuple[str, ...]) -> None:
    code, out, err = _cmd(cli, gateway, *args)
    assert code == 0, err
    assert out is not None
