"""What an agent run can do with the token it is given: its tier's scopes, for the run's lifetime only.

The agent (and whatever a chat user talks it into running) can read its MCP config and environment.
The probe CLI connects with that token asking for every scope, as a prompt-injected agent would.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator

import pytest

from tests.support import SUPPORT
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

PROBE = str(SUPPORT / "probe_cli.py")
READ_WRITE = ["operator.read", "operator.write"]


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("runtok")
    # the probe connects over TCP as an attacker holding the token would: non-owner runs get the network here
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, PROBE]}],
                      "defaults": {"sandbox": {"othersNetwork": "open"}}}}
    with GatewayProcess(d / "gw", config=cfg, env={"PROBE_LOG": str(d / "probe.log"),
                                                   "REMOTECLAW_DATABASE_SECRET_TEST": "gateway-only"}) as proc:
        proc.probe_log = d / "probe.log"  # type: ignore[attr-defined]
        yield proc


async def run_once(gw: GatewayProcess, scopes: list[str], key: str | None = None) -> dict:
    c = await operator(gw.url, gw.token or "", scopes=scopes)
    res = await c.call("chat.send", {"sessionKey": key or f"agent:main:tok:{uuid.uuid4().hex[:8]}", "message": "hi",
                                     "idempotencyKey": str(uuid.uuid4())})
    done = await c.call("agent.wait", {"runId": res["runId"], "timeoutMs": 20000})
    await c.close()
    assert done["status"] == "ok", done
    lines = gw.probe_log.read_text().splitlines()  # type: ignore[attr-defined]
    return json.loads(lines[-1])


async def test_a_non_owner_run_cannot_get_admin_with_its_token(gw: GatewayProcess) -> None:
    probe = await run_once(gw, READ_WRITE)
    assert sorted(probe["scopes"]) == READ_WRITE  # asked for all five
    token = probe["env"]["REMOTECLAW_GATEWAY_TOKEN"]
    assert token != gw.token and gw.token not in json.dumps(probe)
    # The gateway's own REMOTECLAW_* variables do not reach the agent; its run context does.
    assert "REMOTECLAW_STATE_DIR" not in probe["env"] and "REMOTECLAW_DATABASE_SECRET_TEST" not in probe["env"]
    assert probe["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "false"
    assert probe["mcpConfigMode"] == 0o600
    # Owner-only capabilities stay closed even where write scope would do: the token lists its methods.
    tried = {k: v for k, v in probe["tried"].items() if k not in ("sessions.list.keys", "chat.history")}
    assert tried == {"sessions.list": "ok", "node.invoke": "RUN_TIER_FORBIDDEN",
                     "browser.request": "MISSING_SCOPE", "config.get": "RUN_TIER_FORBIDDEN",
                     "logs.tail": "RUN_TIER_FORBIDDEN", "message.delete": "SESSION_FORBIDDEN"}


async def test_a_non_owner_run_sees_only_its_own_conversations(gw: GatewayProcess) -> None:
    await run_once(gw, ["operator.admin"], key="agent:main:main")  # the owner talks in the main session
    mine = f"agent:main:tok:{uuid.uuid4().hex[:8]}"
    probe = await run_once(gw, READ_WRITE, key=mine)
    assert probe["tried"]["chat.history"] == "SESSION_FORBIDDEN"
    assert probe["tried"]["sessions.list.keys"] == [mine]
    owner = await run_once(gw, ["operator.admin"])  # the owner's own runs still see everything
    assert owner["tried"]["chat.history"] == "ok" and "agent:main:main" in owner["tried"]["sessions.list.keys"]
    assert owner["tried"]["message.delete"] == "NOT_FOUND"  # allowed, and told there is no such message


async def test_an_owner_run_gets_admin_and_the_token_dies_with_the_run(gw: GatewayProcess) -> None:
    probe = await run_once(gw, ["operator.admin"])
    assert "operator.admin" in probe["scopes"] and probe["env"]["REMOTECLAW_SENDER_IS_OWNER"] == "true"
    assert probe["tried"]["config.get"] == "ok" and probe["tried"]["node.invoke"] == "UNKNOWN_NODE"
    late = await RawClient.open(gw.url)
    frame = await late.handshake(probe["env"]["REMOTECLAW_GATEWAY_TOKEN"])
    await late.close()
    assert not frame["ok"] and frame["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"


async def test_stale_run_tokens_do_not_lock_out_the_address(gw: GatewayProcess) -> None:
    """Shims that outlive their run (a restart revokes every run token) must not lock out local clients."""
    for _ in range(8):  # more than gateway.auth.rateLimit.maxFailures (5)
        stale = await RawClient.open(gw.url)
        frame = await stale.handshake("run-" + uuid.uuid4().hex)
        assert frame["error"]["details"]["code"] == "AUTH_TOKEN_MISMATCH"
        await stale.close()
    fine = await operator(gw.url, gw.token or "")
    assert (await fine.call("health"))["ok"] is True
    await fine.close()
