"""Serving OpenClaw's Control UI from the gateway's own origin (``gateway.server.control_ui``), over real HTTP.

A small folder laid out like the npm package's ``dist/control-ui`` stands in for it (the real one is 56 MB;
the browser test in tests/channels/test_control_ui_browser.py uses that), pointed at with the
``REMOTECLAW_GATEWAY__CONTROLUI__ROOT`` environment override.
"""

from __future__ import annotations

import gzip
import http.client
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient

INDEX = """<!doctype html>
<html lang="en">
  <head>
    <link rel="icon" href="./favicon.svg" />
    <script type="module" crossorigin src="./assets/index-abc.js"></script>
  </head>
  <body><openclaw-app></openclaw-app></body>
</html>
"""


def make_ui(root: Path) -> Path:
    (root / "assets").mkdir(parents=True)
    (root / "index.html").write_text(INDEX)
    (root / "favicon.svg").write_text("<svg/>")
    script = b"console.log('control ui');\n" * 50
    (root / "assets/index-abc.js").write_bytes(script)
    (root / "assets/index-abc.js.gz").write_bytes(gzip.compress(script))
    (root.parent / "secret.txt").write_text("not for the web")
    return root


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    base = tmp_path_factory.mktemp("cui-serve")
    ui = make_ui(base / "pkg" / "control-ui")
    env = {"REMOTECLAW_GATEWAY__CONTROLUI__ROOT": str(ui)}
    with GatewayProcess(base / "state", env=env, token=None) as gw:  # a new token: the start link is printed
        yield gw


def test_index_is_served_with_its_base_path_and_anchored_links(served: GatewayProcess) -> None:
    status, headers, _ = get(served.port, "/openclaw")
    assert status == 302 and headers["location"] == "/openclaw/"
    for path in ("/openclaw/", "/openclaw/settings/general", "/openclaw/automations?x=1"):
        status, headers, body = get(served.port, path)
        page = body.decode()
        assert status == 200 and headers["content-type"].startswith("text/html"), path
        assert '<html data-openclaw-control-ui-base-path="/openclaw" lang="en">' in page
        assert 'src="/openclaw/assets/index-abc.js"' in page and 'href="/openclaw/favicon.svg"' in page
    # The web chat stays our own page, at /.
    status, _, body = get(served.port, "/")
    assert status == 200 and b"openclaw-app" not in body


def test_assets_pre_compressed_and_nothing_outside_the_folder(served: GatewayProcess) -> None:
    status, headers, body = get(served.port, "/openclaw/assets/index-abc.js", {"Accept-Encoding": "gzip, br"})
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert headers["content-type"].startswith(("text/javascript", "application/javascript"))
    assert gzip.decompress(body).startswith(b"console.log")
    status, headers, body = get(served.port, "/openclaw/assets/index-abc.js")
    assert status == 200 and "content-encoding" not in headers and body.startswith(b"console.log")
    for path in ("/openclaw/../secret.txt", "/openclaw/%2e%2e/secret.txt", "/openclaw/..%2fsecret.txt"):
        status, _, body = get(served.port, path)
        assert b"not for the web" not in body, path


def test_bootstrap_config_and_same_origin_socket(served: GatewayProcess) -> None:
    status, _, body = get(served.port, "/openclaw/control-ui-config.json")
    assert status == 200 and b'"basePath":"/openclaw"' in body


async def test_socket_at_the_base_path_accepts_the_same_origin_only(served: GatewayProcess) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    own = f"http://127.0.0.1:{served.port}"
    ws = await connect(f"ws://127.0.0.1:{served.port}/openclaw", origin=own)
    client = RawClient(ws)
    client.challenge = await client.recv()
    frame = await client.handshake(served.token, client_id="openclaw-control-ui", mode="webchat")
    assert frame["ok"], frame
    await client.close()
    with pytest.raises(InvalidStatus):
        await connect(f"ws://127.0.0.1:{served.port}/openclaw", origin="http://evil.example")


def test_start_banner_links_the_control_ui(served: GatewayProcess) -> None:
    m = re.search(r"control ui: (http://\S+/openclaw/)#token=(\S+)", served.output())
    assert m and m.group(2) == served.token, served.output()


def test_absent_folder_serves_nothing(tmp_path: Path) -> None:
    env = {"REMOTECLAW_GATEWAY__CONTROLUI__ROOT": str(tmp_path / "missing")}
    with GatewayProcess(tmp_path / "state", env=env, token=None) as gw:
        status, _, _ = get(gw.port, "/openclaw/")
        assert status == 404
        assert "control ui:" not in gw.output()
