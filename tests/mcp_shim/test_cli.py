"""``remoteclaw call`` and ``remoteclaw mcp``: the same tool path from a shell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp_shim.shim import shim_env, side_effects
from tests.support.gateway_proc import ROOT, GatewayProcess

pytestmark = pytest.mark.timeout(90)
CLI = [sys.executable, "-m", "gateway.cli"]


def _run(env: dict[str, str], *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], cwd=ROOT, env=env, input=stdin, capture_output=True, timeout=60)


def test_call_prints_the_result_and_exits_by_outcome(agent_gateway: GatewayProcess, tmp_path: Path) -> None:
    env = shim_env(agent_gateway, tmp_path, plugin_manifest={"tools": []})
    ok = _run(env, "call", "heartbeat_report", '{"anything_done": true, "summary": "from the shell"}')
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["anythingDone"] is True
    assert side_effects(tmp_path)[0]["summary"] == "from the shell"
    failed = _run(env, "call", "browser_request", '{"method": "GET", "path": "/tabs"}')
    assert failed.returncode == 1
    assert failed.stdout.decode().startswith("Tool error (browser_request): UNAVAILABLE: no browser-capable node")
    bad = _run(env, "call", "sessions_list", '{"limit": 0}')
    assert bad.returncode == 1 and b"at /limit: must be >= 1" in bad.stdout
    assert _run(env, "call", "no_such_tool").returncode == 2
    assert _run(env, "call", "sessions_list", "{oops").returncode == 2


def test_call_respects_tier_and_lists_tools(agent_gateway: GatewayProcess, tmp_path: Path) -> None:
    env = shim_env(agent_gateway, tmp_path, owner=False, plugin_manifest={"tools": []})
    listed = _run(env, "call", "--list")
    names = [line.split()[0] for line in listed.stdout.decode().splitlines()]
    assert len(names) == 20 and "cron_status" not in names
    refused = _run(env, "call", "gateway_restart")
    assert refused.returncode == 1 and b"only for the bot's owner" in refused.stdout


def test_call_needs_the_run_context(tmp_path: Path) -> None:
    env = shim_env(None, tmp_path)
    del env["REMOTECLAW_SESSION_KEY"]
    proc = _run(env, "call", "agents_list")
    assert proc.returncode == 1 and b"REMOTECLAW_SESSION_KEY" in proc.stderr


def test_remoteclaw_mcp_serves_stdio(tmp_path: Path) -> None:
    env = shim_env(None, tmp_path, plugin_manifest={"tools": []})
    lines = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'
    proc = _run(env, "mcp", stdin=lines)
    assert proc.returncode == 0
    assert len(json.loads(proc.stdout)["result"]["tools"]) == 54
