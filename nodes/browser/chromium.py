"""One headless Chromium per node, launched on first use and kept: a cold launch costs 1.5-2 s, a new page
a few milliseconds. Playwright for Python drives the system's Chromium binary (``executable_path``), since
``playwright install`` needs a download that servers often cannot make.

Which binary: ``REMOTECLAW_CHROMIUM`` if set, else the first of chromium, chromium-browser, google-chrome on
PATH. ``find()`` says why the browser is unavailable, so the node can leave its commands undeclared and say
so in its log.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright

__all__ = ["Chromium", "find"]

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_ARGS = (
    "--no-sandbox",  # nodes often run as root in a container, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # no calls home: a closed network makes them fail noisily
    "--disable-component-update",
    "--disable-sync",
)


def find() -> tuple[str | None, str | None]:
    """``(executable, None)`` when the browser can run here, else ``(None, reason)``."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        from gateway.extras import install_hint

        return None, f"Playwright for Python is not installed ({install_hint('browser')})"
    override = os.environ.get("REMOTECLAW_CHROMIUM")
    if override:
        path = shutil.which(override) or (override if os.access(override, os.X_OK) else None)
        return (path, None) if path else (None, f"REMOTECLAW_CHROMIUM={override} is not an executable")
    for name in _NAMES:
        path = shutil.which(name)
        if path:
            return path, None
    return None, "no Chromium on this node (apt-get install chromium, or set REMOTECLAW_CHROMIUM)"


class Chromium:
    """The node's browser process: ``browser()`` launches it once (relaunching if it died)."""

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._lock = asyncio.Lock()

    @property
    def running(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    async def browser(self) -> Browser:
        async with self._lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            if self._playwright is None:
                from playwright.async_api import async_playwright

                self._playwright = await async_playwright().start()
            self._browser = await self._playwright.chromium.launch(
                executable_path=self.executable, headless=True, args=list(_ARGS))
            return self._browser

    async def version(self) -> str | None:
        return self._browser.version if self.running and self._browser is not None else None

    async def close(self) -> None:
        async with self._lock:
            if self._browser is not None:
                with contextlib.suppress(Exception):  # already gone
                    await self._browser.close()
                self._browser = None
            if self._playwright is not None:
                await self._playwright.stop()
                self._playwright = None

    def describe(self) -> dict[str, Any]:
        return {"executablePath": self.executable, "running": self.running, "headless": True}
