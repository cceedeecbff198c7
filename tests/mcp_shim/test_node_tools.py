"""The node tools through the real shim against a real node host (ours, no browser): each call's effect is
checked where it lands (the gateway's pairing store, the node's own answer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.mcp_shim.conftest import ShimFactory
from tests.nodes.test_node_host import pending_request, token_file
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.waiting import until
from tests.support.ws import RawClient

pytestmark = pytest.mark.timeout(120)


async def test_pairing_naming_and_running_a_node_through_the_node_tools(
        gateway: GatewayProcess, admin: RawClient, start_shim: ShimFactory, tmp_path: Path) -> None:
    shim = await start_shim(gateway, plugin_manifest={"tools": []})
    with NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name="toolbox") as node:
        request = await pending_request(admin, "toolbox")
        listed = await shim.call_ok("node_pair_list")
        assert request["requestId"] in [r["requestId"] for r in listed["pending"]]

        rejected = await shim.call_ok("node_pair_reject", {"requestId": request["requestId"]})
        assert rejected["decision"] == "rejected"

        async def status() -> dict[str, Any]:
            nodes = (await admin.call("node.list"))["nodes"]
            return next(n for n in nodes if n["nodeId"] == request["nodeId"])

        assert (await status())["status"] == "rejected"

        approved = await shim.call_ok("node_pair_approve", {"requestId": request["requestId"]})
        assert approved["decision"] == "approved" and (await status())["status"] == "approved"
        await until(lambda: token_file(node).get("token"), 60, "the node to save its token")
        await until(lambda: _connected(admin, request["nodeId"]), 60,
                    "the node to connect as paired")

        renamed = await shim.call_ok("node_rename", {"nodeId": request["nodeId"], "displayName": "Workbench"})
        assert renamed["displayName"] == "Workbench"
        assert (await status())["displayName"] == "Workbench"
        nodes = await shim.call_ok("node_list")
        assert [n["displayName"] for n in nodes["nodes"] if n["nodeId"] == request["nodeId"]] == ["Workbench"]

        described = await shim.call_ok("node_describe", {"nodeId": "Workbench"})
        assert "system.which" in described["commands"] and described["connected"] is True
        ran = await shim.call_ok("node_invoke", {"nodeId": "Workbench", "command": "system.which",
                                                 "params": {"bins": ["sh"]}})
        assert ran["payload"]["bins"]["sh"].endswith("/sh")  # answered by the node process itself


async def _connected(admin: RawClient, node_id: str) -> bool:
    nodes = (await admin.call("node.list"))["nodes"]
    return any(n["nodeId"] == node_id and n["connected"] and n["paired"] for n in nodes)
