"""The node's canvas: one page in the node's Chromium that the agent shows things on and looks at.

Commands (OpenClaw's names and params): ``canvas.present {url?, placement?}``, ``canvas.hide``,
``canvas.navigate {url}``, ``canvas.eval {javaScript}``, ``canvas.snapshot {format, maxWidth, quality}``,
``canvas.a2ui.push {messages}`` / ``canvas.a2ui.pushJSONL {jsonl}``, ``canvas.a2ui.reset``.

The canvas is a window of the node's Chromium. ``canvas.present``'s placement is applied to it for real: ``x``
and ``y`` move the window (``window.screenX``/``screenY`` in the page), ``width`` and ``height`` size its
viewport (what a snapshot captures); ``canvas.hide`` minimizes the window. ``canvas.snapshot`` reads the
window back from Chromium (DevTools ``Browser.getWindowBounds``) and says whether it is shown and where
(``visible``, ``placement``), beside the image of its content. ``PLACEMENT_RANGES`` are the ranges the MCP
shim's schema states too.

A2UI is drawn by the gateway's canvas host page (``/__remoteclaw__/canvas/``), which this page loads when it
has nothing else to show. A button pressed on a surface calls back into the node (a Playwright binding),
and the node sends the gateway an ``agent.request`` node event: the action, with its resolved context,
becomes a message in the session that pushed the surface.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from nodes.browser.chromium import Chromium
from nodes.errors import CommandError

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

__all__ = ["CANVAS_COMMANDS", "PLACEMENT_RANGES", "Canvas", "canvas_host_url"]

CANVAS_COMMANDS = ("canvas.present", "canvas.hide", "canvas.navigate", "canvas.eval", "canvas.snapshot",
                   "canvas.a2ui.push", "canvas.a2ui.pushJSONL", "canvas.a2ui.reset")
HOST_PATH = "/__remoteclaw__/canvas/"
DEFAULT_SIZE = (1280, 800)
MAX_JSONL_BYTES = 1_000_000
PLACEMENT_RANGES: dict[str, tuple[int, int]] = {"x": (0, 10_000), "y": (0, 10_000),
                                                "width": (1, 4096), "height": (1, 4096)}
"""Where the canvas window may go and how big it may be, in CSS pixels (mcp_shim/tools/canvas.py agrees)."""

Emit = Callable[[str, dict[str, Any]], Awaitable[None]]


def canvas_host_url(gateway_ws_url: str) -> str:
    """The gateway's canvas host page, from the WebSocket URL the node connects to."""
    parts = urlsplit(gateway_ws_url)
    scheme = "https" if parts.scheme == "wss" else "http"
    return f"{scheme}://{parts.netloc}{HOST_PATH}"


def _number(params: dict[str, Any], name: str, low: float, high: float, *, prefix: str = "") -> float | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not low <= value <= high:
        raise CommandError("INVALID_REQUEST", f"{prefix}{name} must be a number from {low:g} to {high:g}")
    return float(value)


