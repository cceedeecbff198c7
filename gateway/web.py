"""The web chat page served at ``GET /``: plain HTML, CSS and JS shipped in ``gateway/static``.

The three files are stitched into one self-contained document once per process, so the page
needs no extra routes and no build step. Its Content-Security-Policy allows only that inline
script and style (pinned by hash) and WebSocket/HTTP calls back to this origin: even if some
model text slipped past the page's escaping, it could not run as script.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from importlib import resources

__all__ = ["index_html", "page_headers"]


def _asset(name: str) -> str:
    return resources.files("gateway").joinpath("static", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@functools.cache
def index_html() -> str:
    """The assembled page (cached: the assets do not change while the process runs)."""
    css, js = _asset("style.css"), _asset("app.js")
    if "</script" in js.lower() or "</style" in css.lower():
        raise RuntimeError("web chat assets must not contain closing script/style tags")
    csp = "; ".join([
        "default-src 'none'",
        f"script-src {_sha256(js)}",
        f"style-src {_sha256(css)}",
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
    ])
    page = _asset("index.html")
    # CSP first: the CSS and JS are inserted verbatim and must not be scanned for placeholders.
    head, _, tail = page.partition("{{CSS}}")
    head = head.replace("{{CSP}}", csp)
    middle, _, end = tail.partition("{{JS}}")
    return head + css + middle + js + end


def page_headers() -> dict[str, str]:
    """Headers worth sending with the page (the ``GET /`` route may pass them to its response)."""
    return {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
            "X-Frame-Options": "DENY"}
