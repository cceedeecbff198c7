"""``browser.request`` on our gateway, served by OpenClaw's own node host and its browser control.

OpenClaw's ``openclaw node run`` declares ``browser.proxy`` like ours; our gateway routes the agent's
``browser_request`` (from the real MCP shim) to it, and OpenClaw's browser control drives Debian's Chromium:
the same routes and bodies work against either kind of node. Fails rather than skips without the package.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.compat.test_openclaw_nodes import remoteclaw
from tests.mcp_shim.shim import Shim, error_text, shim_env
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import OpenClawNodeHost
from tests.support.pages import FORM_PAGE, PageServer
from tests.support.requires import require
from tests.support.waiting import until
from tests.support.ws import operator

pytestmark = pytest.mark.timeout(240)


async def test_an_agent_drives_openclaws_node_browser_through_our_gateway(
        fresh_gateway: GatewayProcess, tmp_path: Path) -> None:
    require(shutil.which("chromium") is not None, "Debian's chromium is not installed")
    gw = fresh_gateway
    admin = await operator(gw.url, gw.token or "")
    with PageServer({"/form": FORM_PAGE}) as site, \
            OpenClawNodeHost(tmp_path / "oc-home", gw.port, gw.token or "", name="oc-browser", browser=True):
        async def request() -> dict[str, Any] | None:
            pending = (await admin.call("node.pair.list"))["pending"]
            return next((r for r in pending if r["displayName"] == "oc-browser"), None)

        found = await until(request, 90, "a pairing request from OpenClaw's node host")
        assert "browser.proxy" in found["commands"]
        assert remoteclaw(gw, "nodes", "approve", found["requestId"]).returncode == 0

        shim = await Shim.start(shim_env(gw, tmp_path))
        try:
            await shim.initialize()

            async def call(method: str, path: str, **extra: Any) -> Any:
                result = await shim.call("browser_request", {"method": method, "path": path, "timeoutMs": 30000,
                                                             **extra}, timeout=90)
                assert not result.get("isError"), error_text(result)
                return json.loads(result["content"][0]["text"])

            async def ready() -> Any:  # its browser control starts a moment after the node connects
                result = await shim.call("browser_request", {"method": "GET", "path": "/"}, timeout=60)
                return None if result.get("isError") else result

            await until(ready, 60, "OpenClaw's node to answer browser.request")
            tab = await call("POST", "/tabs/open", body={"url": site.url("/form")})
            assert tab["targetId"] and tab["url"] == site.url("/form")
            snap = await call("GET", "/snapshot", query={"interactive": True})
            refs = {v["name"]: k for k, v in snap["refs"].items()}
            assert f'button "Place order" [ref={refs["Place order"]}]' in snap["snapshot"]
            await call("POST", "/act", body={"kind": "type", "ref": refs["Your name"], "text": "Grace"})
            await call("POST", "/act", body={"kind": "click", "ref": refs["Place order"]})
            text = await call("GET", "/text")
            assert "Ordered for Grace" in json.dumps(text)
        finally:
            await shim.close()
    await admin.close()
