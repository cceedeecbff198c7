"""The desktop of a paired node, end to end: real Xvfb, D-Bus and AT-SPI buses, zenity, Cua Driver, gateway, shim.

Our node host runs inside the desktop session with ``cua-driver`` from PyPI; the gateway reads its tools from it;
an owner agent's shim (the real ``mcp_shim`` process under the official MCP Python SDK) lists them with Cua
Driver's own schemas (compared with what ``cua-driver mcp`` itself lists to the same SDK) and acts on the app;
what changed is read back from the app's accessibility tree, or from zenity's own answer on stdout.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.mcp_shim.shim import shim_env
from tests.nodes.desktop.conftest import desktop_node, entry_text, window_of
from tests.nodes.test_node_host import pair
from tests.support.desktop import DesktopSession, driver_binary
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
async def desk_node(gateway: GatewayProcess, desktop: DesktopSession,
                    tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[NodeHostProcess, str]]:
    async with desktop_node(gateway, desktop, tmp_path_factory.mktemp("desknode") / "state", "deskbox") as (
            _admin, node, node_id):
        yield node, node_id


async def _driver_schemas(desktop: DesktopSession) -> dict[str, Any]:
    """What ``cua-driver mcp`` lists to the official MCP SDK, with no remoteclaw code in between (the oracle)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=driver_binary(), args=["mcp"], env=desktop.env)
    async with Client(params, mode="legacy") as client:
        return {t.name: t.input_schema for t in (await client.list_tools()).tools}


