"""Browser screenshots and PDFs reach a remote MCP client as content, not as a path on the gateway's disk.

Real gateway, our node host with real Chromium, a page on 127.0.0.1, and a client of ``/mcp`` holding an
owner token made with the real CLI: the screenshot comes back as MCP image content (PNG bytes), the PDF as an
embedded resource whose URI the client can fetch with its own token (and nobody can without one).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gateway.mcp_http.test_remote_mcp import HEADERS, initialize, mcp_token, url
from tests.nodes.browser.test_browser_canvas import browser_ready
from tests.nodes.test_node_host import pair
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.pages import PageServer
from tests.support.ws import RawClient

pytestmark = pytest.mark.timeout(180)


async def test_screenshots_and_pdfs_come_back_as_mcp_content_over_http(
        gateway: GatewayProcess, admin: RawClient, tmp_path: Path) -> None:
    browser_ready()
    token = mcp_token(gateway, "--name", "browser-files", "--owner")
    with PageServer({"/doc": "<title>Doc</title><h1>A document</h1>"}) as site, \
            NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name="shotbox",
                            browser=True) as node:
        node.browser_settings(allowPrivateNetwork=True)
        await pair(admin, node)
        async with httpx.AsyncClient(timeout=90) as client:
            sid = await initialize(client, gateway, token)
            h = {**HEADERS, "accept": "application/json", "authorization": f"Bearer {token}", "mcp-session-id": sid}
            ids = iter(range(10, 100))

            async def browser(method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
                args: dict[str, Any] = {"method": method, "path": path, **({"body": body} if body else {})}
                r = await client.post(url(gateway), headers=h, json={
                    "jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
                    "params": {"name": "browser_request", "arguments": args}})
                assert r.status_code == 200, r.text
                result = r.json()["result"]
                assert not result.get("isError"), result
                return dict(result)

            await browser("POST", "/tabs/open", {"url": site.url("/doc")})
            shot = await browser("POST", "/screenshot")
            text, image = shot["content"]
            assert text["type"] == "text" and '"files"' in text["text"]
            assert image["type"] == "image" and image["mimeType"] == "image/png"
            assert base64.b64decode(image["data"])[:8] == b"\x89PNG\r\n\x1a\n"

            pdf = await browser("POST", "/pdf")
            _text, resource = pdf["content"]
            assert resource["type"] == "resource"
            embedded = resource["resource"]
            assert embedded["mimeType"] == "application/pdf"
            data = base64.b64decode(embedded["blob"])
            assert data[:5] == b"%PDF-"

            # The resource's URI is the gateway's own, served to the client's token and to nobody else.
            assert embedded["uri"].startswith(f"http://127.0.0.1:{gateway.port}/__remoteclaw__/browser/files/")
            fetched = await client.get(embedded["uri"], headers={"authorization": f"Bearer {token}"})
            assert fetched.status_code == 200 and fetched.content == data
            assert fetched.headers["content-type"] == "application/pdf"
            assert (await client.get(embedded["uri"])).status_code == 401
            assert (await client.get(embedded["uri"], headers={"authorization": "Bearer rcm_wrong"})).status_code == 401
            baseline = mcp_token(gateway, "--name", "not-owner")
            assert (await client.get(embedded["uri"],
                                     headers={"authorization": f"Bearer {baseline}"})).status_code == 403
            escape = embedded["uri"].rsplit("/", 1)[0] + "/..%2F..%2Fgateway.token"
            assert (await client.get(escape, headers={"authorization": f"Bearer {token}"})).status_code == 404
