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
    assert "cannot reach the gateway" in down and "start it with: ./scripts/gateway" in down  # works in a clone
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


def test_client_commands_find_a_gateway_started_on_another_port(tmp_path: Path) -> None:
    """`gateway run --port N` in one terminal, then client commands in another with the same state dir: no --url,
    no REMOTECLAW_GATEWAY_URL, and a config that names another port. They read the address the gateway wrote."""
    state = tmp_path / "state"
    state.mkdir()
    config_port = free_port()
    (state / "remoteclaw.json").write_text(json.dumps({"gateway": {"port": config_port}}))  # not where it runs
    gw = GatewayProcess(state, token=None)
    with gw:
        address = json.loads((state / "gateway.listen.json").read_text())
        assert address["url"] == gw.url and address["pid"] == gw.proc.pid  # type: ignore[union-attr]
        env = {"REMOTECLAW_STATE_DIR": str(state)}  # the token comes from the state dir too
        health = cli("gateway", "call", "health", "--json", env=env)
        assert health.returncode == 0, health.stderr
        assert json.loads(health.stdout)["ok"] is True
        jobs = cli("cron", "list", "--json", env=env)
        assert jobs.returncode == 0, jobs.stderr
        pending = cli("nodes", "pending", "--json", env=env)
        assert pending.returncode == 0, pending.stderr
        # The port it really listens on, not the config's (and the config's is said beside it).
        port = cli("config", "get", "gateway.port", env=env)
        assert port.returncode == 0 and port.stdout.strip() == str(gw.port), (port.stdout, port.stderr)
        assert f"listens on port {gw.port}" in port.stderr and f"the config says {config_port}" in port.stderr
        whole = cli("config", "get", "--json", env=env)
        assert json.loads(whole.stdout)["config"]["gateway"]["port"] == config_port  # the file's value, and
        assert f"listens on port {gw.port}" in whole.stderr  # the note
    assert not (state / "gateway.listen.json").exists()  # removed on exit: clients fall back to the config
    after = cli("gateway", "call", "health", env={"REMOTECLAW_STATE_DIR": str(state)})
    assert after.returncode == 1 and f"127.0.0.1:{config_port}" in after.stderr, after.stderr
    assert "start it with: ./scripts/gateway" in after.stderr  # a command that works from this clone


def test_an_address_file_of_a_dead_gateway_is_ignored(tmp_path: Path) -> None:
    """kill -9 leaves the file behind: a client must not keep knocking at that address."""
    state = tmp_path / "state"
    state.mkdir()
    port = free_port()
    (state / "remoteclaw.json").write_text(json.dumps({"gateway": {"port": port}}))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gw = GatewayProcess(state, token=None, port=port)  # on the config's port, so the fallback finds it
    gw.start()
    try:
        # what a kill -9 leaves: an address file naming a process that is gone
        (state / "gateway.listen.json").write_text(json.dumps({"url": "ws://127.0.0.1:1/", "pid": int(dead.stdout)}))
        res = cli("gateway", "call", "health", "--json", env={"REMOTECLAW_STATE_DIR": str(state)})
        assert res.returncode == 0, res.stderr
    finally:
        gw.stop()


def test_the_first_start_prints_the_signed_in_link_even_into_a_file(tmp_path: Path) -> None:
    """stdout is a file here (not a terminal). The link is printed the first time, also when that first start
    died before the banner (a broken config), and not again once it was shown."""
    state = tmp_path / "state"
    state.mkdir()
    port = free_port()
    # Dies after making the token, before the banner (as a missing library once did): nothing shown yet.
    broken = subprocess.run([sys.executable, "-m", "gateway.cli", "gateway", "run", "--port", str(port)], cwd=ROOT,
                            env={**{k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")},
                                 "REMOTECLAW_STATE_DIR": str(state), "REMOTECLAW_DATABASE_URL": "mysql://db/x"},
                            capture_output=True, text=True, timeout=60)
    assert broken.returncode == 1 and "#token=" not in broken.stdout, (broken.stdout, broken.stderr)
    assert (state / "gateway.token").exists()
    first = GatewayProcess(state, token=None, port=port)
    with first:
        token = (state / "gateway.token").read_text().strip()
    assert f"web chat: http://localhost:{port}/#token={token}" in first.output()
    again = GatewayProcess(state / "..", token=None, port=port)
    again.state_dir, again.log_path = state, tmp_path / "again.log"
    with again:
        pass
    out = again.output()
    assert "#token=" not in out and f"web chat: http://localhost:{port}/  (sign in with the gateway token)" in out
