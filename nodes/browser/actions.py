"""``POST /act``: what an agent does to a page, one ``kind`` at a time (or a ``batch`` of them).

Kinds and fields follow OpenClaw's browser control server: click, clickCoords, type, insertText, press,
hover, scrollIntoView, drag, select, fill, resize, wait, evaluate, close, batch; plus PinchTab's focus and
scroll. Elements are named by a snapshot ``ref`` (or a CSS ``selector``); Playwright's actionability
checks (visible, enabled, stable) apply, so a click lands like a person's would.
"""

from __future__ import annotations

import asyncio
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

from nodes.browser.tab import RouteError, Tab

if TYPE_CHECKING:
    from playwright.async_api import Locator

    from nodes.browser.settings import BrowserSettings

__all__ = ["find_script", "locate", "run"]

ACTION_TIMEOUT_MS = 8_000
MAX_WAIT_MS = 30_000
MAX_BATCH = 100




@cache
def find_script() -> str:
    return resources.files("nodes.browser").joinpath("find.js").read_text(encoding="utf-8")


class BrowserControl(Protocol):
    """What an action needs of the control server (``control.BrowserControl``): its current settings."""

    def settings(self) -> BrowserSettings: ...


def _error(message: str, status: int = 400, code: str | None = None) -> Exception:
    return RouteError(status, message, code)


def locate(tab: Tab, args: dict[str, Any], ref_key: str = "ref", selector_key: str = "selector") -> Locator:
    """The element a ref (from a snapshot or find) or a CSS selector names."""
    ref, selector = args.get(ref_key), args.get(selector_key)
    if isinstance(ref, str) and ref:
        if not ref.lstrip("e").isdigit():
            raise _error(f"{ref_key} {ref!r} is not a snapshot ref (like e12)")
        return tab.page.locator(f'[data-rc-ref="{ref}"]').first
    if isinstance(selector, str) and selector:
        return tab.page.locator(selector).first
    raise _error(f"{ref_key} (a snapshot ref) or {selector_key} (a CSS selector) is required")


async def _exists(locator: Locator, what: str) -> Locator:
    if await locator.count() == 0:
        raise _error(f"{what} matches no element on the page (it may have gone: take a new snapshot)", 404,
                     "REF_NOT_FOUND")
    return locator


def _timeout(args: dict[str, Any]) -> int:
    value = args.get("timeoutMs", ACTION_TIMEOUT_MS)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 120_000:
        raise _error("timeoutMs must be an integer from 1 to 120000")
    return value