async def test_an_owner_runs_shim_lists_the_driver_tools_inspects_and_acts(
        gateway: GatewayProcess, desk_node: tuple[NodeHostProcess, str], desktop: DesktopSession,
        admin: RawClient, tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    zen = desktop.zenity("Shim test")
    await window_of(admin, zen.pid)  # on a loaded machine the dialog can take seconds to show
    oracle = await _driver_schemas(desktop)
    env = shim_env(gateway, tmp_path, session_key="agent:main:desk", profile="full")
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_shim"], env=env, cwd=str(ROOT))
    async with Client(params, mode="legacy") as client:
        by_name = {t.name: t for t in (await client.list_tools()).tools}
        desk = {n for n in by_name if n.startswith("desktop_")}
        # One tool per driver tool offered, each with the driver's own schema (one node: no nodeId added).
        offered = set(oracle) - {"check_for_update", "install_extension", "install_ffmpeg"}
        assert desk == {f"desktop_{n}" for n in offered}
        for name in ("get_window_state", "click", "type_text", "list_windows", "start_recording"):
            assert by_name[f"desktop_{name}"].input_schema == oracle[name], name
        assert by_name["desktop_list_windows"].annotations.read_only_hint is True
        assert by_name["desktop_click"].annotations.destructive_hint is True

        apps = await client.call_tool("desktop_list_apps", {})
        assert not apps.is_error and "zenity" in apps.content[0].text.lower()
        windows = await client.call_tool("desktop_list_windows", {"pid": zen.pid})
        assert not windows.is_error and "Shim test" in windows.content[0].text, windows
        wid = int(re.search(r"window_id=(\d+)", windows.content[0].text).group(1))  # type: ignore[union-attr]

        state = await client.call_tool("desktop_get_window_state", {"pid": zen.pid, "window_id": wid})
        assert not state.is_error
        text = state.content[0].text
        assert "[0] text" in text and '[2] push button "OK"' in text, text
        images = [c for c in state.content if c.type == "image"]
        assert images and images[0].mime_type == "image/png"
        assert base64.b64decode(images[0].data)[:8] == b"\x89PNG\r\n\x1a\n"

        typed = await client.call_tool("desktop_type_text", {"pid": zen.pid, "window_id": wid, "text": "from shim"})
        assert not typed.is_error, typed
        after = await client.call_tool("desktop_get_window_state", {"pid": zen.pid, "window_id": wid})
        assert 'value="from shim"' in after.content[0].text, after.content[0].text
        snapshot = re.search(r"snapshot_id=(\w+)", after.content[0].text).group(1)  # type: ignore[union-attr]
        clicked = await client.call_tool("desktop_click", {"pid": zen.pid, "element_token": f"{snapshot}:2"})
        assert not clicked.is_error, clicked
    # The click pressed OK: zenity printed what the field held and ended.
    out, _ = await asyncio.to_thread(zen.communicate, timeout=20)
    assert out.decode().strip() == "from shim" and zen.returncode == 0

    # A tool the node withholds is refused naming the node and why.
    refused = await _admin_call(gateway, "desktop.invoke", {"tool": "check_for_update"})
    assert refused["error"]["details"]["code"] == "DESKTOP_TOOL_NOT_OFFERED"
    assert "deskbox" in refused["error"]["message"] and "updateChecks" in refused["error"]["message"]


async def _admin_call(gateway: GatewayProcess, method: str, params: dict[str, Any]) -> dict[str, Any]:
    admin = await operator(gateway.url, gateway.token or "")
    try:
        return dict(await admin.req(method, params, timeout=60))
    finally:
        await admin.close()


async def test_a_recording_of_three_actions_arrives_and_replays_on_a_fresh_app(
        gateway: GatewayProcess, desk_node: tuple[NodeHostProcess, str], desktop: DesktopSession,
        admin: RawClient) -> None:
    zen = desktop.zenity("Record me")
    window = await window_of(admin, zen.pid)
    pid, wid = zen.pid, window["window_id"]
    started = await admin.call("desktop.record.start", {"sessionKey": "agent:main:rec"})
    assert started["recording"] is True and started["node"] == "deskbox"
    for piece in ("ab", "cd", "ef"):
        done = await admin.call("desktop.invoke", {"tool": "type_text",
                                                    "arguments": {"pid": pid, "window_id": wid, "text": piece}})
        assert not done.get("isError"), done
    assert (await entry_text(admin, pid, wid))[0] == "abcdef"
    saved = await admin.call("desktop.record.stop", {}, timeout=60)

    # Three turn folders, each with action.json and a screenshot, kept on the gateway with the zip.
    assert [t["turn"] for t in saved["turns"]] == ["turn-00001", "turn-00002", "turn-00003"]
    assert [t["tool"] for t in saved["turns"]] == ["type_text"] * 3
    assert all("screenshot.png" in t["images"] for t in saved["turns"])
    folder = gateway.state_dir / "desktop" / "trajectories" / saved["trajectoryId"]
    action = json.loads((folder / "turn-00002" / "action.json").read_text())
    assert action["tool"] == "type_text" and action["arguments"]["text"] == "cd"
    assert (folder / "turn-00003" / "screenshot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    zip_path = Path(saved["zipPath"])
    assert zip_path.parent.parent == gateway.state_dir / "outbound" / "desktop"  # in its session's folder
    with zipfile.ZipFile(zip_path) as zf:
        assert {"turn-00001/action.json", "turn-00001/screenshot.png"} <= set(zf.namelist())
    # Beside it, the gateway's own record: each desktop call with its result.
    assert [c["tool"] for c in saved["desktopCalls"]].count("type_text") == 3
    assert saved["sessionKey"] == "agent:main:rec"

    # The page shows it turn by turn, with the screenshots, to a credential that may read the session (the
    # address alone gets nothing: gateway.access decides).
    async with httpx.AsyncClient(timeout=30) as http:
        bare = await http.get(saved["pageUrl"])
        assert bare.status_code == 401 and "turn-00003" not in bare.text
        assert (await http.get(saved["pageUrl"], params={"token": "rcp_not-a-sign-in"})).status_code == 401
        page = await http.get(saved["pageUrl"], params={"token": gateway.token})
        assert page.status_code == 200 and "turn-00003" in page.text and "type_text" in page.text
        assert "script-src" not in page.headers["content-security-policy"]
        shot = re.search(r'src="([^"]+/turn-00001/screenshot\.png)\?token=[^"]+"', page.text)
        assert shot, page.text
        assert (await http.get(f"http://127.0.0.1:{gateway.port}{shot.group(1)}")).status_code == 401
        img = await http.get(f"http://127.0.0.1:{gateway.port}{shot.group(1)}", params={"token": gateway.token})
        assert img.status_code == 200 and img.content[:4] == b"\x89PNG"
        assert (await http.get(saved["pageUrl"].replace(saved["viewKey"], "0" * 32),
                               params={"token": gateway.token})).status_code == 404

    # Replayed on a fresh zenity, the same state: the field holds what was typed.
    fresh = desktop.zenity("Replay here")
    fresh_window = await window_of(admin, fresh.pid)
    replay = await admin.call("desktop.replay", {"trajectoryId": saved["trajectoryId"], "pid": fresh.pid,
                                                  "windowId": fresh_window["window_id"], "delayMs": 0}, timeout=90)
    assert replay["attempted"] == 3 and replay["succeeded"] == 3 and replay["failed"] == 0, replay
    assert [t["ok"] for t in replay["turns"]] == [True, True, True]
    assert (await entry_text(admin, fresh.pid, fresh_window["window_id"]))[0] == "abcdef"
    for proc in (zen, fresh):
        proc.terminate()


async def test_remoteclaw_call_desktop_matches_cua_driver_call(
        gateway: GatewayProcess, desk_node: tuple[NodeHostProcess, str], desktop: DesktopSession,
        admin: RawClient, tmp_path: Path) -> None:
    zen = desktop.zenity("Called")
    window = await window_of(admin, zen.pid)
    env = shim_env(gateway, tmp_path, session_key="agent:main:cli")
    shot = tmp_path / "shot.png"
    args = json.dumps({"pid": zen.pid, "window_id": window["window_id"]})
    proc = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "gateway.cli", "call", "desktop.get_window_state", args,
                         "--node", "deskbox", "--image-out", str(shot)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert '[2] push button "OK"' in proc.stdout and shot.read_bytes()[:4] == b"\x89PNG"
    zen.terminate()


@pytest.mark.parametrize("missing", ["display", "cua-driver"])
async def test_without_a_display_or_the_driver_no_desktop_is_declared_and_the_node_says_why(
        gateway: GatewayProcess, admin: RawClient, desktop: DesktopSession, tmp_path: Path, missing: str) -> None:
    node = NodeHostProcess(tmp_path / "state", gateway.port, token=gateway.token, name=f"plain-{missing}")
    node.extra_env = {k: v for k, v in desktop.env.items() if k != "DISPLAY"} if missing == "display" \
        else dict(desktop.env)
    if missing == "cua-driver":
        (tmp_path / "state").mkdir(parents=True)
        (tmp_path / "state" / "desktop.json").write_text(json.dumps({"driverPath": str(tmp_path / "no-cua-driver")}))
    with node:
        node_id = await pair(admin, node)
        described = await admin.call("node.describe", {"nodeId": node_id})
        assert not [c for c in described["commands"] if c.startswith("desktop.")]
        reason = "no display" if missing == "display" else "cua-driver is not at"
        for _ in range(50):
            said = (await admin.call("node.describe", {"nodeId": node_id})).get("events", {})
            if "capabilities.unavailable" in said:
                break
            await asyncio.sleep(0.2)
        assert reason in said["capabilities.unavailable"]["groups"]["desktop.*"]
        assert f"desktop commands are off: {reason}" in node.output()
        refused = await admin.req("desktop.invoke", {"tool": "list_windows", "nodeId": node_id})
        assert refused["error"]["details"]["code"] == "NOT_A_DESKTOP_NODE" and reason in refused["error"]["message"]
    shown = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "nodes", "desktop", "show"], cwd=ROOT,
                                    env=node.env(), capture_output=True, text=True, timeout=60)
    assert shown.returncode == 1
    report = json.loads(shown.stdout)
    assert report["available"] is False and report["missing"] == missing and reason in report["unavailableBecause"]
    doctor = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "gateway.cli", "doctor", "--json"],
                                     cwd=ROOT, env={**node.env(), "REMOTECLAW_STATE_DIR": str(tmp_path / "gwstate")},
                                     capture_output=True, text=True, timeout=120)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    desk = checks["desktop (for a node's Cua Driver tools)"]
    assert desk["status"] == "warn" and reason in desk["detail"] and desk["fix"]


