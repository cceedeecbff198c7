"""The audit log against a real gateway: real actions through their real doors each leave one row naming who did
it and to what, with no secret in it; ``audit.log.list`` filters and pages; bad params name the field; only admins
read it; ``remoteclaw audit`` prints it.

The doors: ``config.patch`` (a secret in the patch), a stranger's pairing code approved (the loop channel), an
operator device approved and then acting as itself, an agent's tool use approved over the wire and another
decided by the owner typing ``/approve`` in the chat, an ``/mcp`` token created and revoked.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.support import FAKE_CLI, ROOT, SUPPORT
from tests.support.devices import DeviceKey
from tests.support.gateway_proc import GatewayProcess
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

SECRET = "sk-audit-probe-4f9e2d7c1b"
OUTBOX = Path(os.environ.get("TMPDIR", "/tmp")) / f"audit-outbox-{os.getpid()}.ndjson"

GATEWAY_CONFIG = {
    "gateway": {"auth": {"autoApproveLoopbackDevices": False}},
    "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
    "channels": {"ownerAllowFrom": ["loop:owner"], "loop": {"dmPolicy": "pairing", "outbox": str(OUTBOX)}},
}
GATEWAY_ENV = {"PYTHONPATH": os.pathsep.join([str(SUPPORT / "loop_site"), str(ROOT)])}
"""The loop channel; and this checkout for the stand-in CLI's ``remoteclaw call`` inside the run's sandbox (which
shows it the checkout's code folders, where an editable install may point elsewhere)."""


@pytest.fixture(scope="module", autouse=True)
def _fresh_outbox() -> Any:
    OUTBOX.unlink(missing_ok=True)
    yield
    OUTBOX.unlink(missing_ok=True)


def post(gw: GatewayProcess, sender: str, text: str) -> None:
    """A DM arriving on the loop channel's webhook."""
    req = urllib.request.Request(f"{gw.http}/channels/loop/default/webhook",
                                 data=json.dumps({"sender": sender, "text": text}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200


def sent_to(chat: str) -> list[str]:
    lines = OUTBOX.read_text().splitlines() if OUTBOX.exists() else []
    return [r["text"] for r in map(json.loads, lines) if r["op"] == "send" and r["to"] == chat]


async def events(client: RawClient, **params: Any) -> list[dict[str, Any]]:
    return (await client.call("audit.log.list", params))["events"]


async def only(client: RawClient, action: str, target: str) -> dict[str, Any]:
    """The one event of ``action`` on ``target`` (failing when there is none or several)."""
    found = await events(client, action=action, target=target)
    assert len(found) == 1, found
    return found[0]


async def test_a_config_patch_is_recorded_with_its_change_and_no_secret(gateway: GatewayProcess,
                                                                        admin: RawClient) -> None:
    base = (await admin.call("config.get"))["hash"]
    patch = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI], "env": {"PROBE": SECRET}}]},
             "cron": {"keepRunsDays": 12}}
    await admin.call("config.patch", {"patch": patch, "baseHash": base, "note": "probe"})
    event = (await events(admin, action="config.patch"))[0]
    assert event["actor"] == "operator:test@127.0.0.1" and event["actorKind"] == "operator"
    assert event["details"]["sections"] == ["agents", "cron"] and event["details"]["note"] == "probe"
    assert event["details"]["patch"]["cron"] == {"keepRunsDays": 12}
    assert event["details"]["patch"]["agents"]["list"][0]["env"]["PROBE"] == "__REMOTECLAW_REDACTED__"
    frame = await admin.req("audit.log.list", {})
    assert SECRET not in json.dumps(frame)

    base = (await admin.call("config.get"))["hash"]
    await admin.call("config.set", {"key": "cron.keepRunsDays", "value": 14, "baseHash": base})
    assert (await only(admin, "config.set", "cron.keepRunsDays"))["details"]["patch"] == {"cron": {"keepRunsDays": 14}}


