"""``remoteclaw cron`` against a real gateway process: human output, --json, and errors that say what to fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support import ROOT
from tests.support.gateway_proc import GatewayProcess


def cli(gw: GatewayProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    env.update(REMOTECLAW_GATEWAY_URL=gw.url, REMOTECLAW_GATEWAY_TOKEN=gw.token or "")
    return subprocess.run([sys.executable, "-m", "gateway.cli", "cron", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_cron_cli_round_trip(gateway: GatewayProcess) -> None:
    added = cli(gateway, "add", "--name", "standup", "--cron", "0 9 * * 1-5", "--tz", "Europe/Berlin",
                "--message", "what is on today?", "--announce", "telegram:4242", "--json")
    assert added.returncode == 0, added.stderr
    job = json.loads(added.stdout)
    assert job["schedule"] == {"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Berlin"}
    assert job["delivery"] == {"mode": "announce", "channel": "telegram", "to": "4242"}

    listed = cli(gateway, "list")
    assert listed.returncode == 0 and job["id"] in listed.stdout and "cron 0 9 * * 1-5 (Europe/Berlin)" in listed.stdout

    edited = cli(gateway, "edit", job["id"], "--every", "2h", "--disable")
    assert edited.returncode == 0 and " off " in edited.stdout and "every 7200s" in edited.stdout
    assert "no cron jobs enabled" in cli(gateway, "list").stdout
    assert job["id"] in cli(gateway, "list", "--all").stdout

    bad = cli(gateway, "add", "--name", "x", "--cron", "0 9 * *", "--message", "m")
    assert bad.returncode != 0 and "schedule.expr" in bad.stderr

    started = cli(gateway, "run", job["id"])
    assert started.returncode == 0 and started.stdout.strip() == f"started {job['id']}"
    runs = cli(gateway, "runs", job["id"], "--json")
    assert runs.returncode == 0 and json.loads(runs.stdout)["entries"][0]["trigger"] == "manual"

    removed = cli(gateway, "rm", job["id"])
    assert removed.returncode == 0 and removed.stdout.strip() == f"removed {job['id']}"
    assert cli(gateway, "rm", job["id"]).returncode == 1
