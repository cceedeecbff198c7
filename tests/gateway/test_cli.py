"""The ``remoteclaw`` CLI as a real subprocess against a real gateway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.gateway_proc import ROOT, GatewayProcess, free_port

GATEWAY_CONFIG = {"logging": {"level": "info"}}


def cli(*args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    base["REMOTECLAW_STATE_DIR"] = str(ROOT / ".no-such-state")
    return subprocess.run([sys.executable, "-m", "gateway.cli", *args], cwd=ROOT, env={**base, **(env or {})},
                          input=stdin, capture_output=True, text=True, timeout=60)


def conn(gateway: GatewayProcess) -> list[str]:
    return ["--url", gateway.url, "--token", gateway.token or ""]


def one_line_error(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 1, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("remoteclaw: "), res.stderr
    assert res.stdout == ""
    return lines[0]


def test_help_everywhere() -> None:
    for args in [[], ["gateway"], ["gateway", "run"], ["gateway", "call"], ["config"],
                 *[["config", sub] for sub in ("get", "set", "patch", "apply", "schema")]]:
        res = cli(*args, "--help")
        assert res.returncode == 0, (args, res.stderr)
        assert res.stdout.startswith("usage: remoteclaw"), args


def test_gateway_call(gateway: GatewayProcess) -> None:
    res = cli("gateway", "call", "health", *conn(gateway))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["ok"] is True
    assert "\n  " in res.stdout  # pretty by default
    res = cli("gateway", "call", "config.get", '{"key": "logging.level"}', "--json", *conn(gateway))
    assert res.returncode == 0 and res.stdout.count("\n") == 1
    assert json.loads(res.stdout)["value"] == "info"
    res = cli("gateway", "call", "config.get", "--params", "{key: 'logging.level'}", *conn(gateway),
              env={"REMOTECLAW_GATEWAY_TOKEN": "ignored-because-token-flag-wins"})
    assert json.loads(res.stdout)["value"] == "info"
    # URL and token from the environment
    res = cli("gateway", "call", "health", "--json",
              env={"REMOTECLAW_GATEWAY_URL": gateway.url, "REMOTECLAW_GATEWAY_TOKEN": gateway.token or ""})
    assert res.returncode == 0 and json.loads(res.stdout)["ok"] is True


def test_gateway_call_imports_stay_light(gateway: GatewayProcess) -> None:
    code = (
        "import sys\n"
        "from gateway.cli import main\n"
        f"rc = main(['gateway', 'call', 'health', '--json', '--url', {gateway.url!r}, '--token', {gateway.token!r}])\n"
        "heavy = sorted(m for m in ('uvicorn', 'sqlalchemy', 'starlette', 'pydantic_settings', 'alembic',"
        " 'structlog') if m in sys.modules)\n"
        "print('HEAVY', heavy, rc)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "HEAVY [] 0" in res.stdout, res.stdout


def test_clear_one_line_errors(gateway: GatewayProcess) -> None:
    down = one_line_error(cli("gateway", "call", "health", "--url", f"ws://127.0.0.1:{free_port()}/",
                              "--token", "x"))
    assert "cannot reach the gateway" in down and "remoteclaw gateway run" in down
    bad_token = one_line_error(cli("gateway", "call", "health", "--url", gateway.url, "--token", "wrong-token"))
    assert "token mismatch" in bad_token and "--token" in bad_token
    bad_json = one_line_error(cli("gateway", "call", "health", "{nope", *conn(gateway)))
    assert "not valid JSON" in bad_json
    unknown = one_line_error(cli("gateway", "call", "no.such.method", *conn(gateway)))
    assert "unknown method: no.such.method" in unknown
    invalid = one_line_error(cli("config", "patch", '{"gateway": {"port": 70000}}', *conn(gateway)))
    assert "/gateway/port" in invalid
    invalid = one_line_error(cli("config", "set", "logging.level", '"loud"', *conn(gateway)))
    assert "/logging/level" in invalid
    missing = one_line_error(cli("config", "apply", "/no/such/file.json", *conn(gateway)))
    assert "cannot read /no/such/file.json" in missing
    stale = one_line_error(cli("config", "set", "logging.level", '"debug"', "--base-hash", "0" * 64, *conn(gateway)))
    assert "baseHash" in stale
    usage = cli("config", "frobnicate")
    assert usage.returncode == 2 and "invalid choice" in usage.stderr


def test_config_commands(gateway: GatewayProcess, tmp_path: Path) -> None:
    cfg = gateway.state_dir / "remoteclaw.json"
    res = cli("config", "get", *conn(gateway))
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    assert len(got["hash"]) == 64 and got["config"]["logging"]["level"] == "info"

    res = cli("config", "set", "session.dmScope", '"per-peer"', *conn(gateway))
    assert res.returncode == 0, res.stderr
    assert json.loads(cfg.read_text())["session"]["dmScope"] == "per-peer"
    assert cli("config", "get", "session.dmScope", "--json", *conn(gateway)).stdout.strip() == '"per-peer"'

    res = cli("config", "patch", "{agents: {maxConcurrentRuns: 3}, session: null}", *conn(gateway))
    assert res.returncode == 0, res.stderr
    on_disk = json.loads(cfg.read_text())
    assert on_disk["agents"]["maxConcurrentRuns"] == 3 and "session" not in on_disk

    new = tmp_path / "new.json5"
    new.write_text("// replacement\n{logging: {level: 'warning'}, cron: {enabled: false}}\n")
    res = cli("config", "apply", str(new), *conn(gateway))
    assert res.returncode == 0, res.stderr
    assert json.loads(cfg.read_text()) == {"logging": {"level": "warning"}, "cron": {"enabled": False}}
    res = cli("config", "apply", "-", *conn(gateway), stdin='{"logging": {"level": "info"}}')
    assert res.returncode == 0, res.stderr
    assert json.loads(cfg.read_text()) == {"logging": {"level": "info"}}

    res = cli("config", "schema", "--json", *conn(gateway))
    assert res.returncode == 0 and "gateway" in json.loads(res.stdout)["properties"]
