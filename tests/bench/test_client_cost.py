"""``bench/client_cost.py`` at a small size: each of the three clients (the hand-written one, the same on
websockets' sans-I/O ``ClientProtocol``, the websockets asyncio client) completes the opening handshake with a
real server process and gets every answer, so the figures it prints are of clients that work."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import ROOT


def test_every_client_is_answered_and_costed() -> None:
    out = subprocess.run([sys.executable, "-m", "bench.client_cost", "--sockets", "5", "--rounds", "3",
                          "--repeats", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    figures = json.loads(out.stdout)
    assert set(figures) == {"lean", "sans-io", "websockets"}
    assert all(f["median_us"] > 0 and len(f["runs_us"]) == 1 for f in figures.values()), figures
