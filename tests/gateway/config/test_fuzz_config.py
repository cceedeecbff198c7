"""Fuzzing the config writes (``config.patch``, ``config.set``, ``config.apply``) of a running gateway.

Random changes at the real fields of the live sections (right types and wrong ones, ``null`` removals,
unknown keys, JSON5 text that is broken or not an object, stale ``baseHash`` values), as the owner over a
real socket. After each one:

- an accepted change: the file on disk parses, validates, and is what ``config.get`` reports (its hash);
- a refused one: ``INVALID_REQUEST`` whose message names where (``at /logging/level``, ``at /raw``, the
  ``baseHash``), and the file on disk is byte for byte what it was.

At the end the gateway is stopped and started again from the file it wrote, and answers ``health``.
Sections that would restart the gateway (``gateway``) or reach the network or load code (``channels``,
``plugins``) are left out. ``REMOTECLAW_FUZZ_EXAMPLES`` sets the count (CI: 10,000).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.config.model import Config, hash_data, validate
from gateway.redaction import REDACTED
from tests.support.frame_fuzz import check_response, fresh_health, int64_values
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.timeout(900)

SECTIONS = ("agents", "session", "messages", "cron", "approvals", "nodes", "tools", "logging")
EXAMPLES = int(os.environ.get("REMOTECLAW_FUZZ_EXAMPLES", "150"))


def _leaves(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, (*path, key))


DEFAULTS = Config().model_dump(mode="json")
PATHS = [(p, v) for section in SECTIONS for p, v in _leaves(DEFAULTS[section], (section,))]


def _like(default: Any) -> st.SearchStrategy[Any]:
    """Values of the default's own type: some of them valid, so some changes are accepted."""
    if isinstance(default, bool):
        return st.booleans()
    if isinstance(default, int):
        return st.integers(-5, 10**7)
    if isinstance(default, float):
        return st.floats(-1, 1e6, allow_nan=False)
    if isinstance(default, str):
        return st.sampled_from(["debug", "info", "warning", "queue", "main", "full", "minimal", "edge"]) \
            | st.text(max_size=20)
    return st.just(default)


@st.composite
def patches(draw: st.DrawFn) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    for _ in range(draw(st.integers(1, 3))):
        path, default = draw(st.sampled_from(PATHS))
        value = draw(_like(default) | int64_values | st.none() | st.just(REDACTED))
        if draw(st.integers(0, 9)) == 0:
            path = (*path[:-1], draw(st.text(min_size=1, max_size=10)))  # a field that does not exist
        node = patch
        for part in path[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {}
            node = nxt
        node[path[-1]] = value
    return patch


@st.composite
def writes(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A config write without its ``baseHash``: ``(method, params)``."""
    kind = draw(st.integers(0, 5))
    if kind <= 1:
        return "config.patch", {"patch": draw(patches())}
    if kind == 2:
        text = draw(patches().map(json.dumps) | st.text(max_size=80) | st.just("[1, 2]") | st.just("{a: 1,"))
        return "config.patch", {"raw": text}
    if kind == 3:
        path, default = draw(st.sampled_from(PATHS))
        key = ".".join(path) if draw(st.integers(0, 9)) else draw(st.text(max_size=20))
        return "config.set", {"key": key or ".", "value": draw(_like(default) | int64_values | st.none())}
    if kind == 4:
        whole = draw(patches())
        return "config.apply", {"config": whole}
    return "config.patch", draw(st.dictionaries(st.sampled_from(["patch", "raw", "note", "restartDelayMs", "x"]),
                                                int64_values, max_size=3))


def _names_where(message: str) -> bool:
    return "at /" in message or "baseHash" in message or "at root" in message


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[GatewayProcess]:
    config = {"logging": {"level": "info"}, "agents": {"list": [{"id": "main", "command": ["true"]}]}}
    with GatewayProcess(tmp_path / "gw", config=config) as proc:
        yield proc


def test_random_config_writes_never_corrupt_the_file(gw: GatewayProcess) -> None:
    loop = asyncio.new_event_loop()
    client: RawClient = loop.run_until_complete(operator(gw.url, gw.token or ""))
    path = gw.state_dir / "remoteclaw.json"
    accepted = cases = 0
    # The hash of the file as the gateway has it: the last accepted write's, as config.get would report it
    # (asked once here and once at the end rather than before every write).
    current_hash: str = loop.run_until_complete(client.call("config.get"))["hash"]

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(write=writes(), stale=st.integers(0, 19))
    def check(write: tuple[str, dict[str, Any]], stale: int) -> None:
        nonlocal accepted, cases, current_hash
        cases += 1
        method, params = write
        before = path.read_bytes()
        params = {**params, "baseHash": "0" * 64 if stale == 0 else current_hash}
        res = loop.run_until_complete(client.req(method, params, timeout=30))
        check_response(res)
        if res["ok"]:
            accepted += 1
            data = json.loads(path.read_text())  # still JSON
            validate(data)  # still a valid config
            assert hash_data(data) == res["payload"]["hash"], (params, res)
            assert res["payload"]["restart"] is False, (params, res)
            current_hash = res["payload"]["hash"]  # what config.get now reports (checked at the end)
        else:
            assert res["error"]["code"] == "INVALID_REQUEST", res
            assert _names_where(res["error"]["message"]), (method, params, res)
            assert path.read_bytes() == before, (method, params, res)
            if stale != 0:  # the hash sent was the current one: the gateway agrees on what it is
                assert "baseHash mismatch" not in res["error"]["message"], (current_hash, res)

    try:
        check()
        print(f"config writes: {cases}, accepted: {accepted}")
        assert cases >= EXAMPLES, (cases, EXAMPLES)
        assert accepted > 0, "no random change was ever accepted: the generator only tests refusals"
        assert loop.run_until_complete(client.call("config.get"))["hash"] == current_hash
        assert loop.run_until_complete(fresh_health(gw))["ok"] is True
        loop.run_until_complete(client.close())
        written = json.loads(path.read_text())
        gw.stop()
        gw.start()  # a cold start from the file the fuzzing left
        again = loop.run_until_complete(operator(gw.url, gw.token or ""))
        got = loop.run_until_complete(again.call("config.get"))
        assert got["hash"] == hash_data(written) and got["valid"] is True
        loop.run_until_complete(again.close())
    finally:
        loop.close()
