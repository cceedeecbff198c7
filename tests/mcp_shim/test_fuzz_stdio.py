"""Property-based fuzzing of the real MCP shim's stdio input (hypothesis), in both protocol eras.

One shim process, connected to a real gateway, reads random lines: not JSON, JSON that is not an object,
requests with good and bad ids, params of every type, the handshake era's methods and 2026-07-28's
``_meta`` envelope (right, wrong and half-filled), and ``tools/call`` of every listed tool and of unknown
names. Each line is followed by a ``ping`` sentinel. The shim must stay up, write nothing but JSON-RPC
messages to stdout, answer a request exactly once with its own id (a result or a well-formed error), and
answer nothing else, except the errors JSON-RPC requires for unparseable or id-less garbage (id null).

The run is a non-owner one, and tools with side effects only ever get arguments that are not an object,
so every call of theirs is refused by validation before it reaches the gateway.
``REMOTECLAW_FUZZ_EXAMPLES`` sets the number of lines (CI: 10,000).
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.mcp_shim.shim import SHIM_CMD, shim_env
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.mcp_fuzz import messages, well_formed

EXAMPLES = int(os.environ.get("REMOTECLAW_FUZZ_EXAMPLES", "300"))
_ids = itertools.count()


class StdioShim:
    """The shim as a plain process; a thread turns its stdout into a queue of lines."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(SHIM_CMD, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.tools: list[str] = []  # what tools/list listed
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)

    def send(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def exchange(self, raw: bytes, expect_id: Any | None) -> list[dict[str, Any]]:
        """Send ``raw`` and a ping sentinel; every message that came back before both were answered."""
        sentinel = f"sentinel-{next(_ids)}"
        self.send(raw)
        self.send(json.dumps({"jsonrpc": "2.0", "id": sentinel, "method": "ping"}).encode())
        got: list[dict[str, Any]] = []
        seen_sentinel = False
        while not seen_sentinel or (expect_id is not None and not any(m.get("id") == expect_id for m in got)):
            try:
                line = self.lines.get(timeout=40)
            except queue.Empty:
                pytest.fail(f"no answer for {raw[:200]!r} (shim alive: {self.proc.poll() is None})")
            message = json.loads(line)  # anything but JSON on stdout fails here
            assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
            if message.get("id") == sentinel:
                assert message.get("result") == {}, message
                seen_sentinel = True
            else:
                got.append(message)
        return got

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


ERAS = ["2025-11-25", "2025-06-18", "2025-03-26"]
"""The revision the session is initialized with: the newest handshake revision, the one before structured
tool output, and the one before that; a third of the lines each."""


@pytest.fixture(scope="module", params=ERAS)
def shim(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[StdioShim]:
    tmp = tmp_path_factory.mktemp("fuzz-shim")
    with GatewayProcess(tmp / "gw") as gw:
        proc = StdioShim(shim_env(gw, tmp, owner=False, plugin_manifest={"tools": []}))
        first = proc.exchange(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                                          "params": {"protocolVersion": request.param}}).encode(), "init")
        assert first[0]["result"]["protocolVersion"] == request.param
        listed = proc.exchange(b'{"jsonrpc":"2.0","id":"list","method":"tools/list"}', "list")
        proc.tools = [t["name"] for t in listed[0]["result"]["tools"]]
        yield proc
        assert proc.proc.poll() is None, "the shim died during the fuzzing"
        proc.close()
        assert proc.proc.returncode == 0


def test_random_stdio_input_never_breaks_the_shim(shim: StdioShim) -> None:
    @settings(max_examples=max(50, EXAMPLES // len(ERAS)), deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def run(data: st.DataObject) -> None:
        raw, expect = data.draw(messages(shim.tools))
        answers = shim.exchange(raw, expect)
        for answer in answers:
            well_formed(answer)
        if expect is not None:
            assert [a.get("id") for a in answers] == [expect], (raw[:300], answers)
        else:
            # Garbage, a bad id or a notification: nothing, or one error addressed to nobody.
            assert all(a.get("id") is None and "error" in a for a in answers) and len(answers) <= 1, (raw, answers)

    run()


def test_a_real_call_still_works_after_the_fuzzing(shim: StdioShim, tmp_path: Path) -> None:
    answers = shim.exchange(json.dumps({"jsonrpc": "2.0", "id": "after", "method": "tools/call",
                                        "params": {"name": "agents_list", "arguments": {}}}).encode(), "after")
    assert answers[0]["id"] == "after" and not answers[0]["result"].get("isError"), answers
