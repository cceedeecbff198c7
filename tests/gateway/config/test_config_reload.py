"""Hand edits of the config file, hot apply, restart in place, and rollback: a real gateway process."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

GATEWAY_CONFIG = {"logging": {"level": "info"}}


@pytest.fixture
async def client(gateway: GatewayProcess) -> Any:
    c = await connect(gateway)
    yield c
    await c.close()


async def connect(gateway: GatewayProcess, timeout: float = 15) -> RawClient:
    """Connect, retrying while the gateway restarts."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await operator(gateway.url, gateway.token or "")
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


def edit(gateway: GatewayProcess, data: dict[str, Any] | str) -> None:
    """What an operator does with an editor: rewrite the file in place."""
    text = data if isinstance(data, str) else json.dumps(data, indent=2)
    with open(gateway.state_dir / "remoteclaw.json", "w") as fh:
        fh.write(text)


def current(gateway: GatewayProcess) -> dict[str, Any]:
    return json.loads((gateway.state_dir / "remoteclaw.json").read_text())


def log_records(gateway: GatewayProcess) -> list[dict[str, Any]]:
    path = gateway.state_dir / "logs" / "gateway.log"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def wait_log(gateway: GatewayProcess, text: str, timeout: float = 5) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for rec in log_records(gateway):
            if text in rec.get("event", ""):
                return rec
        await asyncio.sleep(0.1)
    raise AssertionError(f"no log record with {text!r}")


async def test_hand_edit_is_applied_live(gateway: GatewayProcess, client: RawClient) -> None:
    data = current(gateway)
    data["session"] = {"dmScope": "per-channel-peer"}
    t0 = time.monotonic()
    edit(gateway, data)
    event = await client.next_event("config.changed", timeout=5)
    assert time.monotonic() - t0 < 2.0  # the watcher notices within about a second
    assert event["payload"]["sections"] == ["session"]
    assert event["payload"]["source"] == "file" and event["payload"]["restart"] is False
    got = await client.call("config.get")
    assert got["config"]["session"]["dmScope"] == "per-channel-peer" and got["hash"] == event["payload"]["hash"]
    # Rewriting the same content (a save without changes) is not a change.
    edit(gateway, data)
    with pytest.raises(asyncio.TimeoutError):
        await client.next_event("config.changed", timeout=1.0)


async def test_broken_edits_keep_the_last_good_config(gateway: GatewayProcess, client: RawClient) -> None:
    before = await client.call("config.get")
    good = current(gateway)
    for broken, where in [("{session: {dmScope: 'main'", "not valid JSON5"),
                          (json.dumps({**good, "agents": {"maxConcurrentRuns": 0}}), "/agents/maxConcurrentRuns"),
                          ("[1, 2]", "must be an object")]:
        edit(gateway, broken)
        rec = await wait_log(gateway, "keeping the last good config")
        deadline = time.monotonic() + 5
        while True:  # the refusal of this very edit
            got = await client.call("config.get")
            if not got["valid"] and where in json.dumps(got["issues"]):
                break
            assert time.monotonic() < deadline, got
            await asyncio.sleep(0.1)
        assert rec["level"] == "error"
        assert got["hash"] == before["hash"] and got["config"] == before["config"]
        assert (await client.call("health"))["ok"] is True
    # A later good edit is picked up.
    good["session"] = {"dmScope": "per-peer"}
    edit(gateway, good)
    event = await client.next_event("config.changed", timeout=5)
    assert event["payload"]["sections"] == ["session"]
    got = await client.call("config.get")
    assert got["valid"] is True and "issues" not in got
    assert got["config"]["session"]["dmScope"] == "per-peer"


async def test_deleted_file_keeps_running_config(gateway: GatewayProcess, client: RawClient) -> None:
    before = await client.call("config.get")
    data = current(gateway)
    (gateway.state_dir / "remoteclaw.json").unlink()
    await wait_log(gateway, "config file disappeared")
    got = await client.call("config.get")
    assert got["exists"] is False and got["config"] == before["config"]
    edit(gateway, data)  # putting it back unchanged is not a change
    with pytest.raises(asyncio.TimeoutError):
        await client.next_event("config.changed", timeout=1.0)


