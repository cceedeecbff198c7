"""Our node host (``python -m nodes run``) pairing with our gateway and running commands for it.

Everything is a real process on 127.0.0.1: the gateway, the node host, the commands it runs. The
assertions are on what the node did (its stdout, its files) and what the gateway stored.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.devices import DeviceKey
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

# openclaw_frames: every frame received is checked against OpenClaw's schema
pytestmark = [pytest.mark.timeout(120), pytest.mark.openclaw_frames]


async def pending_request(admin: RawClient, name: str) -> dict[str, Any]:
    async def find() -> dict[str, Any] | None:
        listing = await admin.call("node.pair.list")
        return next((r for r in listing["pending"] if r["displayName"] == name), None)

    found: dict[str, Any] = await until(find, 20, f"a pairing request from {name}")
    return found


async def invoke(admin: RawClient, node: str, command: str, params: Any = None, *, key: str | None = None,
                 timeout: float = 30, **extra: Any) -> dict[str, Any]:
    body = {"nodeId": node, "command": command, "idempotencyKey": key or str(uuid.uuid4()), **extra}
    if params is not None:
        body["params"] = params
    return await admin.req("node.invoke", body, timeout=timeout)


def token_file(node: NodeHostProcess) -> dict[str, Any]:
    path = node.state / "node.json"
    return json.loads(path.read_text()) if path.exists() else {}


async def pair(admin: RawClient, node: NodeHostProcess) -> str:
    """Wait for the node's request, approve it, and wait until the node holds its token; returns its id."""
    request = await pending_request(admin, node.name)
    await admin.call("node.pair.approve", {"requestId": request["requestId"]})
    await until(lambda: token_file(node).get("token"), 30, "the node to save its token")
    return str(request["nodeId"])


@pytest.fixture
async def paired(gateway: GatewayProcess, admin: RawClient, tmp_path: Path) -> AsyncIterator[tuple[NodeHostProcess,
                                                                                                    str]]:
    name = f"box-{uuid.uuid4().hex[:6]}"
    with NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name=name) as node:
        node_id = await pair(admin, node)
        yield node, node_id


async def test_a_node_is_held_until_approved_then_runs_what_its_owner_allowed(
        gateway: GatewayProcess, admin: RawClient, tmp_path: Path) -> None:
    events = await operator(gateway.url, gateway.token or "")
    with NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name="workshop") as node:
        request = await pending_request(admin, "workshop")
        requested = await events.next_event("node.pair.requested")
        assert requested["payload"]["requestId"] == request["requestId"]
        assert set(request["commands"]) == {"system.run", "system.which", "system.notify"}

        refused = await invoke(admin, "workshop", "system.which", {"bins": ["sh"]})
        assert refused["error"]["code"] == "NOT_PAIRED"
        assert refused["error"]["details"]["code"] == "NODE_NOT_PAIRED"
        assert request["requestId"] in refused["error"]["message"]

        await admin.call("node.pair.approve", {"requestId": request["requestId"]})
        resolved = await events.next_event("node.pair.resolved")
        assert resolved["payload"]["decision"] == "approved"
        assert "token" not in resolved["payload"]  # operators never see the node's token
        saved = await until(lambda: token_file(node).get("token"), 15, "the node token on the node")
        assert saved.startswith("rcn_")

        which = await invoke(admin, "workshop", "system.which", {"bins": ["sh", "no-such-program-here"]})
        assert which["ok"], which
        assert which["payload"]["payload"]["bins"] == {"sh": "/usr/bin/sh"}

        # system.run runs nothing the node's own allowlist does not name.
        denied = await invoke(admin, "workshop", "system.run", {"argv": ["echo", "hello"]})
        assert denied["error"]["code"] == "FORBIDDEN"
        assert denied["error"]["details"]["nodeError"]["code"] == "FORBIDDEN"
        assert "approvals add echo" in denied["error"]["message"]
        assert node.approvals("add", "echo").returncode == 0
        ran = await invoke(admin, "workshop", "system.run", {"argv": ["echo", "hello", "node"]})
        assert ran["ok"], ran
        result = ran["payload"]["payload"]
        assert (result["exitCode"], result["stdout"], result["success"]) == (0, "hello node\n", True)
        listed = {n["displayName"]: n for n in (await admin.call("node.list"))["nodes"]}
        assert listed["workshop"]["connected"] and listed["workshop"]["paired"]
    await events.close()


async def test_output_is_capped_and_a_slow_command_is_killed_at_its_timeout(
        admin: RawClient, paired: tuple[NodeHostProcess, str], tmp_path: Path) -> None:
    node, node_id = paired
    assert node.approvals("add", "python3*").returncode == 0
    assert node.approvals("add", "sleep").returncode == 0
    big = await invoke(admin, node_id, "system.run",
                       {"argv": ["python3", "-c", "print('x' * 100000)"], "maxOutputBytes": 1000})
    out = big["payload"]["payload"]
    assert len(out["stdout"]) == 1000 and out["truncated"] and out["droppedBytes"] == 100001 - 1000

    marker = tmp_path / "still-running"
    started = time.monotonic()
    slow = await invoke(admin, node_id, "system.run", {
        "argv": ["python3", "-c", f"import time; time.sleep(3); open({str(marker)!r}, 'w')"], "timeoutMs": 400})
    out = slow["payload"]["payload"]
    assert out["timedOut"] and not out["success"] and out["signal"] == "SIGKILL"
    assert time.monotonic() - started < 2.5
    await asyncio.sleep(3)
    assert not marker.exists(), "the timed-out command kept running"


