"""A foreign ``Origin`` is refused on every endpoint (issue #34, security checks), against a real gateway.

The endpoints are not listed here: the gateway logs every HTTP path template and WebSocket path it serves
when it builds its app (``gateway.server.app.route_paths``), and the test requests each of those, so a route added
later is covered without touching this file. Every subsystem that adds routes is switched on: the Control UI
(a small stand-in folder), the example plugin, the web chat, ``/mcp``, the OpenAI-compatible ``/v1``, the canvas
and the channel webhooks.

Refused means 403 before any route runs, for every method and for static assets too: a browser sends
``Origin`` on a GET only in CORS mode (``fetch``, module scripts, ``crossorigin``), which is exactly a foreign
page trying to read the answer; plain links, ``<img>`` and classic scripts send none and still load.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.server.test_control_ui_serving import make_ui
from tests.gateway.server.test_hardening import status_of
from tests.support.gateway_proc import GatewayProcess

FOREIGN = ["https://evil.example", "null", "http://127.0.0.1.evil.example", "http://localhost"]
REFUSAL = b"cross-origin request refused"
SAMPLE = {"path": "assets/index-abc.js", "channel": "telegram", "account_id": "default"}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    base = tmp_path_factory.mktemp("origins")
    ui = make_ui(base / "pkg" / "control-ui")
    config = {"logging": {"level": "debug"}, "plugins": {"entries": {"example": {"enabled": True}}},
              "api": {"openai": {"enabled": True}}}
    with GatewayProcess(base / "state", config=config, env={"REMOTECLAW_GATEWAY__CONTROLUI__ROOT": str(ui)}) as proc:
        yield proc


def served(gw: GatewayProcess) -> tuple[list[str], list[str]]:
    """The HTTP path templates and the WebSocket paths the gateway says it serves (its log is written by a queue
    thread: the line may reach the file a moment after the gateway answers)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for line in (gw.state_dir / "logs" / "gateway.log").read_text().splitlines():
            record = json.loads(line)
            if record.get("event") == "serving":
                return record["http"], record["websocket"]
        time.sleep(0.1)
    raise AssertionError("the gateway did not log what it serves")


def concrete(template: str) -> str:
    """A path matching ``template``, its parameters filled in."""
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: SAMPLE.get(m.group(1), "x1"), template)


def request(gw: GatewayProcess, method: str, path: str, origin: str | None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=5)
    headers = {"Content-Type": "application/json"} | ({"Origin": origin} if origin else {})
    try:
        conn.request(method, path, body=b"{}" if method == "POST" else None, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def upgrade(gw: GatewayProcess, path: str, origin: str | None) -> int:
    """The status of a WebSocket upgrade on ``path``."""
    with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as sock:
        key = base64.b64encode(os.urandom(16)).decode()
        head = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{gw.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
        sock.sendall((head + (f"Origin: {origin}\r\n" if origin else "") + "\r\n").encode())
        return status_of(sock)


def test_the_route_listing_covers_every_subsystem(gw: GatewayProcess) -> None:
    http_paths, ws_paths = served(gw)
    for expected in ("/", "/healthz", "/mcp", "/openclaw/{path:path}", "/plugins/{path:path}",
                     "/channels/{channel}/{account_id}/webhook", "/__remoteclaw__/webchat/files/{fid}/{name:path}",
                     "/__remoteclaw__/canvas/", "/__remoteclaw__/browser/files/{name}",
                     "/.well-known/oauth-protected-resource"):
        assert expected in http_paths, http_paths
    assert {"/", "/ws", "/openclaw"} <= set(ws_paths), ws_paths


def test_every_http_route_refuses_a_foreign_origin_and_serves_its_own(gw: GatewayProcess) -> None:
    http_paths, _ = served(gw)
    own = f"http://127.0.0.1:{gw.port}"
    for path in [*map(concrete, http_paths), "/no-such-page"]:
        for method in ("GET", "POST", "OPTIONS", "DELETE"):
            for origin in FOREIGN:
                status, body = request(gw, method, path, origin)
                assert (status, REFUSAL in body) == (403, True), (method, path, origin, status, body[:200])
            for allowed in (own, None):  # the gateway's own pages, and clients that are not browsers
                status, body = request(gw, method, path, allowed)
                assert REFUSAL not in body, (method, path, allowed, status)
    # ... and "serves" means really served, not just "not refused":
    for path, expected in (("/healthz", 200), ("/", 200), ("/openclaw/assets/index-abc.js", 200),
                           ("/openclaw/control-ui-config.json", 200), ("/plugins/example/hello", 200),
                           ("/mcp", 401)):
        assert request(gw, "GET", path, own)[0] == expected, path
        assert request(gw, "GET", path, "https://evil.example")[0] == 403, path


def test_every_websocket_path_refuses_a_foreign_origin(gw: GatewayProcess) -> None:
    _, ws_paths = served(gw)
    for path in ws_paths:
        for origin in FOREIGN:
            assert upgrade(gw, path, origin) == 403, (path, origin)
        assert upgrade(gw, path, f"http://127.0.0.1:{gw.port}") == 101, path
        assert upgrade(gw, path, None) == 101, path
    # An upgrade on an HTTP route is refused before routing too.
    assert upgrade(gw, "/mcp", "https://evil.example") == 403


def test_listed_origins_are_let_in(tmp_path: Path) -> None:
    config = {"gateway": {"allowedOrigins": ["https://chat.example.org/"]}}
    with GatewayProcess(tmp_path, config=config) as gw:
        assert request(gw, "GET", "/healthz", "https://chat.example.org")[0] == 200
        assert upgrade(gw, "/ws", "https://chat.example.org") == 101
        assert request(gw, "GET", "/healthz", "https://chat.example.org.evil.example")[0] == 403
