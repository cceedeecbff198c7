"""``scripts/readme_images.py`` makes the README's pictures from a real gateway and Chromium: run as its docs
say, it writes each picture, a PNG of the size it names (the phone's at twice its CSS pixels)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.server.control_ui import DEFAULT_ROOT
from tests.support.gateway_proc import ROOT
from tests.support.requires import require

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_the_script_makes_every_picture(tmp_path: Path) -> None:
    require(os.path.exists("/usr/bin/chromium"), "needs /usr/bin/chromium (apt-get install chromium)")
    done = subprocess.run([sys.executable, "scripts/readme_images.py", "--out", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert png_size(tmp_path / "webchat.png") == (1280, 800)
    assert png_size(tmp_path / "webchat-phone.png") == (780, 1688)
    if (ROOT / DEFAULT_ROOT / "index.html").is_file():
        assert png_size(tmp_path / "control-ui-chat.png") == (1280, 800)
        assert png_size(tmp_path / "control-ui-sessions.png") == (1280, 800)
