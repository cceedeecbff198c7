"""The canvas and the browser of our node, driven the way an agent drives them: the real MCP shim, the real
gateway, our node host, real headless Chromium, pages served on 127.0.0.1.

Assertions are on effects: the page's text changed after a click, the screenshot file on the gateway's
disk is a PNG, the snapshot decodes to pixels where the A2UI card was drawn, a button press became a
message in the session's transcript.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_shim.shim import Shim, error_text, shim_env
from tests.nodes.test_node_host import pair
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.pages import FORM_PAGE, PageServer
from tests.support.requires import require
from tests.support.waiting import until
from tests.support.ws import RawClient

pytestmark = pytest.mark.timeout(180)

EXAMPLES = Path(__file__).resolve().parents[3] / "gateway" / "canvas" / "examples"


def browser_ready() -> None:
    require(shutil.which("chromium") is not None, "Debian's chromium is not installed")


async def call(shim: Shim, tool: str, args: dict[str, Any]) -> Any:
    result = await shim.call(tool, args, timeout=60)
    assert not result.get("isError"), error_text(result)
    return json.loads(result["content"][0]["text"])


async def browser(shim: Shim, method: str, path: str, body: Any = None, query: Any = None) -> dict[str, Any]:
    args: dict[str, Any] = {"method": method, "path": path}
    if body is not None:
        args["body"] = body
    if query is not None:
        args["query"] = query
    return await shim.call("browser_request", args, timeout=60)


def payload(result: dict[str, Any]) -> Any:
    assert not result.get("isError"), error_text(result)
    return json.loads(result["content"][0]["text"])


async def test_an_agent_drives_a_loopback_page_through_the_shim_gateway_and_node(
        gateway: GatewayProcess, admin: RawClient, tmp_path: Path) -> None:
    browser_ready()
    with PageServer({"/form": FORM_PAGE, "/second": "<title>Second</title><p>second page</p>"}) as site, \
            NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name="browserbox",
                            browser=True) as node:
        node.browser_settings(allowPrivateNetwork=False)
        node_id = await pair(admin, node)
        listed = await admin.call("node.describe", {"nodeId": node_id})
        assert "browser.proxy" in listed["commands"] and "canvas.snapshot" in listed["commands"]
        shim = await Shim.start(shim_env(gateway, tmp_path))
        try:
            await shim.initialize()
            refused = await browser(shim, "POST", "/tabs/open", {"url": site.url("/form")})
            assert refused.get("isError") and "private or loopback" in error_text(refused)
            assert site.hits == []  # refused before any request left the browser

            node.browser_settings(allowPrivateNetwork=True)  # read at every request: no restart
            tab = payload(await browser(shim, "POST", "/tabs/open", {"url": site.url("/form")}))
            assert tab["title"] == "Order form" and tab["targetId"]

            snap = payload(await browser(shim, "GET", "/snapshot", query={"interactive": True}))
            refs = {v["name"]: k for k, v in snap["refs"].items()}
            assert {"Your name", "Place order", "Second page"} <= set(refs), snap["snapshot"]
            assert f'button "Place order" [ref={refs["Place order"]}]' in snap["snapshot"]

            payload(await browser(shim, "GET", "/snapshot", query={"diff": True}))  # the baseline for the diff
            payload(await browser(shim, "POST", "/act", {"kind": "type", "ref": refs["Your name"], "text": "Ada"}))
            payload(await browser(shim, "POST", "/act", {"kind": "click", "ref": refs["Place order"]}))
            text = payload(await browser(shim, "GET", "/text"))
            assert "Ordered for Ada" in text["text"]
            diff = payload(await browser(shim, "GET", "/snapshot", query={"diff": True}))
            assert '+ - paragraph "Ordered for Ada"' in diff["snapshot"], diff["snapshot"]

            found = payload(await browser(shim, "GET", "/find", query={"query": "Second page"}))
            assert found["matches"] and found["matches"][0]["tag"] == "a"
            payload(await browser(shim, "POST", "/act", {"kind": "click", "ref": found["matches"][0]["ref"]}))
            waited = payload(await browser(shim, "POST", "/act", {"kind": "wait", "text": "second page"}))
            assert waited["url"].endswith("/second")

            shot = payload(await browser(shim, "POST", "/screenshot", {}))
            saved = Path(shot["path"])  # rewritten to the gateway's copy
            assert saved.is_relative_to(gateway.state_dir / "outbound" / "browser")
            assert (await asyncio.to_thread(saved.read_bytes))[:8] == b"\x89PNG\r\n\x1a\n"

            evaluate = {"kind": "evaluate", "fn": "() => document.title"}
            off = await browser(shim, "POST", "/act", evaluate)
            assert off.get("isError") and "evaluate is disabled" in error_text(off)
            node.browser_settings(allowPrivateNetwork=True, evaluateEnabled=True)
            assert payload(await browser(shim, "POST", "/act", evaluate))["result"] == "Second"

            bad = await browser(shim, "POST", "/act", {"kind": "click", "ref": "e9999"})
            assert bad.get("isError") and "take a new snapshot" in error_text(bad)
            unknown = await browser(shim, "GET", "/nowhere")
            assert unknown.get("isError") and "no route GET /nowhere" in error_text(unknown)
        finally:
            await shim.close()


def decode_png(b64: str) -> Any:
    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(b64))).convert("RGB")


def dark_pixels(image: Any, box: tuple[int, int, int, int]) -> int:
    histogram = image.crop(box).convert("L").histogram()
    return sum(histogram[:100])


async def test_a2ui_drawn_on_the_canvas_is_seen_and_a_button_press_reaches_the_session(
        gateway: GatewayProcess, admin: RawClient, tmp_path: Path) -> None:
    browser_ready()
    with NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name="canvasbox",
                         browser=True) as node:
        await pair(admin, node)
        shim = await Shim.start(shim_env(gateway, tmp_path, session_key="agent:main:canvas-test"))
        try:
            await shim.initialize()
            shown = await call(shim, "canvas_present", {"nodeId": "canvasbox", "width": 800, "height": 600})
            assert shown["payload"]["url"].endswith("/__remoteclaw__/canvas/")
            blank = await shim.call("canvas_snapshot", {"nodeId": "canvasbox"})
            empty = decode_png(blank["content"][0]["data"])

            bad = (EXAMPLES / "hello-v08.jsonl").read_text().replace('"Button"', '"Buton"')
            refused = await shim.call("canvas_a2ui_push", {"nodeId": "canvasbox", "jsonl": bad})
            assert refused.get("isError")
            assert "line 1: surfaceUpdate.components[13].component: unknown component 'Buton'" in error_text(refused)

            jsonl = (EXAMPLES / "hello-v08.jsonl").read_text()
            pushed = await call(shim, "canvas_a2ui_push", {"nodeId": "canvasbox", "jsonl": jsonl})
            assert pushed["payload"]["surfaces"] == ["main"]

            picture = await shim.call("canvas_snapshot", {"nodeId": "canvasbox", "format": "png"})
            block = picture["content"][0]
            assert block["type"] == "image" and block["mimeType"] == "image/png"
            image = decode_png(block["data"])
            assert image.size == (800, 600)
            title_area = (0, 0, 800, 150)  # the card's h1 is drawn near the top
            assert dark_pixels(image, title_area) > 200 > dark_pixels(empty, title_area)
            small = await shim.call("canvas_snapshot", {"nodeId": "canvasbox", "format": "jpeg", "maxWidth": 400,
                                                        "quality": 0.6})
            assert small["content"][0]["mimeType"] == "image/jpeg"
            assert decode_png(small["content"][0]["data"]).size == (400, 300)

            title = await call(shim, "canvas_eval", {"nodeId": "canvasbox", "javaScript":
                                                     "document.querySelector('[data-a2ui-id=title]').textContent"})
            assert title["payload"]["result"] == "Hello from the agent"

            # The user types a name and presses Send (real DOM events on the node's page).
            await call(shim, "canvas_eval", {"nodeId": "canvasbox", "javaScript": """
                const input = document.querySelector('[data-a2ui-id=name] input');
                input.value = 'Ada Lovelace';
                input.dispatchEvent(new Event('input', {bubbles: true}));
                document.querySelector('[data-a2ui-type=Button]').click();
                true"""})

            async def pressed() -> dict[str, Any] | None:
                history = await admin.call("chat.history", {"sessionKey": "agent:main:canvas-test"})
                return next((m for m in history["messages"] if "[canvas]" in (m.get("text") or "")), None)

            message = await until(pressed, 30, "the button press in the session's transcript")
            assert 'pressed "submit"' in message["text"] and '"name": "Ada Lovelace"' in message["text"]
            assert message["role"] == "user"

            # Another page shown on the canvas sees the binding too, but may not speak for the user.
            evil = ("data:text/html,<script>window.remoteclawA2UIAction({name: 'evil', surfaceId: 'x', "
                    "sourceComponentId: 'y', context: {}})</script>")
            await call(shim, "canvas_navigate", {"nodeId": "canvasbox", "url": evil})
            await asyncio.sleep(1.5)
            history = await admin.call("chat.history", {"sessionKey": "agent:main:canvas-test"})
            assert not [m for m in history["messages"] if 'pressed "evil"' in (m.get("text") or "")]
            await call(shim, "canvas_present", {"nodeId": "canvasbox", "url": "/__remoteclaw__/canvas/"})

            await call(shim, "canvas_a2ui_reset", {"nodeId": "canvasbox"})
            cleared = await call(shim, "canvas_eval", {"nodeId": "canvasbox", "javaScript":
                                                       "document.querySelectorAll('[data-a2ui-id]').length"})
            assert cleared["payload"]["result"] == 0
        finally:
            await shim.close()


def test_the_canvas_host_page_cannot_be_framed(gateway: GatewayProcess) -> None:
    with urllib.request.urlopen(f"{gateway.http}/__remoteclaw__/canvas/", timeout=10) as response:
        page = response.read().decode()
        assert response.headers["X-Frame-Options"] == "DENY"
        assert response.headers["Content-Security-Policy"] == "frame-ancestors 'none'"
    assert "window.remoteclawA2UI" in page and "script-src 'sha256-" in page


async def test_a_node_without_chromium_offers_neither_and_says_why(
        gateway: GatewayProcess, admin: RawClient, tmp_path: Path) -> None:
    node = NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name="headless-box", browser=True)
    node.extra_env = {"REMOTECLAW_CHROMIUM": "/nonexistent/chromium"}
    with node:
        node_id = await pair(admin, node)
        described = await admin.call("node.describe", {"nodeId": node_id})
        assert not any(c.startswith(("canvas.", "browser.")) for c in described["commands"])
        assert "canvas and browser commands are off" in node.output()
        shim = await Shim.start(shim_env(gateway, tmp_path))
        try:
            await shim.initialize()

            async def explained() -> str | None:
                result = await shim.call("canvas_present", {"nodeId": "headless-box"})
                text = error_text(result)
                return text if "REMOTECLAW_CHROMIUM" in text else None

            text = await until(explained, 15, "the node's reason to reach the gateway")
            assert "does not offer canvas.present" in text
            missing = await shim.call("browser_request", {"method": "GET", "path": "/tabs"})
            assert missing.get("isError")
            assert "browser" in error_text(missing)
        finally:
            await shim.close()


def test_the_shim_and_the_node_agree_on_placement_ranges() -> None:
    from mcp_shim.tools import BUILTIN
    from nodes.browser.canvas import PLACEMENT_RANGES

    schema = next(t for t in BUILTIN if t.name == "canvas_present").input_schema["properties"]
    assert {k: (schema[k]["minimum"], schema[k]["maximum"]) for k in PLACEMENT_RANGES} == PLACEMENT_RANGES


async def test_present_places_the_canvas_and_hide_hides_it_as_a_snapshot_shows(
        gateway: GatewayProcess, admin: RawClient, tmp_path: Path) -> None:
    browser_ready()
    with NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name="placebox",
                         browser=True) as node:
        await pair(admin, node)
        shim = await Shim.start(shim_env(gateway, tmp_path))
        try:
            await shim.initialize()
            refused = await shim.call("canvas_present", {"nodeId": "placebox", "x": -5})
            assert "at /x: must be >= 0" in error_text(refused)  # the shim's schema, before the node is asked
            too_wide = await shim.call("canvas_present", {"nodeId": "placebox", "width": 5000})
            assert "at /width: must be <= 4096" in error_text(too_wide)

            shown = await call(shim, "canvas_present", {"nodeId": "placebox", "x": 120, "y": 40, "width": 640,
                                                        "height": 360})
            assert shown["payload"]["placement"] == {"x": 120, "y": 40, "width": 640, "height": 360}

            async def snapshot() -> tuple[Any, dict[str, Any]]:
                result = await shim.call("canvas_snapshot", {"nodeId": "placebox"})
                image, where = result["content"]
                return decode_png(image["data"]), json.loads(where["text"])

            image, where = await snapshot()
            assert image.size == (640, 360)
            assert where["visible"] is True and where["placement"] == {"x": 120, "y": 40, "width": 640, "height": 360}
            inside = await call(shim, "canvas_eval", {"nodeId": "placebox", "javaScript":
                                                      "[window.screenX, window.screenY, innerWidth, innerHeight]"})
            assert inside["payload"]["result"] == [120, 40, 640, 360]  # the page itself sees where it is

            hidden = await call(shim, "canvas_hide", {"nodeId": "placebox"})
            assert hidden["payload"]["visible"] is False
            _image, where = await snapshot()
            assert where["visible"] is False  # read back from Chromium's window, not from a flag

            moved = await call(shim, "canvas_present", {"nodeId": "placebox", "x": 300})
            assert moved["payload"]["visible"] is True
            _image, where = await snapshot()
            assert where["visible"] is True and where["placement"] == {"x": 300, "y": 40, "width": 640, "height": 360}
        finally:
            await shim.close()
