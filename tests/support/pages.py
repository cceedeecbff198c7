"""Web pages on 127.0.0.1 for the browser tests: a threaded HTTP server answering from a dict of pages."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["FORM_PAGE", "PageServer"]

FORM_PAGE = """<!doctype html><html><head><title>Order form</title></head><body>
<h1>Order form</h1>
<p id="status">Nothing ordered yet</p>
<label for="name">Your name</label><input id="name" placeholder="name">
<button id="order" onclick="document.getElementById('status').textContent =
  'Ordered for ' + document.getElementById('name').value">Place order</button>
<a href="/second">Second page</a>
</body></html>"""


class PageServer:
    """Serves ``pages`` (path -> HTML) on a free port; ``url(path)`` is the address to open."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.pages = pages
        self.hits: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hits.append(self.path)
                body = server.pages.get(self.path.split("?", 1)[0])
                data = (body or "not found").encode()
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
