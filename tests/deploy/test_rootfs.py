"""The gateway image's recipe executed without a container runtime (``deploy/rootfs.py``): a Debian root
filesystem from debootstrap, every instruction of ``deploy/Dockerfile`` in a chroot, then the image's ``CMD``
started as its ``USER``, answering its ``HEALTHCHECK`` and serving the web chat. The slowest test (about a
minute and a half: a Debian base, apt and pip installs); the base is kept in ``.cache/rootfs/`` as a container
runtime keeps a pulled image, so later runs unpack it instead of running debootstrap.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.support.requires import require

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parents[2]
PORT = 18789  # the image's CMD fixes it; the chroot shares the host's network


def load_builder() -> Any:
    spec = importlib.util.spec_from_file_location("rootfs", ROOT / "deploy" / "rootfs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def get(path: str) -> tuple[int, str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{PORT}{path}", timeout=5) as r:
        return r.status, r.read().decode(), r.headers  # an HTTPMessage: names are case-insensitive


def test_the_image_recipe_builds_and_runs(tmp_path: Path) -> None:
    require(os.geteuid() == 0 and shutil.which("debootstrap") is not None and shutil.which("chroot") is not None,
            "needs root, debootstrap and chroot")
    assert port_free(PORT), f"port {PORT} is taken; the image's CMD needs it"
    rootfs = load_builder()
    image = rootfs.Image(tmp_path / "rootfs", ROOT, base_cache=ROOT / ".cache" / "rootfs")
    try:
        image.build(ROOT / "deploy" / "Dockerfile")
        assert image.user == "10001:10001" and image.volumes == ["/data"] and image.healthcheck
        proc = image.start({"REMOTECLAW_GATEWAY_TOKEN": "rootfs-test-token"}, tmp_path / "cmd.log")
        try:
            deadline = time.monotonic() + 120
            while not image.healthy():
                assert proc.poll() is None, (tmp_path / "cmd.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "the HEALTHCHECK never passed"
                time.sleep(1)
            status, body, _headers = get("/healthz")
            assert status == 200 and json.loads(body)["database"] == "sqlite"
            status, page, headers = get("/")  # the web chat, as a browser would get it
            assert status == 200 and "<title>remoteclaw</title>" in page and "script-src 'sha256-" in page
            assert headers.get("Cache-Control") == "no-store"
            data = tmp_path / "rootfs" / "data"
            assert (data / "remoteclaw.db").exists()  # state in the volume
            assert (data / "remoteclaw.db").stat().st_uid == 10001  # written by the image's user, not root
            gateway_uids = {int(line.split()[1]) for pid in os.listdir("/proc") if pid.isdigit()
                            for line in _status(pid) if line.startswith("Uid:")
                            if "remoteclaw" in _cmdline(pid) and "gateway" in _cmdline(pid)}
            assert 10001 in gateway_uids
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
    finally:
        image.unmount()
    assert port_free(PORT)


def _status(pid: str) -> list[str]:
    try:
        return Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
