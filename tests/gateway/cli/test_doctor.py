"""``remoteclaw doctor`` run as a user would, against state dirs with something broken: each problem named
with its fix and a non-zero exit; a healthy one exits 0. Telegram's ``getMe`` goes to the loopback fake.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import FAKE_CLI
from tests.support.fake_telegram import FakeTelegram, module_fake
from tests.support.gateway_proc import ROOT, free_port

pytestmark = pytest.mark.timeout(120)


fake = module_fake()


def doctor(state: Path, config: dict[str, Any] | str | None, *args: str,
           env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    if config is not None:
        (state / "remoteclaw.json").write_text(config if isinstance(config, str) else json.dumps(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    env["REMOTECLAW_STATE_DIR"] = str(state)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "gateway.cli", "doctor", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)


def healthy(fake: FakeTelegram, **telegram: Any) -> dict[str, Any]:
    return {"gateway": {"port": free_port()},
            "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
            "channels": {"telegram": {**fake.channel_config(), **telegram}}}


def test_a_healthy_installation_exits_zero(tmp_path: Path, fake: FakeTelegram) -> None:
    out = doctor(tmp_path / "state", healthy(fake), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    by_name = {c["name"]: c for c in report["checks"]}
    assert report["ok"] is True
    assert by_name["telegram (default)"]["status"] == "ok" and "@" in by_name["telegram (default)"]["detail"]
    assert by_name["config"]["status"] == "ok" and by_name["gateway port"]["status"] == "ok"
    assert fake.token not in out.stdout  # never a secret


def test_a_broken_config_is_named_with_its_file(tmp_path: Path) -> None:
    out = doctor(tmp_path / "state", "{agents: [oops")
    assert out.returncode == 1
    assert "✗ config:" in out.stdout and "remoteclaw.json" in out.stdout and "not valid JSON5" in out.stdout
    invalid = doctor(tmp_path / "state2", {"agents": {"maxConcurrentRuns": "many"}})
    assert invalid.returncode == 1 and "/agents/maxConcurrentRuns" in invalid.stdout


def test_a_refused_telegram_token_is_named_with_its_fix(tmp_path: Path, fake: FakeTelegram) -> None:
    out = doctor(tmp_path / "state", healthy(fake, botToken="123456:not-the-right-token"))
    assert out.returncode == 1
    assert "✗ telegram (default): the bot token was refused (401)" in out.stdout
    assert "@BotFather" in out.stdout and "not-the-right-token" not in out.stdout


def test_a_missing_agent_cli_is_named_with_its_install_command(tmp_path: Path, fake: FakeTelegram) -> None:
    config = healthy(fake)
    config["agents"]["list"].append({"id": "coder", "runtime": "codex", "command": ["/nonexistent/codex"]})
    out = doctor(tmp_path / "state", config)
    assert out.returncode == 1
    assert "✗ agent coder (codex): /nonexistent/codex is not on PATH" in out.stdout
    assert "npm install -g @openai/codex" in out.stdout
    assert "1 problem(s)" in out.stdout  # the rest is fine


def test_it_says_whether_the_control_ui_is_installed_and_how_to_install_it(tmp_path: Path) -> None:
    base = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    absent = {**base, "gateway": {"port": free_port(), "controlUi": {"root": str(tmp_path / "nowhere")}}}
    out = json.loads(doctor(tmp_path / "a", absent, "--json").stdout)
    check = {c["name"]: c for c in out["checks"]}["control ui (OpenClaw's panel, optional)"]
    assert check["status"] == "warn" and "holds no index.html" in check["detail"]
    assert "./scripts/install-openclaw (needs npm" in check["fix"]  # the command, as typed in this clone
    ui = tmp_path / "control-ui"
    ui.mkdir()
    (ui / "index.html").write_text("<html></html>")
    there = {**base, "gateway": {"port": free_port(), "controlUi": {"root": str(ui)}}}
    out = json.loads(doctor(tmp_path / "b", there, "--json").stdout)
    check = {c["name"]: c for c in out["checks"]}["control ui (OpenClaw's panel, optional)"]
    assert check["status"] == "ok" and check["detail"] == f"installed: {ui}, served at /openclaw/"
    off = {**base, "gateway": {"port": free_port(), "controlUi": {"enabled": False}}}
    out = json.loads(doctor(tmp_path / "c", off, "--json").stdout)
    assert {c["name"]: c for c in out["checks"]}["control ui (OpenClaw's panel, optional)"]["status"] == "off"


def test_it_reports_the_sandbox_and_what_would_get_past_it(tmp_path: Path, fake: FakeTelegram) -> None:
    """bubblewrap found and usable; then missing (with the fix); then a password-less Redis on loopback that
    runs on the machine's network could reach (docs/sandbox.md)."""
    ok = json.loads(doctor(tmp_path / "ok", healthy(fake), "--json").stdout)
    sandbox = {c["name"]: c for c in ok["checks"]}["sandbox"]
    assert sandbox["status"] == "ok" and "bubblewrap" in sandbox["detail"]
    no_bwrap = {"REMOTECLAW_BWRAP": str(tmp_path / "no-bwrap")}
    missing = doctor(tmp_path / "missing", healthy(fake), "--json", env_extra=no_bwrap)
    assert missing.returncode == 1
    row = {c["name"]: c for c in json.loads(missing.stdout)["checks"]}["sandbox"]
    assert row["status"] == "fail" and "refused" in row["detail"] and "bubblewrap" in row["fix"]
    nobody = {**healthy(fake), "agents": {**healthy(fake)["agents"],
                                          "defaults": {"sandbox": {"user": "rc-no-such-user"}}}}
    row = {c["name"]: c for c in json.loads(doctor(tmp_path / "nobody", nobody, "--json",
                                                   env_extra=no_bwrap).stdout)["checks"]}["sandbox"]
    assert row["status"] == "fail" and "rc-no-such-user" in row["detail"] and "not a user" in row["detail"]
    open_redis = {**healthy(fake), "gateway": {"port": free_port(), "redisUrl": "redis://127.0.0.1:6379/0"}}
    exposed = doctor(tmp_path / "redis", open_redis, "--json")
    row = {c["name"]: c for c in json.loads(exposed.stdout)["checks"]}["sandbox network"]
    assert exposed.returncode == 1 and "Redis at 127.0.0.1:6379" in row["detail"] and "requirepass" in row["fix"]
    walled = {**open_redis, "agents": {**open_redis["agents"], "defaults": {"sandbox": {"network": "none"}}}}
    names = {c["name"] for c in json.loads(doctor(tmp_path / "walled", walled, "--json").stdout)["checks"]}
    assert "sandbox network" not in names
