"""Browser waits are bounded, and a wait the caller gave up on stops on the node.

Real gateway, our node host with real headless Chromium, a page on 127.0.0.1. ``POST /wait {timeout: 0}``
looks once (Playwright alone would read 0 as "forever", holding the call until the gateway gives up), and a
``node.invoke`` whose timeout passes sends ``node.invoke.cancel``, which stops the node's task (its log
says so) instead of leaving it waiting.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.nodes.browser.test_browser_canvas import browser_ready
from tests.nodes.test_node_host import pair
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.pages import PageServer
from tests.support.waiting import until
from tests.support.ws import RawClient

pytestmark = pytest.mark.timeout(180)

PAGE = "<title>Waiting</title><p id='here'>here</p>"


async def test_waits_are_bounded_and_a_wait_given_up_on_is_cancelled_on_the_node(
        gateway: GatewayProcess, admin: RawClient, tmp_path: Path) -> None:
    browser_ready()
    with PageServer({"/w": PAGE}) as site, \
            NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name="waitbox",
                            browser=True) as node:
        node.browser_settings(allowPrivateNetwork=True)
        node_id = await pair(admin, node)
        tab = await admin.call("browser.request", {"method": "POST", "path": "/tabs/open",
                                                   "body": {"url": site.url("/w")}}, timeout=60)

        async def wait(body: dict[str, object]) -> dict[str, object]:
            # The gateway gives the node 3 s (+ its 5 s margin): an unbounded wait would come back as
            # the gateway's own "did not answer" error instead of the route's answer.
            res = await admin.req("browser.request", {"method": "POST", "path": "/wait", "timeoutMs": 3000,
                                                      "body": {"targetId": tab["targetId"], **body}}, timeout=30)
            assert res["ok"], res
            return dict(res["payload"])

        assert (await wait({"selector": "#missing", "timeout": 0}))["present"] is False
        assert (await wait({"selector": "#here", "timeout": 0}))["present"] is True
        assert (await wait({"selector": "#missing", "timeoutMs": 0}))["present"] is False
        too_long = await admin.req("browser.request", {"method": "POST", "path": "/wait",
                                                       "body": {"selector": "#missing", "timeout": 60_000}})
        assert not too_long["ok"] and "timeout must be between 0 and 30000" in too_long["error"]["message"]

        # The caller gives up after 1.5 s on a wait of up to 30 s: the node is told and stops it.
        gave_up = await admin.req("node.invoke", {
            "nodeId": node_id, "command": "browser.proxy", "timeoutMs": 1500, "idempotencyKey": uuid.uuid4().hex,
            "params": {"method": "POST", "path": "/wait", "body": {"selector": "#late", "timeout": 30_000}}},
            timeout=30)
        assert not gave_up["ok"] and gave_up["error"]["details"]["code"] == "NODE_INVOKE_TIMEOUT", gave_up
        invoke_id = gave_up["error"]["details"]["invokeId"]
        await until(lambda: f"cancelled invocation {invoke_id}" in node.output(), 10, "the node to stop the wait")
        # The node still answers at once afterwards.
        assert (await wait({"selector": "#here", "timeout": 0}))["present"] is True