async def test_restart_section_edit_restarts_in_place(gateway: GatewayProcess, client: RawClient) -> None:
    data = current(gateway)
    data["gateway"] = {"tickIntervalMs": 12_345}
    edit(gateway, data)
    changed = await client.next_event("config.changed", timeout=5)
    assert changed["payload"]["restart"] is True and changed["payload"]["sections"] == ["gateway"]
    shutdown = await client.next_event("shutdown", timeout=5)
    assert shutdown["payload"]["restartExpectedMs"] > 0
    assert await client.wait_closed() == 1012
    again = await connect(gateway)  # same port
    try:
        assert again.hello is not None and again.hello["policy"]["tickIntervalMs"] == 12_345
        assert (await again.call("config.get", {"key": "gateway.tickIntervalMs"}))["value"] == 12_345
    finally:
        await again.close()


async def test_patch_of_restart_section_restarts(gateway: GatewayProcess, client: RawClient) -> None:
    h = (await client.call("config.get"))["hash"]
    res = await client.call("config.patch", {"patch": {"gateway": {"tickIntervalMs": 20_000}}, "baseHash": h})
    assert res["restart"] is True
    await client.next_event("shutdown", timeout=5)
    assert await client.wait_closed() == 1012
    again = await connect(gateway)
    try:
        assert again.hello is not None and again.hello["policy"]["tickIntervalMs"] == 20_000
        got = await again.call("config.get")
        assert got["hash"] == res["hash"] and got["valid"] is True
    finally:
        await again.close()


async def test_restart_with_broken_file_rolls_back(gateway: GatewayProcess, client: RawClient) -> None:
    before = await client.call("config.get")
    edit(gateway, '{gateway: {port: "not a port"}}')
    await wait_log(gateway, "keeping the last good config")
    await client.call("gateway.restart", {"reason": "test"})
    assert await client.wait_closed() == 1012
    again = await connect(gateway)
    try:
        await wait_log(gateway, "restarting with the last good config")
        got = await again.call("config.get")
        assert got["hash"] == before["hash"] and got["config"] == before["config"]
        assert got["valid"] is False and "/gateway/port" in json.dumps(got["issues"])
        # ... and a later good edit is still picked up by the new gateway's watcher.
        data = json.loads(json.dumps(before["config"]))
        fixed = {"gateway": {"tickIntervalMs": data["gateway"]["tickIntervalMs"]}, "logging": {"level": "debug"}}
        edit(gateway, fixed)
        event = await again.next_event("config.changed", timeout=5)
        assert event["payload"]["sections"] == ["logging", "session"]
        assert (await again.call("config.get", {"key": "logging.level"}))["value"] == "debug"
    finally:
        await again.close()
    assert gateway.proc is not None and gateway.proc.poll() is None


async def test_port_change_moves_the_listener(tmp_path: Path) -> None:
    """Without --port on the command line, a new gateway.port is bound on restart; the old one is released."""
    from tests.support.gateway_proc import free_port

    first, second = free_port(), free_port()
    proc = GatewayProcess(tmp_path, config={"gateway": {"port": first}}, port=first)
    proc.start = _start_without_port(proc)  # type: ignore[method-assign]
    with proc:
        c = await connect(proc)
        h = (await c.call("config.get"))["hash"]
        await c.call("config.patch", {"patch": {"gateway": {"port": second}}, "baseHash": h})
        assert await c.wait_closed() == 1012
        proc.port = second
        again = await connect(proc)
        assert (await again.call("config.get", {"key": "gateway.port"}))["value"] == second
        await again.close()
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", first)


def _start_without_port(proc: GatewayProcess) -> Any:
    import subprocess
    import sys

    from tests.support.gateway_proc import ROOT

    def start(timeout: float = 20.0) -> GatewayProcess:
        proc.proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "gateway", "run"], cwd=ROOT,
                                     env=proc.env(), stdout=proc.log_path.open("ab"), stderr=subprocess.STDOUT)
        proc.wait_healthy(timeout)
        return proc

    return start
