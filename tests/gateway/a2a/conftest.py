"""Fixtures of the A2A tests: a2a-sdk's own minimal server as a real process (``sdk_agent.py``)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support import ROOT

PEER_TOKEN = "peer-secret-4711"
"""The bearer the SDK's server wants."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def sdk_server() -> Iterator[str]:
    """The base URL of a2a-sdk's echo agent (``sdk_agent.py``), which wants ``PEER_TOKEN``."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.gateway.a2a.sdk_agent", str(port), PEER_TOKEN], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/.well-known/agent-card.json", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            pytest.fail("a2a-sdk's server did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
