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

MODERN = "2026-07-28"
META = "io.modelcontextprotocol/protocolVersion"
READ_ONLY_TOOLS = ["agents_list", "sessions_list", "session_status", "sessions_history"]
"""Tools that only read: they get random object arguments too, so some calls reach the gateway."""
EXAMPLES = int(os.environ.get("REMOTECLAW_FUZZ_EXAMPLES", "300"))
_ids = itertools.count()

json_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                | st.text(max_size=30))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=10)
not_objects = st.lists(json_scalars, max_size=3) | json_scalars


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


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioShim]:
    tmp = tmp_path_factory.mktemp("fuzz-shim")
    with GatewayProcess(tmp / "gw") as gw:
        proc = StdioShim(shim_env(gw, tmp, owner=False, plugin_manifest={"tools": []}))
        first = proc.exchange(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                                          "params": {"protocolVersion": "2025-11-25"}}).encode(), "init")
        assert first[0]["result"]["protocolVersion"] == "2025-11-25"
        listed = proc.exchange(b'{"jsonrpc":"2.0","id":"list","method":"tools/list"}', "list")
        proc.tools = [t["name"] for t in listed[0]["result"]["tools"]]
        yield proc
        assert proc.proc.poll() is None, "the shim died during the fuzzing"
        proc.close()
        assert proc.proc.returncode == 0


def _envelope(draw: st.DrawFn) -> dict[str, Any] | None:
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return None
    if kind == 1:
        return {META: MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    if kind == 2:
        return {META: draw(st.sampled_from([MODERN, "2025-11-25", "1999-01-01", ""]) | json_scalars)}
    return draw(st.dictionaries(st.text(max_size=40), json_values, max_size=3))


@st.composite
def messages(draw: st.DrawFn, tools: list[str]) -> tuple[bytes, Any | None]:
    """A line for the shim, and the id its one answer must carry (None: no answer, or one with id null)."""
    shape = draw(st.integers(0, 19))
    if shape == 0:
        return draw(st.binary(max_size=60).filter(lambda b: b"\n" not in b and b"\r" not in b)), None
    if shape == 1:
        keys = st.text(max_size=10).map(lambda k: "k" + k)  # never "method" or "id": not a request
        return json.dumps(draw(not_objects | st.dictionaries(keys, json_values, max_size=4))).encode(), None
    method = draw(st.sampled_from(["initialize", "ping", "tools/list", "tools/call", "server/discover",
                                   "notifications/initialized", "notifications/cancelled", "resources/list",
                                   "prompts/get"]) | st.text(max_size=20))
    message: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "1.0"]) | json_scalars),
                               "method": method}
    params: Any
    if method == "tools/call":
        name = draw(st.sampled_from(tools) | st.text(max_size=20))
        args = draw(json_values) if name in READ_ONLY_TOOLS else draw(not_objects)
        params = {"name": name, "arguments": args}
        if draw(st.booleans()):
            params["_meta"] = {"progressToken": draw(st.text(max_size=8) | st.integers())}
    elif method == "initialize":
        params = {"protocolVersion": draw(st.sampled_from(["2025-11-25", "2025-06-18", "2024-11-05", MODERN])
                                          | json_scalars)}
    else:
        params = draw(st.none() | st.dictionaries(st.text(max_size=10), json_values, max_size=3) | not_objects)
    envelope = _envelope(draw)
    if isinstance(params, dict) and envelope is not None:
        params = {**params, "_meta": {**params.get("_meta", {}), **envelope}}
    if params is not None:
        message["params"] = params
    has_id = draw(st.integers(0, 5)) > 0
    expect: Any | None = None
    if has_id:
        good = draw(st.booleans())
        message["id"] = f"f{next(_ids)}-{draw(st.text(max_size=6))}" if good else \
            draw(st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.lists(json_scalars))
        expect = message["id"] if good else None
    return json.dumps(message).encode(), expect


def _well_formed(answer: dict[str, Any]) -> None:
    if "error" in answer:
        error = answer["error"]
        assert isinstance(error, dict) and isinstance(error.get("code"), int), answer
        assert isinstance(error.get("message"), str) and error["message"], answer
        assert "result" not in answer, answer
    else:
        assert "result" in answer and isinstance(answer["result"], dict), answer


def test_random_stdio_input_never_breaks_the_shim(shim: StdioShim) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def run(data: st.DataObject) -> None:
        raw, expect = data.draw(messages(shim.tools))
        answers = shim.exchange(raw, expect)
        for answer in answers:
            _well_formed(answer)
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