class Canvas:
    """The canvas page and what the agent last pushed to it."""

    def __init__(self, chromium: Chromium, host_url: str, emit: Emit) -> None:
        self.chromium = chromium
        self.host_url = host_url
        self.emit = emit
        self.visible = False
        self.placement: dict[str, float] = {}
        self._window_id: int | None = None
        self.session_key: str | None = None
        self._context: BrowserContext | None = None
        self._page: Page | None = None
        self._lock = asyncio.Lock()

    async def page(self) -> Page:
        async with self._lock:
            if self._page is not None and not self._page.is_closed() and self.chromium.running:
                return self._page
            browser = await self.chromium.browser()
            width, height = DEFAULT_SIZE
            self._context = await browser.new_context(viewport={"width": width, "height": height},
                                                      device_scale_factor=1)
            await self._context.expose_binding("remoteclawA2UIAction", self._action)
            self._page = await self._context.new_page()
            self._window_id = None
            return self._page

    async def close(self) -> None:
        if self._context is not None:
            await self._context.close()
            self._context = self._page = None

    # -- commands ------------------------------------------------------------------------------

    async def run(self, command: str, params: dict[str, Any]) -> dict[str, Any]:
        handler = {"canvas.present": self.present, "canvas.hide": self.hide, "canvas.navigate": self.navigate,
                   "canvas.eval": self.eval, "canvas.snapshot": self.snapshot, "canvas.a2ui.push": self.a2ui_push,
                   "canvas.a2ui.pushJSONL": self.a2ui_push_jsonl, "canvas.a2ui.reset": self.a2ui_reset}[command]
        return await handler(params)

    def _url(self, raw: Any) -> str:
        if not isinstance(raw, str) or not raw.strip():
            raise CommandError("INVALID_REQUEST", "url must be a non-empty string")
        url = urljoin(self.host_url, raw.strip())  # a path is taken as one on the gateway's canvas host
        if urlsplit(url).scheme not in ("http", "https", "data", "about"):
            raise CommandError("INVALID_REQUEST", f"the canvas opens http, https, data and about URLs, not {url}")
        return url

    async def _goto(self, url: str) -> Page:
        page = await self.page()
        try:
            await page.goto(url, wait_until="load", timeout=30_000)
        except Exception as exc:
            raise CommandError("UNAVAILABLE", f"the canvas could not load {url}: {str(exc).splitlines()[0]}") from None
        return page

    async def _window(self, page: Page, bounds: dict[str, Any] | None = None) -> dict[str, Any]:
        """The canvas window's bounds in Chromium, after applying ``bounds`` (DevTools ``Browser.*``)."""
        cdp = await page.context.new_cdp_session(page)
        try:
            if self._window_id is None:
                self._window_id = int((await cdp.send("Browser.getWindowForTarget"))["windowId"])
            if bounds:
                await cdp.send("Browser.setWindowBounds", {"windowId": self._window_id, "bounds": bounds})
            return dict((await cdp.send("Browser.getWindowBounds", {"windowId": self._window_id}))["bounds"])
        finally:
            await cdp.detach()

    async def _show(self, page: Page) -> dict[str, Any]:
        """Un-minimize the window (a minimized one cannot be moved or sized: DevTools refuses both at once)."""
        self.visible = True
        return await self._window(page, {"windowState": "normal"})

    async def where(self, page: Page) -> dict[str, Any]:
        """``{visible, placement}`` as Chromium has them now, not as they were asked for."""
        bounds = await self._window(page)
        size = page.viewport_size or {"width": DEFAULT_SIZE[0], "height": DEFAULT_SIZE[1]}
        return {"visible": bounds.get("windowState") != "minimized",
                "placement": {"x": bounds.get("left", 0), "y": bounds.get("top", 0),
                              "width": size["width"], "height": size["height"]}}

    async def present(self, params: dict[str, Any]) -> dict[str, Any]:
        placement = params.get("placement") or {}
        if not isinstance(placement, dict):
            raise CommandError("INVALID_REQUEST", "placement must be an object {x, y, width, height}")
        sizes = {k: _number(placement, k, low, high, prefix="placement.")
                 for k, (low, high) in PLACEMENT_RANGES.items()}
        page = await self.page()
        await self._show(page)
        if sizes["width"] or sizes["height"]:
            viewport = page.viewport_size or {"width": DEFAULT_SIZE[0], "height": DEFAULT_SIZE[1]}
            await page.set_viewport_size({"width": int(sizes["width"] or viewport["width"]),
                                          "height": int(sizes["height"] or viewport["height"])})
        if sizes["x"] is not None or sizes["y"] is not None:
            now = await self._window(page)
            await self._window(page, {"left": int(now["left"] if sizes["x"] is None else sizes["x"]),
                                      "top": int(now["top"] if sizes["y"] is None else sizes["y"])})
        if params.get("url"):
            await self._goto(self._url(params["url"]))
        elif page.url in ("about:blank", ""):
            await self._goto(self.host_url)
        state = await self.where(page)
        self.placement = state["placement"]
        return {"ok": True, "url": page.url, **state}

    async def hide(self, _params: dict[str, Any]) -> dict[str, Any]:
        """Minimize the canvas window; the page and its state stay (``canvas.present`` shows it again)."""
        page = await self.page()
        await self._window(page, {"windowState": "minimized"})
        self.visible = False
        return {"ok": True, **await self.where(page)}

    async def navigate(self, params: dict[str, Any]) -> dict[str, Any]:
        page = await self._goto(self._url(params.get("url")))
        return {"ok": True, "url": page.url, "title": await page.title()}

    async def eval(self, params: dict[str, Any]) -> dict[str, Any]:
        code = params.get("javaScript", params.get("script"))
        if not isinstance(code, str) or not code.strip():
            raise CommandError("INVALID_REQUEST", "javaScript must be a non-empty string")
        page = await self.page()
        try:
            value = await page.evaluate(code)
        except Exception as exc:
            raise CommandError("EVAL_FAILED", f"the script failed: {str(exc).splitlines()[0]}") from None
        return {"ok": True, "result": value}

    async def snapshot(self, params: dict[str, Any]) -> dict[str, Any]:
        fmt = str(params.get("format") or "png").lower()
        if fmt == "jpg":
            fmt = "jpeg"
        if fmt not in ("png", "jpeg"):
            raise CommandError("INVALID_REQUEST", "format must be png or jpeg")
        max_width = _number(params, "maxWidth", 1, 10_000)
        quality = _number(params, "quality", 0, 100)
        page = await self.page()
        size = page.viewport_size or {"width": DEFAULT_SIZE[0], "height": DEFAULT_SIZE[1]}
        scale = min(1.0, max_width / size["width"]) if max_width else 1.0
        shot: dict[str, Any] = {"format": fmt, "clip": {"x": 0, "y": 0, "width": size["width"],
                                                        "height": size["height"], "scale": scale}}
        if fmt == "jpeg":
            shot["quality"] = round(quality * 100 if quality is not None and quality <= 1 else quality or 85)
        # The DevTools call scales while it captures: no image library needed to honour maxWidth.
        cdp = await page.context.new_cdp_session(page)
        try:
            data = (await cdp.send("Page.captureScreenshot", shot))["data"]
        finally:
            await cdp.detach()
        return {"format": "jpg" if fmt == "jpeg" else "png", "base64": data,
                "width": round(size["width"] * scale), "height": round(size["height"] * scale),
                **await self.where(page)}

    # -- A2UI ------------------------------------------------------------------------------------

    async def _host_page(self) -> Page:
        page = await self.page()
        if not page.url.startswith(self.host_url) or not await page.evaluate("() => !!window.remoteclawA2UI"):
            page = await self._goto(self.host_url)
            if not await page.evaluate("() => !!window.remoteclawA2UI"):
                raise CommandError("UNAVAILABLE", f"{self.host_url} is not a remoteclaw canvas host (A2UI needs a "
                                                 f"remoteclaw gateway)")
        await self._show(page)  # pushing a surface shows the canvas, as presenting does
        return page

    async def a2ui_push(self, params: dict[str, Any]) -> dict[str, Any]:
        messages = params.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise CommandError("INVALID_REQUEST", "messages must be a list of A2UI message objects")
        return await self._push(messages, params)

    async def a2ui_push_jsonl(self, params: dict[str, Any]) -> dict[str, Any]:
        jsonl = params.get("jsonl")
        if not isinstance(jsonl, str) or len(jsonl.encode()) > MAX_JSONL_BYTES:
            raise CommandError("INVALID_REQUEST", f"jsonl must be a string of at most {MAX_JSONL_BYTES} bytes")
        messages = []
        for number, line in enumerate(jsonl.splitlines(), 1):
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:
                raise CommandError("INVALID_REQUEST", f"line {number}: not JSON ({exc})") from None
            if not isinstance(message, dict):
                raise CommandError("INVALID_REQUEST", f"line {number}: must be a JSON object")
            messages.append(message)
        return await self._push(messages, params)

    async def _push(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
        if isinstance(params.get("sessionKey"), str) and params["sessionKey"]:
            self.session_key = params["sessionKey"]
        page = await self._host_page()
        try:
            result = await page.evaluate("(m) => window.remoteclawA2UI.push(m)", messages)
        except Exception as exc:
            raise CommandError("INVALID_REQUEST", f"the renderer refused the messages: "
                                                 f"{str(exc).splitlines()[0]}") from None
        return {"ok": True, "messages": len(messages), **(result if isinstance(result, dict) else {})}

    async def a2ui_reset(self, _params: dict[str, Any]) -> dict[str, Any]:
        page = await self.page()
        if page.url.startswith(self.host_url) and await page.evaluate("() => !!window.remoteclawA2UI"):
            await page.evaluate("() => window.remoteclawA2UI.reset()")
        return {"ok": True}

    async def _action(self, source: Any, action: Any) -> bool:
        """A button on an A2UI surface was pressed: hand it to the agent as a message.

        Only the gateway's own canvas host page may: any other page the canvas shows (``canvas.navigate``
        can load anything) sees the binding too, and must not be able to speak to the agent as the owner.
        """
        frame = source.get("frame") if isinstance(source, dict) else None
        if frame is None or not str(frame.url).startswith(self.host_url) or not isinstance(action, dict):
            return False
        name = str(action.get("name") or "action")
        context = action.get("context") or {}
        message = (f'[canvas] The user pressed "{name}" on A2UI surface {action.get("surfaceId")} '
                   f'(component {action.get("sourceComponentId")}).\n'
                   f"Context: {json.dumps(context, ensure_ascii=False, sort_keys=True)}")
        await self.emit("agent.request", {"message": message, "sessionKey": self.session_key, "deliver": True,
                                          "a2uiAction": action})
        return True
