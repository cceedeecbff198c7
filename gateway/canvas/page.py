"""The canvas host page: the A2UI renderer a node's canvas shows, served at ``/__remoteclaw__/canvas/``.

Built like the web chat page (``gateway/webchat/page.py``): three static files stitched into one document once per
process, with a Content-Security-Policy that pins the inline script and style by hash and allows no
network access but images. It holds no data: what it shows arrives from the node (``canvas.a2ui.push``),
so it needs no token, and a page of another site cannot frame it.
"""

from __future__ import annotations

import functools

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from gateway.webchat.page import stitch

__all__ = ["PATH", "canvas_page", "page_html"]

PATH = "/__remoteclaw__/canvas/"


@functools.cache
def page_html() -> str:
    return stitch("gateway.canvas", "canvas.html", "a2ui.css", "a2ui.js",
                  ["img-src https: http: data:", "base-uri 'none'", "form-action 'none'"])


async def canvas_page(request: Request) -> Response:
    if request.url.path != PATH:
        return RedirectResponse(PATH, status_code=308)
    # Framing can only be refused by headers (browsers ignore frame-ancestors in a meta tag).
    return HTMLResponse(page_html(), headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
                                              "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
                                              "Content-Security-Policy": "frame-ancestors 'none'"})
