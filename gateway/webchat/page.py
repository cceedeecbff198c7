"""The web chat page served at ``GET /``: plain HTML, CSS and JS shipped in ``gateway/webchat/static``.

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

__all__ = ["index_html", "page_headers", "stitch"]


def stitch(package: str, html: str, css: str, js: str, directives: list[str]) -> str:
    """One document from ``<package>/static/{html,css,js}``: the CSS and JS inlined at ``{{CSS}}`` and
    ``{{JS}}``, and a Content-Security-Policy at ``{{CSP}}`` that pins both by hash, plus ``directives``."""
    def asset(name: str) -> str:
        return resources.files(package).joinpath("static", name).read_text(encoding="utf-8")

    style, script = asset(css), asset(js)
    if "</script" in script.lower() or "</style" in style.lower():
        raise RuntimeError(f"{package} page assets must not contain closing script/style tags")
    csp = "; ".join(["default-src 'none'", f"script-src {_sha256(script)}", f"style-src {_sha256(style)}",
                     *directives])
    # CSP first: the CSS and JS are inserted verbatim and must not be scanned for placeholders.
    head, _, tail = asset(html).partition("{{CSS}}")
    head = head.replace("{{CSP}}", csp)
    middle, _, end = tail.partition("{{JS}}")
    return head + style + middle + script + end


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@functools.cache
def index_html() -> str:
    """The assembled page (cached: the assets do not change while the process runs)."""
    return stitch("gateway.webchat", "index.html", "style.css", "app.js",
                  ["connect-src 'self'", "img-src 'self' data: blob:", "media-src data:", "base-uri 'none'",
                   "form-action 'none'"])


def page_headers() -> dict[str, str]:
    """Headers worth sending with the page (the ``GET /`` route may pass them to its response)."""
    return {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
            "X-Frame-Options": "DENY"}
