"""Browser control: the HTTP-style routes of OpenClaw's browser control server, served in-process.

The gateway's ``browser.request {method, path, query, body}`` reaches the node as ``browser.proxy``;
``BrowserControl.handle`` answers it with ``(status, body)`` exactly as the route would over HTTP, so
agent instructions written for an OpenClaw node work here, and PinchTab's operations are covered too
(``GET /find``, ``POST /wait``, snapshots with ``diff`` and ``selector``). The browser is the node's one
Chromium; tabs are pages of one context, named by a ``targetId`` (a prefix is enough).
"""

from __future__ import annotations

import asyncio
import base64
import collections
import re
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodes.browser import actions, snapshot
from nodes.browser.chromium import Chromium
from nodes.browser.settings import BrowserSettings, UrlRefused, check_url
from nodes.browser.tab import LOG_SIZE, RouteError, Tab

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Dialog, Download, Page

__all__ = ["BrowserControl", "RouteError"]

NAV_TIMEOUT_MS = 30_000
MAX_TEXT_CHARS = 200_000
MAX_WAIT_MS = 30_000
"""The longest any wait may be (PinchTab's cap): a wait never outlives the caller's patience by much."""
DEFAULT_WAIT_MS = 10_000


def _now_ms() -> int:
    return int(time.time() * 1000)


def _flag(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("1", "true", "yes", "on"))


def _int(source: dict[str, Any], name: str, *, low: int, high: int) -> int | None:
    value = source.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise RouteError(400, f"{name} must be an integer") from None
    if not low <= number <= high:
        raise RouteError(400, f"{name} must be between {low} and {high}")
    return number


async def _holds(locator: Any, state: str) -> bool:
    """Whether ``locator`` is in ``state`` (attached, detached, visible, hidden) right now, without waiting."""
    if state in ("attached", "detached"):
        return (await locator.count() > 0) == (state == "attached")
    return bool(await locator.is_visible()) == (state == "visible")


def _str(source: dict[str, Any], name: str) -> str | None:
    value = source.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise RouteError(400, f"{name} must be a string")
    return value