async def test_a_sender_pairing_approval_names_the_sender(gateway: GatewayProcess, admin: RawClient) -> None:
    await asyncio.to_thread(post, gateway, "stranger", "let me in")
    text = await until(lambda: sent_to("stranger"), 15, "the pairing code")
    code = text[0].split("pairing code: ", 1)[1].split("\n", 1)[0].strip()
    await admin.call("channels.pairing.approve", {"channel": "loop", "code": code})
    event = await only(admin, "pairing.approve", "loop:stranger")
    assert event["actor"] == "operator:test@127.0.0.1"
    assert event["details"]["code"] == code and event["details"]["notification"] == "sent"


async def test_a_device_approved_then_acts_as_itself(gateway: GatewayProcess, admin: RawClient) -> None:
    device = DeviceKey()
    for attempt in ("pending", "approved"):
        client = await RawClient.open(gateway.url)
        assert client.challenge is not None
        frame = await client.connect_with(device.connect_params(gateway.token or "",
                                                                client.challenge["payload"]["nonce"]))
        if attempt == "pending":
            assert frame["error"]["code"] == "NOT_PAIRED"
            await client.close()
            await admin.call("device.pair.approve", {"deviceId": device.id})
    assert frame["ok"], frame
    event = await only(admin, "device.approve", f"device:{device.id}")
    assert event["actor"] == "operator:test@127.0.0.1" and event["details"]["clientId"] == "test"

    made = await client.call("mcp.tokens.create", {"name": "from-device"})
    await client.close()
    event = await only(admin, "token.create", f"mcp-token:{made['id']}")
    assert event["actor"] == f"device:{device.id[:8]}" and event["actorKind"] == "device"


async def test_approvals_decided_over_the_wire_and_in_the_chat(gateway: GatewayProcess, admin: RawClient) -> None:
    ask = {"sessionKey": "agent:main:main", "toolName": "Bash", "input": {"command": f"deploy --key {SECRET}"}}
    await admin.call("approvals.ask", {"id": "audit-r1", **ask})
    await admin.call("exec.approval.resolve", {"id": "audit-r1", "decision": "allow-once"})
    event = await only(admin, "approval.resolve", "approval:audit-r1")
    assert event["actor"] == "operator:test@127.0.0.1"
    assert event["details"] == {"decision": "allow-once", "status": "allowed", "tool": "Bash", "agentId": "main",
                                "sessionKey": "agent:main:main", "resolvedBy": "test"}

    await admin.call("approvals.ask", {"id": "audit-r2", **ask})
    await asyncio.to_thread(post, gateway, "owner", "/approve audit-r2 deny")
    event = await until(lambda: events(admin, target="approval:audit-r2"), 15, "the chat's decision")
    assert event[0]["actor"] == "sender:loop:owner" and event[0]["actorKind"] == "sender"
    assert event[0]["details"]["decision"] == "deny"
    assert SECRET not in json.dumps(await admin.req("audit.log.list", {"limit": 1000}))


async def test_an_mcp_token_created_and_revoked_leaves_no_token_behind(gateway: GatewayProcess,
                                                                       admin: RawClient) -> None:
    made = await admin.call("mcp.tokens.create", {"name": "laptop", "owner": True, "expires": "30d"})
    await admin.call("mcp.tokens.revoke", {"id": made["id"]})
    created = await only(admin, "token.create", f"mcp-token:{made['id']}")
    assert created["details"]["name"] == "laptop" and created["details"]["owner"] is True
    assert (await only(admin, "token.revoke", f"mcp-token:{made['id']}"))["details"]["revoked"] == 1
    assert made["token"] not in json.dumps(await admin.req("audit.log.list", {"limit": 1000}))


