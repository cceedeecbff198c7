"""``remoteclaw setup``, non-interactive and answered on standard input: it edits the config (keeping what it
does not ask about), validates before writing, and the gateway starts with the result and reaches Telegram.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import json5
import pytest

from tests.support.fake_telegram import FakeTelegram, module_fake
from tests.support.gateway_proc import ROOT, GatewayProcess, free_port

pytestmark = pytest.mark.timeout(120)


fake = module_fake()


def setup(state: Path, *args: str, answers: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    env["REMOTECLAW_STATE_DIR"] = str(state)
    return subprocess.run([sys.executable, "-m", "gateway.cli", "setup", *args], cwd=ROOT, env=env, input=answers,
                          capture_output=True, text=True, timeout=60, check=False)


def config(state: Path) -> dict[str, Any]:
    return dict(json5.loads((state / "remoteclaw.json").read_text()))


async def test_non_interactive_setup_edits_the_config_and_the_gateway_starts_with_it(
        tmp_path: Path, fake: FakeTelegram) -> None:
    state = tmp_path / "state"
    state.mkdir()
    existing = {"gateway": {"port": free_port()}, "logging": {"level": "debug"},
                "channels": {"telegram": {"apiBaseUrl": fake.base_url, "fileBaseUrl": fake.file_base_url,
                                          "pollTimeoutSeconds": 1}}}
    (state / "remoteclaw.json").write_text(json.dumps(existing))
    out = setup(state, "--non-interactive", "--agent", "codex", "--telegram-token", fake.token,
                "--telegram-owner", "4242")
    assert out.returncode == 0, out.stderr
    written = config(state)
    assert written["agents"]["list"][0] == {"id": "main", "runtime": "codex"}
    assert written["channels"]["telegram"]["botToken"] == fake.token
    assert written["channels"]["telegram"]["apiBaseUrl"] == fake.base_url  # kept: not asked about
    assert written["channels"]["ownerAllowFrom"] == ["telegram:4242"] and written["logging"]["level"] == "debug"
    assert (state / "remoteclaw.json.bak").exists() and (state / "remoteclaw.json").stat().st_mode & 0o077 == 0
    # What to do next, as commands that work from this clone (no `remoteclaw` on PATH assumed).
    assert "next: start the gateway with ./scripts/gateway" in out.stdout, out.stdout
    assert ".venv/bin/remoteclaw doctor" in out.stdout or "remoteclaw doctor" in out.stdout
    with GatewayProcess(state, token="setup-test-token", port=existing["gateway"]["port"]) as gw:
        await fake.wait_call("getMe", timeout=20)  # the Telegram channel came up with the token setup wrote
        again = setup(state, "--non-interactive", "--agent", "codex")
        assert again.returncode == 0, again.stderr
        # A gateway already runs on this state dir: it is not to be started again; it reads the file itself.
        assert "next:" not in again.stdout and "scripts/gateway" not in again.stdout, again.stdout
        assert f"the gateway running at http://127.0.0.1:{gw.port}/ applies the new config by itself" in again.stdout


def test_answers_on_standard_input_and_enter_keeps_the_current_value(tmp_path: Path, fake: FakeTelegram) -> None:
    state = tmp_path / "state"
    first = setup(state, "--non-interactive", "--agent", "codex", "--telegram-token", "111:first",
                  "--telegram-owner", "1")
    assert first.returncode == 0, first.stderr
    # agent: claude; Telegram: yes; token: Enter (keep); owner: 777; Discord: no
    out = setup(state, answers="claude\ny\n\n777\nn\n")
    assert out.returncode == 0, out.stderr
    written = config(state)
    assert written["agents"]["list"][0]["runtime"] == "claude"
    assert written["channels"]["telegram"]["botToken"] == "111:first"
    assert written["channels"]["ownerAllowFrom"] == ["telegram:777"]
    assert "discord" not in written["channels"]


def test_a_wrong_answer_writes_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    out = setup(state, "--non-interactive", "--telegram-token", "1:x", "--telegram-owner", "@ada")
    assert out.returncode == 1 and "must be a number" in out.stderr
    assert not (state / "remoteclaw.json").exists()
    broken = state / "remoteclaw.json"
    state.mkdir(parents=True, exist_ok=True)
    broken.write_text("{oops")
    out = setup(state, "--non-interactive", "--agent", "codex")
    assert out.returncode == 1 and "nothing was changed" in out.stderr and broken.read_text() == "{oops"