class BrowserControl:
    """The node's browser control routes. ``handle`` never raises: every failure is a status and a body."""

    def __init__(self, chromium: Chromium, state: Path) -> None:
        self.chromium = chromium
        self.state = state
        self.files = state / "browser-files"
        self.tabs: dict[str, Tab] = {}
        self.current: str | None = None
        self._context: BrowserContext | None = None
        self._lock = asyncio.Lock()
        self._downloads: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=64)
        self._dialog_plan: dict[str, Any] | None = None
        self._routes: dict[tuple[str, str], Any] = {
            ("GET", "/"): self.status, ("POST", "/start"): self.start, ("POST", "/stop"): self.stop,
            ("GET", "/tabs"): self.list_tabs, ("POST", "/tabs/open"): self.open_tab,
            ("POST", "/tabs/focus"): self.focus_tab, ("POST", "/tabs/action"): self.tab_action,
            ("POST", "/navigate"): self.navigate, ("GET", "/snapshot"): self.snapshot, ("GET", "/find"): self.find,
            ("POST", "/act"): self.act, ("POST", "/wait"): self.wait, ("POST", "/screenshot"): self.screenshot,
            ("POST", "/pdf"): self.pdf, ("GET", "/text"): self.text, ("GET", "/cookies"): self.cookies,
            ("POST", "/cookies/set"): self.set_cookie, ("POST", "/cookies/clear"): self.clear_cookies,
            ("GET", "/console"): self.console, ("GET", "/errors"): self.errors, ("GET", "/requests"): self.requests,
            ("GET", "/dialogs"): self.dialogs, ("POST", "/hooks/dialog"): self.arm_dialog,
            ("POST", "/download"): self.download, ("POST", "/wait/download"): self.wait_download,
            ("POST", "/highlight"): self.highlight,
        }

    def settings(self) -> BrowserSettings:
        return BrowserSettings.load(self.state)

    # -- dispatch ------------------------------------------------------------------------------

    async def handle(self, method: str, path: str, query: dict[str, Any] | None,
                     body: Any) -> tuple[int, Any]:
        method = method.upper()
        path = "/" + path.strip().split("?", 1)[0].strip("/")
        query = {k: v for k, v in (query or {}).items() if v is not None}
        if body is not None and not isinstance(body, dict):
            return 400, {"error": "body must be a JSON object"}
        body = body or {}
        args = {**query, **body}
        if "tabId" in args and "targetId" not in args:  # PinchTab's name for the same thing
            args["targetId"] = args["tabId"]
        route = self._routes.get((method, path))
        if route is None and method == "DELETE" and path.startswith("/tabs/"):
            route, args["targetId"] = self.close_tab, path.removeprefix("/tabs/")
        if route is None:
            known = sorted({p for _, p in self._routes})
            return 404, {"error": f"no route {method} {path} (known: {', '.join(known)}, DELETE /tabs/:targetId)"}
        try:
            return 200, await route(args)
        except RouteError as err:
            return err.status, err.body()
        except UrlRefused as exc:
            return 403, {"error": str(exc), "code": "URL_REFUSED"}
        except ValueError as exc:  # a bad browser.json
            return 500, {"error": str(exc)}
        except Exception as exc:
            name = type(exc).__name__
            if name == "TimeoutError":
                return 504, {"error": f"timed out: {str(exc).splitlines()[0]}", "code": "TIMEOUT"}
            return 500, {"error": f"{name}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")}

    # -- browser and tabs ----------------------------------------------------------------------

    async def context(self) -> BrowserContext:
        async with self._lock:
            if self._context is not None and self.chromium.running:
                return self._context
            self.tabs.clear()
            self.current = None
            browser = await self.chromium.browser()
            self._context = await browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 800})
            await self._context.route("**/*", self._guard)
            self._context.on("page", self._on_page)
            return self._context

    async def _guard(self, route: Any) -> None:
        """Navigations (typed, clicked or redirected by script) go through the same URL check."""
        request = route.request
        if request.is_navigation_request():
            try:
                await check_url(request.url, self.settings())
            except (UrlRefused, ValueError) as exc:
                await route.abort("blockedbyclient")
                tab = self._tab_of(request.frame.page) if request.frame else None
                if tab is not None:
                    tab.errors.append({"ts": _now_ms(), "message": f"navigation refused: {exc}"})
                return
        await route.continue_()

    def _tab_of(self, page: Page) -> Tab | None:
        return next((t for t in self.tabs.values() if t.page is page), None)

    def _on_page(self, page: Page) -> None:
        self._adopt(page)

    def _adopt(self, page: Page) -> Tab:
        """Track a page (opened by us, or by the site as a popup) as a tab."""
        found = self._tab_of(page)
        if found is not None:
            return found
        tab = Tab(secrets.token_hex(8).upper(), page)
        self.tabs[tab.target_id] = tab
        self.current = tab.target_id
        page.on("console", lambda m: tab.console.append({"ts": _now_ms(), "type": m.type, "text": m.text}))
        page.on("pageerror", lambda e: tab.errors.append({"ts": _now_ms(), "message": str(e)}))
        page.on("requestfinished", lambda r: tab.requests.append(
            {"ts": _now_ms(), "method": r.method, "url": r.url, "resourceType": r.resource_type}))
        page.on("requestfailed", lambda r: tab.requests.append(
            {"ts": _now_ms(), "method": r.method, "url": r.url, "failure": r.failure}))
        page.on("dialog", lambda d: asyncio.ensure_future(self._dialog(tab, d)))
        page.on("download", lambda d: asyncio.ensure_future(self._download(d)))
        page.on("close", lambda _p: self._forget(tab.target_id))
        return tab

    def _forget(self, target_id: str) -> None:
        self.tabs.pop(target_id, None)
        if self.current == target_id:
            self.current = next(reversed(self.tabs), None) if self.tabs else None

    async def _dialog(self, tab: Tab, dialog: Dialog) -> None:
        plan = self._dialog_plan or {}
        self._dialog_plan = None
        accept = plan.get("accept", dialog.type in ("alert", "beforeunload"))
        tab.dialogs.append({"ts": _now_ms(), "type": dialog.type, "message": dialog.message,
                            "handled": "accepted" if accept else "dismissed"})
        if accept:
            await dialog.accept(plan.get("promptText") or "")
        else:
            await dialog.dismiss()

    async def _download(self, download: Download) -> None:
        folder = self.settings().downloads_dir
        folder.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^\w.\- ]", "_", download.suggested_filename or "download")[:120] or "download"
        target = folder / name
        n = 1
        while target.exists():
            target = folder / f"{target.stem.rsplit('-', 1)[0]}-{n}{target.suffix}"
            n += 1
        await download.save_as(target)
        entry = {"path": str(target), "suggestedFilename": download.suggested_filename, "url": download.url}
        if self._downloads.full():
            self._downloads.get_nowait()
        self._downloads.put_nowait(entry)

    async def tab(self, args: dict[str, Any], *, create: bool = True) -> Tab:
        """The tab ``targetId`` names (a unique prefix is enough), else the current one (opened if none)."""
        await self.context()
        wanted = _str(args, "targetId")
        if wanted:
            matches = [t for tid, t in self.tabs.items() if tid == wanted.upper() or tid.startswith(wanted.upper())]
            if len(matches) != 1:
                raise RouteError(404 if not matches else 409, f"targetId {wanted} "
                                 f"{'matches no open tab' if not matches else 'matches several tabs'} "
                                 f"(GET /tabs lists them)", "TAB_NOT_FOUND" if not matches else "TAB_AMBIGUOUS")
            self.current = matches[0].target_id
            return matches[0]
        if self.current and self.current in self.tabs:
            return self.tabs[self.current]
        if not create:
            raise RouteError(404, "no tab is open (POST /tabs/open)", "TAB_NOT_FOUND")
        context = await self.context()
        return self._adopt(await context.new_page())

    async def status(self, _args: dict[str, Any]) -> dict[str, Any]:
        settings = self.settings()
        return {"enabled": True, "running": self.chromium.running, "profile": "remoteclaw",
                "tabCount": len(self.tabs), "currentTargetId": self.current, **self.chromium.describe(),
                "version": await self.chromium.version(), "evaluateEnabled": settings.evaluate_enabled,
                "allowPrivateNetwork": settings.allow_private_network,
                "downloadsDir": str(settings.downloads_dir)}

    async def start(self, _args: dict[str, Any]) -> dict[str, Any]:
        await self.context()
        return {"ok": True, "running": True}

    async def stop(self, _args: dict[str, Any]) -> dict[str, Any]:
        async with self._lock:
            if self._context is not None:
                await self._context.close()
                self._context = None
            self.tabs.clear()
            self.current = None
        return {"ok": True, "stopped": True}

    async def close(self) -> None:
        if self._context is not None:
            await self.stop({})

    async def list_tabs(self, _args: dict[str, Any]) -> dict[str, Any]:
        if not self.chromium.running or self._context is None:
            return {"running": False, "tabs": []}
        return {"running": True, "tabs": [await self._describe(t) for t in self.tabs.values()]}

    async def _describe(self, tab: Tab) -> dict[str, Any]:
        try:
            title = await tab.page.title()
        except Exception:  # navigating right now
            title = ""
        return {**tab.describe(), "title": title, "current": tab.target_id == self.current}

    async def open_tab(self, args: dict[str, Any]) -> dict[str, Any]:
        url = _str(args, "url")
        if not url:
            raise RouteError(400, "url is required")
        await check_url(url, self.settings())
        context = await self.context()
        tab = self._adopt(await context.new_page())
        if url != "about:blank":
            await self._goto(tab, url, args)
        return await self._describe(tab)

    async def focus_tab(self, args: dict[str, Any]) -> dict[str, Any]:
        if not _str(args, "targetId"):
            raise RouteError(400, "targetId is required")
        tab = await self.tab(args)
        await tab.page.bring_to_front()
        return {"ok": True, "targetId": tab.target_id}

    async def close_tab(self, args: dict[str, Any]) -> dict[str, Any]:
        tab = await self.tab(args, create=False)
        await tab.page.close()
        self._forget(tab.target_id)
        return {"ok": True, "targetId": tab.target_id}

    async def tab_action(self, args: dict[str, Any]) -> dict[str, Any]:
        action = _str(args, "action")
        if action == "list":
            return await self.list_tabs(args)
        if action == "new":
            return await self.open_tab({"url": args.get("url") or "about:blank"})
        ordered = list(self.tabs.values())
        index = _int(args, "index", low=0, high=max(0, len(ordered) - 1))
        chosen = ordered[index] if index is not None and ordered else None
        if action in ("close", "select"):
            target = {"targetId": chosen.target_id} if chosen else args
            return await (self.close_tab(target) if action == "close" else self.focus_tab(target))
        raise RouteError(400, "action must be one of list, new, close, select")

    async def _goto(self, tab: Tab, url: str, args: dict[str, Any]) -> None:
        timeout = _int(args, "timeoutMs", low=1, high=120_000) or NAV_TIMEOUT_MS
        try:
            await tab.page.goto(url, timeout=timeout, wait_until="load")
        except Exception as exc:
            if "ERR_BLOCKED_BY_CLIENT" in str(exc):
                raise UrlRefused(f"navigation to {url} was refused by this node's URL policy") from None
            raise
        final = tab.page.url
        if final != url:  # a redirect: the page where it ended must pass too
            try:
                await check_url(final, self.settings())
            except UrlRefused:
                await tab.page.goto("about:blank")
                raise

    async def navigate(self, args: dict[str, Any]) -> dict[str, Any]:
        url = _str(args, "url")
        if not url:
            raise RouteError(400, "url is required")
        await check_url(url, self.settings())
        tab = await self.tab(args)
        await self._goto(tab, url, args)
        return {"ok": True, "targetId": tab.target_id, "url": tab.page.url, "title": await tab.page.title()}

    # -- reading the page ----------------------------------------------------------------------

    async def snapshot(self, args: dict[str, Any]) -> dict[str, Any]:
        fmt = _str(args, "format") or "ai"
        if fmt not in ("ai", "aria"):
            raise RouteError(400, "format must be ai or aria")
        opts = {"interactive": _flag(args.get("interactive")), "compact": _flag(args.get("compact")),
                "depth": _int(args, "depth", low=1, high=100), "selector": _str(args, "selector"),
                "urls": _flag(args.get("urls")), "maxNodes": _int(args, "limit", low=1, high=10_000) or 2000}
        max_chars = _int(args, "maxChars", low=100, high=1_000_000)
        tab = await self.tab(args)
        raw = await tab.page.evaluate(snapshot.script(), opts)
        if raw.get("error"):
            raise RouteError(400, raw["error"])
        out: dict[str, Any] = {"ok": True, "format": fmt, "targetId": tab.target_id, "url": tab.page.url,
                               "title": raw.get("title", "")}
        if fmt == "aria":
            return {**out, "nodes": raw["nodes"], "truncated": raw["truncated"]}
        text, cut = snapshot.format_nodes(raw["nodes"], max_chars)
        key = repr(sorted((k, v) for k, v in opts.items()))
        previous = tab.snapshots.get(key)
        tab.snapshots[key] = text
        out.update(snapshot=text, refs=raw["refs"], truncated=cut or raw["truncated"],
                   stats={"lines": text.count("\n") + 1 if text else 0, "chars": len(text),
                          "refs": len(raw["refs"]),
                          "interactive": sum(1 for n in raw["nodes"] if n["interactive"])})
        if _flag(args.get("diff")):
            changes = snapshot.diff_lines(previous, text)
            out.update(diff=changes, snapshot="\n".join(
                [f"+ {line}" for line in changes["added"]] + [f"- {line}" for line in changes["removed"]]))
        return out

    async def find(self, args: dict[str, Any]) -> dict[str, Any]:
        """Elements by visible text, accessible name or CSS selector, each with a ref to act on."""
        query = _str(args, "query") or _str(args, "text") or _str(args, "selector")
        if not query:
            raise RouteError(400, "query is required (text to look for, or a CSS selector)")
        limit = _int(args, "limit", low=1, high=200) or 20
        tab = await self.tab(args)
        matches = await tab.page.evaluate(actions.find_script(), {"query": query, "limit": limit})
        return {"ok": True, "targetId": tab.target_id, "url": tab.page.url, "query": query, "matches": matches,
                "count": len(matches)}

    async def text(self, args: dict[str, Any]) -> dict[str, Any]:
        tab = await self.tab(args)
        max_chars = _int(args, "maxChars", low=1, high=MAX_TEXT_CHARS) or MAX_TEXT_CHARS
        selector = _str(args, "selector")
        raw = await (tab.page.locator(selector).first.inner_text(timeout=5000) if selector
                     else tab.page.evaluate("() => document.body ? document.body.innerText : ''"))
        text = raw if _flag(args.get("raw")) else re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]+", " ", raw)).strip()
        return {"ok": True, "targetId": tab.target_id, "url": tab.page.url, "title": await tab.page.title(),
                "text": text[:max_chars], "truncated": len(text) > max_chars}

    # -- acting --------------------------------------------------------------------------------

    async def act(self, args: dict[str, Any]) -> dict[str, Any]:
        tab = await self.tab(args)
        result = await actions.run(self, tab, args, depth=0)
        return {"ok": True, "targetId": tab.target_id, "url": tab.page.url, **result}

    async def wait(self, args: dict[str, Any]) -> dict[str, Any]:
        """PinchTab's wait: for a selector (``{present}`` either way, never an error), or a fixed time.

        Every wait is bounded: at most ``MAX_WAIT_MS`` (30 s, PinchTab's cap), 10 s when not told, and a
        timeout of 0 means "look once, do not wait" (Playwright would read 0 as "wait forever").
        """
        tab = await self.tab(args)
        selector = _str(args, "selector")
        timeout = _int(args, "timeoutMs", low=0, high=MAX_WAIT_MS)
        timeout = _int(args, "timeout", low=0, high=MAX_WAIT_MS) if timeout is None else timeout
        timeout = DEFAULT_WAIT_MS if timeout is None else timeout
        if selector:
            try:
                state = _str(args, "state") or "attached"
                if state not in ("attached", "detached", "visible", "hidden"):
                    raise RouteError(400, "state must be attached, detached, visible or hidden")
                first = tab.page.locator(selector).first
                if timeout == 0:  # one look now (Playwright's own 0 would mean no limit at all)
                    present = await _holds(first, state)
                else:
                    await first.wait_for(state=state, timeout=timeout)  # type: ignore[arg-type]
                    present = True
            except Exception as exc:
                if type(exc).__name__ != "TimeoutError":
                    raise RouteError(400, f"selector: {str(exc).splitlines()[0]}") from None
                present = False
            return {"ok": True, "targetId": tab.target_id, "selector": selector, "present": present}
        ms = _int(args, "ms", low=0, high=MAX_WAIT_MS)
        if ms is None:
            raise RouteError(400, f"wait needs selector or ms (at most {MAX_WAIT_MS})")
        await asyncio.sleep(ms / 1000)
        return {"ok": True, "targetId": tab.target_id, "waitedMs": ms}

    async def highlight(self, args: dict[str, Any]) -> dict[str, Any]:
        tab = await self.tab(args)
        locator = actions.locate(tab, args)
        await locator.evaluate("(el) => { const o = el.style.outline; el.style.outline = '3px solid #f43f5e';"
                               " setTimeout(() => { el.style.outline = o; }, 2000); }")
        return {"ok": True, "targetId": tab.target_id}

    # -- files ---------------------------------------------------------------------------------

    def _file(self, suffix: str) -> Path:
        self.files.mkdir(parents=True, exist_ok=True)
        old = sorted(self.files.iterdir(), key=lambda p: p.stat().st_mtime)
        for stale in old[:-50]:  # keep the last fifty; the gateway has its own copy of each
            stale.unlink(missing_ok=True)
        return self.files / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}{suffix}"

    async def screenshot(self, args: dict[str, Any]) -> dict[str, Any]:
        kind = (_str(args, "type") or "png").lower()
        if kind == "jpg":
            kind = "jpeg"
        if kind not in ("png", "jpeg"):
            raise RouteError(400, "type must be png or jpeg")
        quality = _int(args, "quality", low=1, high=100)
        if quality is not None:
            kind = "jpeg"
        tab = await self.tab(args)
        path = self._file(".png" if kind == "png" else ".jpg")
        options: dict[str, Any] = {"path": str(path), "type": kind}
        if kind == "jpeg":
            options["quality"] = quality or 80
        if args.get("ref") or args.get("element") or args.get("selector"):
            locate_args = {**args, "selector": args.get("selector") or args.get("element")}
            await actions.locate(tab, locate_args).screenshot(timeout=10_000, **options)
        else:
            await tab.page.screenshot(full_page=_flag(args.get("fullPage")), **options)
        return {"ok": True, "path": str(path), "targetId": tab.target_id, "url": tab.page.url,
                "mimeType": f"image/{kind}"}

    async def pdf(self, args: dict[str, Any]) -> dict[str, Any]:
        tab = await self.tab(args)
        scale = args.get("scale", 1)
        if not isinstance(scale, int | float) or not 0.1 <= scale <= 2:
            raise RouteError(400, "scale must be a number from 0.1 to 2")
        path = self._file(".pdf")
        options: dict[str, Any] = {"path": str(path), "landscape": _flag(args.get("landscape")),
                                   "scale": float(scale), "print_background": True}
        if _str(args, "pageRanges"):
            options["page_ranges"] = args["pageRanges"]
        await tab.page.pdf(**options)
        return {"ok": True, "path": str(path), "targetId": tab.target_id, "url": tab.page.url,
                "mimeType": "application/pdf"}

    async def download(self, args: dict[str, Any]) -> dict[str, Any]:
        """Click ``ref`` and wait for the download it starts."""
        tab = await self.tab(args)
        timeout = _int(args, "timeoutMs", low=1, high=120_000) or 30_000
        self._drain_downloads()
        await actions.locate(tab, args).click(timeout=10_000)
        return {"ok": True, "targetId": tab.target_id, "download": await self._next_download(timeout)}

    async def wait_download(self, args: dict[str, Any]) -> dict[str, Any]:
        timeout = _int(args, "timeoutMs", low=1, high=120_000) or 30_000
        return {"ok": True, "download": await self._next_download(timeout)}

    def _drain_downloads(self) -> None:
        while not self._downloads.empty():
            self._downloads.get_nowait()

    async def _next_download(self, timeout_ms: int) -> dict[str, Any]:
        try:
            return await asyncio.wait_for(self._downloads.get(), timeout_ms / 1000)
        except TimeoutError:
            raise RouteError(504, f"no download finished within {timeout_ms} ms", "TIMEOUT") from None

    # -- cookies, logs, dialogs ----------------------------------------------------------------

    async def cookies(self, args: dict[str, Any]) -> dict[str, Any]:
        context = await self.context()
        if args.get("all") is not None and _flag(args.get("all")):
            return {"ok": True, "cookies": await context.cookies()}
        tab = await self.tab(args)
        return {"ok": True, "targetId": tab.target_id, "cookies": await context.cookies(tab.page.url)}

    async def set_cookie(self, args: dict[str, Any]) -> dict[str, Any]:
        cookie = args.get("cookie")
        if not isinstance(cookie, dict) or not cookie.get("name") or "value" not in cookie:
            raise RouteError(400, "cookie must be an object with name, value and url (or domain and path)")
        if not cookie.get("url") and not cookie.get("domain"):
            tab = await self.tab(args)
            cookie = {**cookie, "url": tab.page.url}
        allowed = {"name", "value", "url", "domain", "path", "expires", "httpOnly", "secure", "sameSite"}
        await (await self.context()).add_cookies([{k: v for k, v in cookie.items() if k in allowed}])  # type: ignore[list-item]
        return {"ok": True}

    async def clear_cookies(self, _args: dict[str, Any]) -> dict[str, Any]:
        await (await self.context()).clear_cookies()
        return {"ok": True}

    async def _log(self, args: dict[str, Any], name: str) -> dict[str, Any]:
        tab = await self.tab(args)
        entries: collections.deque[dict[str, Any]] = getattr(tab, name)
        items = list(entries)
        if _flag(args.get("clear")):
            entries.clear()
        limit = _int(args, "limit", low=1, high=LOG_SIZE)
        return {"ok": True, "targetId": tab.target_id, name: items[-limit:] if limit else items}

    async def console(self, args: dict[str, Any]) -> dict[str, Any]:
        return await self._log(args, "console")

    async def errors(self, args: dict[str, Any]) -> dict[str, Any]:
        return await self._log(args, "errors")

    async def requests(self, args: dict[str, Any]) -> dict[str, Any]:
        return await self._log(args, "requests")

    async def dialogs(self, args: dict[str, Any]) -> dict[str, Any]:
        return await self._log(args, "dialogs")

    async def arm_dialog(self, args: dict[str, Any]) -> dict[str, Any]:
        """How to answer the next dialog (default: accept alerts, dismiss confirms and prompts)."""
        if not isinstance(args.get("accept"), bool):
            raise RouteError(400, "accept must be true or false")
        self._dialog_plan = {"accept": args["accept"], "promptText": _str(args, "promptText")}
        return {"ok": True, "armed": True}


def encode_file(path: str) -> str:
    return base64.b64encode(Path(path).read_bytes()).decode()