async def test_a_node_killed_mid_call_fails_the_call_at_once(
        admin: RawClient, paired: tuple[NodeHostProcess, str]) -> None:
    node, node_id = paired
    assert node.approvals("add", "sleep").returncode == 0
    call = asyncio.create_task(invoke(admin, node_id, "system.run", {"argv": ["sleep", "30"]}, timeoutMs=60_000,
                                      timeout=60))
    await asyncio.sleep(1.0)
    assert not call.done()
    started = time.monotonic()
    node.kill()
    failed = await asyncio.wait_for(call, 10)
    assert time.monotonic() - started < 3, "the caller waited for its timeout instead of hearing of the disconnect"
    assert failed["error"]["code"] == "UNAVAILABLE"
    assert failed["error"]["details"]["code"] == "NODE_DISCONNECTED"
    gone = await invoke(admin, node_id, "system.which", {"bins": ["sh"]})
    assert gone["error"]["details"]["code"] == "NODE_NOT_CONNECTED"


async def test_a_node_that_does_not_answer_in_time_gets_a_timeout_and_a_cancel(
        admin: RawClient, gateway: GatewayProcess) -> None:
    """A hand-driven node that never answers: the call times out with its own code, and the node is told."""
    device = DeviceKey()
    raw = await RawClient.open(gateway.url)
    hello = await raw.connect_with(node_params(device, gateway.token or "", nonce_of(raw), commands=["system.which"]))
    assert hello["ok"], hello
    request = await pending_request(admin, "silent")
    await admin.call("node.pair.approve", {"requestId": request["requestId"]})
    resolved = await raw.next_event("node.pair.resolved")
    assert resolved["payload"]["token"].startswith("rcn_")  # the node's own copy carries its token

    timed_out = await invoke(admin, "silent", "system.which", {"bins": ["sh"]}, timeoutMs=300)
    assert timed_out["error"]["code"] == "UNAVAILABLE"
    assert timed_out["error"]["details"]["code"] == "NODE_INVOKE_TIMEOUT"
    sent = await raw.next_event("node.invoke.request")
    cancel = await raw.next_event("node.invoke.cancel")
    assert cancel["payload"]["invokeId"] == sent["payload"]["id"]
    assert json.loads(sent["payload"]["paramsJSON"]) == {"bins": ["sh"]}
    late = await raw.req("node.invoke.result", {"id": sent["payload"]["id"], "nodeId": device.id, "ok": True})
    assert late["ok"] and late["payload"]["matched"] is False
    await raw.close()


def node_params(device: DeviceKey, token: str, nonce: str, *, name: str = "silent",
                commands: list[str] | None = None) -> dict[str, Any]:
    """Connect params of a hand-driven node: role node, a signed device proof, a manifest."""
    params = device.connect_params(token, nonce, role="node", scopes=[], client_id="node-host", mode="node")
    params["client"]["displayName"] = name  # not part of the signed payload
    params["commands"] = commands or []
    return params


def nonce_of(raw: RawClient) -> str:
    assert raw.challenge is not None
    return str(raw.challenge["payload"]["nonce"])


async def test_repeated_idempotency_key_replays_and_a_reused_key_is_refused(
        admin: RawClient, paired: tuple[NodeHostProcess, str], tmp_path: Path) -> None:
    node, node_id = paired
    assert node.approvals("add", "python3*").returncode == 0
    counter = tmp_path / "count"
    script = (f"p={str(counter)!r}\nimport os\n"
              "n=int(open(p).read()) if os.path.exists(p) else 0\nopen(p,'w').write(str(n+1))")
    params = {"argv": ["python3", "-c", script]}
    first = await invoke(admin, node_id, "system.run", params, key="run-once")
    again = await invoke(admin, node_id, "system.run", params, key="run-once")
    assert first["ok"] and again["ok"]
    assert again["payload"]["replayed"] is True and "replayed" not in first["payload"]
    assert counter.read_text() == "1", "a repeated idempotency key ran the command twice"
    other = await invoke(admin, node_id, "system.run", {"argv": ["python3", "-c", "pass"]}, key="run-once")
    assert other["error"]["details"]["code"] == "IDEMPOTENCY_KEY_REUSED"