async def test_filters_and_pages_newest_first(gateway: GatewayProcess, admin: RawClient) -> None:
    everything = await events(admin, limit=1000)
    assert len(everything) >= 8
    order = [(e["at"], e["id"]) for e in everything]
    assert order == sorted(order, reverse=True)

    pages: list[dict[str, Any]] = []
    before: str | None = None
    while True:
        page = await admin.call("audit.log.list", {"limit": 3, **({"before": before} if before else {})})
        pages += page["events"]
        before = page["nextBefore"]
        assert page["count"] == len(page["events"]) <= 3
        if before is None:
            break
    assert [e["id"] for e in pages] == [e["id"] for e in everything]

    configs = await events(admin, action="config.")
    assert configs and {e["action"] for e in configs} <= {"config.patch", "config.set"}
    assert {e["action"] for e in await events(admin, actor="sender:")} == {"approval.resolve"}
    assert await events(admin, action="config.patch", since="1h") == [e for e in configs
                                                                       if e["action"] == "config.patch"]
    assert await events(admin, until=everything[-1]["at"]) == []
    assert await events(admin, since="2999-01-01T00:00:00Z") == []


@pytest.mark.parametrize(("params", "field"), [
    ({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"since": "last tuesday"}, "since"),
    ({"until": True}, "until"), ({"before": "page-2"}, "before"), ({"action": ""}, "action"),
    ({"colour": "red"}, "colour"),
])
async def test_bad_params_name_the_field(admin: RawClient, params: dict[str, Any], field: str) -> None:
    frame = await admin.req("audit.log.list", params)
    assert frame["error"]["code"] == "INVALID_REQUEST" and field in frame["error"]["message"], frame


async def test_only_admins_read_the_log(gateway: GatewayProcess) -> None:
    for scopes in (["operator.read"], ["operator.write", "operator.pairing", "operator.approvals"]):
        reader = await operator(gateway.url, gateway.token or "", scopes=scopes)
        frame = await reader.req("audit.log.list", {})
        await reader.close()
        assert frame["error"]["code"] == "FORBIDDEN", frame


def audit_cli(gw: GatewayProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``remoteclaw audit ...``. Until the package is installed again with the new ``remoteclaw.cli`` entry point,
    the command is registered in the child just as the entry point does it (``CLI_COMMANDS``)."""
    launcher = ("import sys\n"
                "from gateway.composition.entry_points import CLI_COMMANDS\n"
                "if 'audit' not in CLI_COMMANDS:\n"
                "    CLI_COMMANDS.register('audit', 'gateway.audit.cli:register')\n"
                "from gateway.cli import main\n"
                "sys.exit(main(sys.argv[1:]))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    env.update(REMOTECLAW_GATEWAY_URL=gw.url, REMOTECLAW_GATEWAY_TOKEN=gw.token or "")
    return subprocess.run([sys.executable, "-c", launcher, "audit", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)


async def test_the_cli_prints_the_log(gateway: GatewayProcess, admin: RawClient) -> None:
    listed = await asyncio.to_thread(audit_cli, gateway, "--since", "7d", "--action", "config.", "--limit", "1")
    assert listed.returncode == 0, listed.stderr
    first, more = listed.stdout.splitlines()
    assert " config.set " in first and "operator:test@127.0.0.1" in first and "cron.keepRunsDays" in first
    assert more.startswith("… more: --before ")

    as_json = await asyncio.to_thread(audit_cli, gateway, "--actor", "sender:", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert [e["target"] for e in json.loads(as_json.stdout)["events"]] == ["approval:audit-r2"]

    none = await asyncio.to_thread(audit_cli, gateway, "--action", "people.")
    assert none.returncode == 0 and none.stdout.strip() == "no audit events match (kept 90 days)"
    bad = await asyncio.to_thread(audit_cli, gateway, "--since", "soon")
    assert bad.returncode == 1 and "since" in bad.stderr and "'soon' is not a time" in bad.stderr


async def test_an_agent_run_acts_as_its_session(gateway: GatewayProcess, admin: RawClient) -> None:
    """The owner's turn patches the config through its MCP tool: the row names the run's session, not a client."""
    change = {"patches": {"cron": {"keepRunsPerJob": 150}}}
    await asyncio.to_thread(post, gateway, "owner", f"tool:gateway_config_patch {json.dumps(change)}")
    found = await until(lambda: events(admin, action="config.patch", actor="agent-run:"), 60, "the run's patch")
    assert found[0]["actor"] == "agent-run:agent:main:main" and found[0]["actorKind"] == "agent-run"
    assert found[0]["details"]["patch"] == {"cron": {"keepRunsPerJob": 150}}