def _text(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise _error(f"{name} must be a string")
    return value


async def _element(tab: Tab, args: dict[str, Any]) -> Locator:
    locator = locate(tab, args)
    return await _exists(locator, f"ref {args['ref']}" if args.get("ref") else f"selector {args.get('selector')}")


async def run(control: BrowserControl, tab: Tab, args: dict[str, Any], *, depth: int) -> dict[str, Any]:
    kind = args.get("kind")
    page = tab.page
    if kind == "click":
        el = await _element(tab, args)
        button = args.get("button") or "left"
        if button not in ("left", "right", "middle"):
            raise _error("button must be left, right or middle")
        options: dict[str, Any] = {"button": button, "timeout": _timeout(args)}
        if args.get("modifiers"):
            options["modifiers"] = args["modifiers"]
        await (el.dblclick(**options) if args.get("doubleClick") else el.click(**options))
        return {}
    if kind == "clickCoords":
        x, y = args.get("x"), args.get("y")
        if not all(isinstance(v, int | float) and v >= 0 for v in (x, y)):
            raise _error("clickCoords needs non-negative x and y")
        await page.mouse.click(float(x), float(y), click_count=2 if args.get("doubleClick") else 1)  # type: ignore[arg-type]
        return {}
    if kind == "type":
        el = await _element(tab, args)
        text = _text(args, "text")
        if args.get("slowly"):
            await el.click(timeout=_timeout(args))
            await el.press_sequentially(text, delay=50, timeout=_timeout(args))
        else:
            await el.fill(text, timeout=_timeout(args))
        if args.get("submit"):
            await el.press("Enter", timeout=_timeout(args))
        return {}
    if kind == "insertText":
        await page.keyboard.insert_text(_text(args, "text"))
        return {}
    if kind == "press":
        key = _text(args, "key")
        if args.get("ref") or args.get("selector"):
            await (await _element(tab, args)).press(key, timeout=_timeout(args))
        else:
            await page.keyboard.press(key)
        return {}
    if kind in ("hover", "focus", "scrollIntoView"):
        el = await _element(tab, args)
        if kind == "hover":
            await el.hover(timeout=_timeout(args))
        elif kind == "focus":
            await el.focus(timeout=_timeout(args))
        else:
            await el.scroll_into_view_if_needed(timeout=_timeout(args))
        return {}
    if kind == "scroll":
        pixels = args.get("pixels", 300)
        dx, dy = args.get("deltaX", 0), args.get("deltaY", pixels)
        if not all(isinstance(v, int | float) for v in (dx, dy)):
            raise _error("pixels, deltaX and deltaY must be numbers")
        if args.get("ref") or args.get("selector"):
            await (await _element(tab, args)).evaluate("(el, d) => el.scrollBy(d[0], d[1])", [dx, dy])
        else:
            await page.mouse.wheel(float(dx), float(dy))
        return {}
    if kind == "drag":
        start = await _exists(locate(tab, args, "startRef", "startSelector"), "startRef")
        end = await _exists(locate(tab, args, "endRef", "endSelector"), "endRef")
        await start.drag_to(end, timeout=_timeout(args))
        return {}
    if kind == "select":
        values = args.get("values", [args["value"]] if isinstance(args.get("value"), str) else None)
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            raise _error("select needs values: a list of option values or labels")
        el = await _element(tab, args)
        if await el.evaluate("(e) => e.tagName") == "OPTION":  # the snapshot listed the option: use its list
            el = el.locator("xpath=ancestor::select[1]")
        try:
            chosen = await el.select_option(values, timeout=_timeout(args))
        except Exception:
            chosen = await el.select_option(label=values, timeout=_timeout(args))
        return {"selected": chosen}
    if kind == "fill":
        fields = args.get("fields")
        if fields is None and (args.get("ref") or args.get("selector")):
            fields = [{"ref": args.get("ref"), "selector": args.get("selector"), "value": args.get("value")}]
        if not isinstance(fields, list) or not fields:
            raise _error("fill needs fields: [{ref, value}] (or ref and value)")
        for i, entry in enumerate(fields):
            if not isinstance(entry, dict) or not isinstance(entry.get("value", entry.get("text")), str | bool):
                raise _error(f"fields[{i}] needs a ref and a string value")
            el = await _element(tab, entry)
            value = entry.get("value", entry.get("text"))
            if isinstance(value, bool) or entry.get("type") in ("checkbox", "radio"):
                await el.set_checked(bool(value) and value != "false", timeout=_timeout(args))
            else:
                await el.fill(str(value), timeout=_timeout(args))
        return {"filled": len(fields)}
    if kind == "resize":
        width, height = args.get("width"), args.get("height")
        if not all(isinstance(v, int) and 1 <= v <= 8192 for v in (width, height)):
            raise _error("resize needs width and height from 1 to 8192")
        await page.set_viewport_size({"width": int(width), "height": int(height)})  # type: ignore[arg-type]
        return {"viewport": {"width": width, "height": height}}
    if kind == "wait":
        return await _wait(control, tab, args)
    if kind == "evaluate":
        if not control.settings().evaluate_enabled:
            raise _error("evaluate is disabled on this node (its owner can enable it: remoteclaw node browser set "
                         "evaluateEnabled true)", 403, "EVALUATE_DISABLED")
        fn = _text(args, "fn")
        if args.get("ref") or args.get("selector"):
            value = await (await _element(tab, args)).evaluate(fn)
        else:
            value = await page.evaluate(fn)
        return {"result": value}
    if kind == "close":
        await page.close()
        return {"closed": True}
    if kind == "batch":
        if depth >= 5:
            raise _error("batch nesting exceeds 5 levels")
        steps = args.get("actions")
        if not isinstance(steps, list) or not steps or len(steps) > MAX_BATCH:
            raise _error(f"batch needs actions: a list of 1 to {MAX_BATCH} act bodies")
        results: list[dict[str, Any]] = []
        for i, step in enumerate(steps):
            if not isinstance(step, dict):
                raise _error(f"actions[{i}] must be an object")
            try:
                results.append({"ok": True, **await run(control, tab, step, depth=depth + 1)})
            except Exception as exc:
                results.append({"ok": False, "error": getattr(exc, "message", None) or str(exc).splitlines()[0]})
                if args.get("stopOnError", True):
                    break
        return {"results": results}
    raise _error("kind must be one of click, clickCoords, type, insertText, press, hover, focus, scrollIntoView, "
                 "scroll, drag, select, fill, resize, wait, evaluate, close, batch", code="KIND_REQUIRED")


async def _wait(control: BrowserControl, tab: Tab, args: dict[str, Any]) -> dict[str, Any]:
    """``act {kind: wait}``: each condition in turn, all of them within one budget of at most 30 s
    (``timeoutMs``, capped), so a wait with several conditions is bounded as a whole too."""
    page = tab.page
    deadline = asyncio.get_running_loop().time() + min(
        _timeout({"timeoutMs": args.get("timeoutMs", MAX_WAIT_MS)}), MAX_WAIT_MS) / 1000

    def left_ms() -> int:
        left = int((deadline - asyncio.get_running_loop().time()) * 1000)
        if left <= 0:
            raise _error("wait: the conditions did not all hold within timeoutMs (at most 30000)", 504, "TIMEOUT")
        return left

    done: list[str] = []
    if isinstance(args.get("timeMs"), int):
        await asyncio.sleep(min(args["timeMs"], left_ms()) / 1000)
        done.append("timeMs")
    if isinstance(args.get("selector"), str):
        await page.locator(args["selector"]).first.wait_for(state="visible", timeout=left_ms())
        done.append("selector")
    if isinstance(args.get("text"), str):
        await page.get_by_text(args["text"]).first.wait_for(state="visible", timeout=left_ms())
        done.append("text")
    if isinstance(args.get("textGone"), str):
        await page.get_by_text(args["textGone"]).first.wait_for(state="hidden", timeout=left_ms())
        done.append("textGone")
    if isinstance(args.get("url"), str):
        await page.wait_for_url(args["url"], timeout=left_ms())
        done.append("url")
    if args.get("loadState") in ("load", "domcontentloaded", "networkidle"):
        await page.wait_for_load_state(args["loadState"], timeout=left_ms())
        done.append("loadState")
    if isinstance(args.get("fn"), str):
        if not control.settings().evaluate_enabled:
            raise _error("wait with fn runs JavaScript, which is disabled on this node", 403, "EVALUATE_DISABLED")
        await page.wait_for_function(args["fn"], timeout=left_ms())
        done.append("fn")
    if not done:
        raise _error("wait needs at least one of timeMs, text, textGone, selector, url, loadState, fn")
    return {"waited": done}