async def test_policy_declared_commands_and_rename(admin: RawClient, paired: tuple[NodeHostProcess, str]) -> None:
    _node, node_id = paired
    undeclared = await invoke(admin, node_id, "camera.snap")
    assert undeclared["error"]["details"]["code"] == "COMMAND_NOT_DECLARED"
    config = await admin.call("config.get")
    await admin.call("config.patch", {"raw": json.dumps({"nodes": {"denyCommands": ["system.notify"]}}),
                                      "baseHash": config["hash"]})
    try:
        denied = await invoke(admin, node_id, "system.notify", {"title": "hi"})
        assert denied["error"]["code"] == "FORBIDDEN"
        assert denied["error"]["details"]["code"] == "COMMAND_NOT_ALLOWED"
        described = await admin.call("node.describe", {"nodeId": node_id[:12]})
        assert "system.notify" not in described["allowedCommands"]
    finally:
        config = await admin.call("config.get")
        await admin.call("config.patch", {"raw": json.dumps({"nodes": {"denyCommands": []}}),
                                          "baseHash": config["hash"]})
    renamed = await admin.call("node.rename", {"nodeId": node_id, "displayName": "Garage Pi"})
    assert renamed["displayName"] == "Garage Pi"
    notified = await invoke(admin, "garage pi", "system.notify", {"title": "t", "body": "b"})
    assert notified["ok"] and notified["payload"]["payload"]["delivered"] is True
    unknown = await invoke(admin, "no-such-node", "system.which", {"bins": ["sh"]})
    assert unknown["error"]["details"]["code"] == "UNKNOWN_NODE"


async def test_the_node_token_replaces_the_gateway_token_until_the_node_is_removed(
        gateway: GatewayProcess, admin: RawClient, paired: tuple[NodeHostProcess, str]) -> None:
    node, node_id = paired
    node.stop()
    tokenless = NodeHostProcess(node.state, gateway.port, token=None, name=node.name)
    with tokenless:
        await until(lambda: _connected(admin, node_id), 20, "the node back, on its own token")
        which = await invoke(admin, node_id, "system.which", {"bins": ["sh"]})
        assert which["ok"], which
        removed = await admin.call("node.pair.remove", {"nodeId": node_id})
        assert removed["removed"]
        # Its token is gone with it: without the gateway token it cannot come back, and says so.
        assert tokenless.proc is not None
        code = await asyncio.to_thread(tokenless.proc.wait, 30)
        assert code == 2, tokenless.output()
        assert "no credentials" in tokenless.output() or "token" in tokenless.output()
    assert all(n["nodeId"] != node_id for n in (await admin.call("node.list"))["nodes"])


async def _connected(admin: RawClient, node_id: str) -> bool:
    return any(n["nodeId"] == node_id and n["connected"] for n in (await admin.call("node.list"))["nodes"])


async def test_a_rejected_node_is_disconnected_and_refused(gateway: GatewayProcess, admin: RawClient,
                                                          tmp_path: Path) -> None:
    with NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name="intruder") as node:
        request = await pending_request(admin, "intruder")
        await admin.call("node.pair.reject", {"requestId": request["requestId"]})
        await until(lambda: "rejected" in node.output() and "connect refused" in node.output(), 20,
                    "the node to be refused")
        listing = await admin.call("node.pair.list")
        assert [n["nodeId"] for n in listing["rejected"]] == [request["nodeId"]]
        assert not await _connected(admin, request["nodeId"])


async def test_node_connections_need_a_device_and_unpaired_nodes_can_do_nothing(gateway: GatewayProcess,
                                                                                admin: RawClient) -> None:
    anonymous = await RawClient.open(gateway.url)
    refused = await anonymous.handshake(gateway.token, role="node", scopes=[], client_id="node-host", mode="node")
    assert refused["error"]["details"]["code"] == "DEVICE_IDENTITY_REQUIRED"
    await anonymous.close()

    device = DeviceKey()
    raw = await RawClient.open(gateway.url)
    hello = await raw.connect_with(node_params(device, gateway.token or "", nonce_of(raw), name="stranger"))
    assert hello["ok"] and hello["payload"]["auth"]["paired"] is False
    assert hello["payload"]["auth"]["requestId"]
    # One store, but a node is not an operator device: device.pair.list shows it only as a pending request with
    # role node (as OpenClaw lists nodes, so its Control UI can approve them), never paired or rejected there.
    devices = await admin.call("device.pair.list")
    mine = [(section, d) for section, entries in devices.items() for d in entries if d["deviceId"] == device.id]
    assert [(section, d["role"], d["requestId"]) for section, d in mine] == [
        ("pending", "node", hello["payload"]["auth"]["requestId"])]
    for method, body in (("node.event", {"event": "host.stats", "payloadJSON": "{}"}),
                         ("node.invoke.result", {"id": "x", "ok": True})):
        answer = await raw.req(method, body)
        assert answer["error"]["code"] == "NOT_PAIRED", answer
    operator_only = await raw.req("node.list")
    assert operator_only["error"]["code"] == "FORBIDDEN"
    await raw.close()


def test_the_node_host_loads_nothing_of_the_gateway_server() -> None:
    """A node machine needs only the node host's dependencies: importing it must not pull in the server."""
    import subprocess
    import sys

    from tests.support.gateway_proc import ROOT

    code = ("import sys, nodes.cli, nodes.host; "
            "print([m for m in ('starlette', 'uvicorn', 'sqlalchemy', 'pydantic', 'alembic', "
            "'gateway.composition.gateway', "
            "'gateway.dispatch.dispatcher') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