async def test_a_remote_mcp_client_with_an_owner_token_gets_the_desktop_tools(
        gateway: GatewayProcess, desk_node: tuple[NodeHostProcess, str], desktop: DesktopSession,
        admin: RawClient) -> None:
    from tests.gateway.mcp_http.test_remote_mcp import HEADERS, initialize, mcp_token, url

    zen = desktop.zenity("Remote")
    await window_of(admin, zen.pid)
    owner = mcp_token(gateway, "--name", "desk-owner", "--owner")
    async with httpx.AsyncClient(timeout=60) as client:
        sid = await initialize(client, gateway, owner)
        h = {**HEADERS, "accept": "application/json", "authorization": f"Bearer {owner}", "mcp-session-id": sid}
        listed = (await client.post(url(gateway), headers=h, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/list"})).json()["result"]["tools"]
        by_name = {t["name"]: t for t in listed}
        oracle = await _driver_schemas(desktop)
        assert by_name["desktop_get_window_state"]["inputSchema"] == oracle["get_window_state"]
        called = (await client.post(url(gateway), headers=h, json={
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "desktop_list_windows", "arguments": {"pid": zen.pid}}})).json()["result"]
        assert not called.get("isError") and "Remote" in called["content"][0]["text"], called
        # A token that is not the owner's sees none of them.
        other = mcp_token(gateway, "--name", "desk-stranger")
        sid2 = await initialize(client, gateway, other)
        h2 = {**h, "authorization": f"Bearer {other}", "mcp-session-id": sid2}
        names = {t["name"] for t in (await client.post(url(gateway), headers=h2, json={
            "jsonrpc": "2.0", "id": 4, "method": "tools/list"})).json()["result"]["tools"]}
        assert not [n for n in names if n.startswith("desktop_")]
    zen.terminate()


async def test_with_two_desktop_nodes_every_tool_needs_a_node_id(
        gateway: GatewayProcess, desk_node: tuple[NodeHostProcess, str], desktop: DesktopSession,
        tmp_path: Path) -> None:
    """Runs last in the module: the second node stays paired."""
    async with desktop_node(gateway, desktop, tmp_path / "second", "deskbox2") as (admin, _node, second_id):
        for _ in range(50):
            listed = await admin.call("desktop.tools.list", {})
            if len(listed["nodes"]) == 2:
                break
            await asyncio.sleep(0.2)
        tool = next(t for t in listed["tools"] if t["name"] == "desktop_list_windows")
        assert "nodeId" in tool["inputSchema"]["required"] and "deskbox2" in tool["inputSchema"]["properties"][
            "nodeId"]["description"]
        ambiguous = await admin.req("desktop.invoke", {"tool": "list_windows"})
        assert ambiguous["error"]["details"]["code"] == "DESKTOP_NODE_AMBIGUOUS"
        assert "deskbox" in ambiguous["error"]["message"] and "deskbox2" in ambiguous["error"]["message"]
        zen = desktop.zenity("Second")
        got = await admin.call("desktop.invoke", {"tool": "list_windows", "nodeId": "deskbox2",
                                                  "arguments": {"pid": zen.pid}})
        assert got["nodeId"] == second_id and got["node"] == "deskbox2"
        zen.terminate()
