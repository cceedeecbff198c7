"""Property-based fuzzing of one running gateway over a real socket (hypothesis).

Random frames (random JSON, wrong types, huge and unicode ids, registry method names with random
params) must never crash the gateway; every frame gets exactly one well-formed answer, and a
request with a usable id gets it back. Methods that would restart the gateway, rewrite its config
or start agents/subprocesses only ever receive params of the wrong type, so they are refused
before they run.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import string
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.dispatch.dispatcher import registry
from gateway.methods import load_all
from gateway.protocol import MAX_PREAUTH_FRAME_BYTES
from tests.support.frame_fuzz import check_response as _check_response
from tests.support.frame_fuzz import fresh_health as _fresh_health
from tests.support.frame_fuzz import huge_text, json_scalars, json_values
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, connect_params

# Side effects we do not want from random input: these only ever get wrongly typed params.
NEVER_RUN = re.compile(r"restart|^config\.(set|patch|apply)$|^agent$|^chat\.send$|^sessions\.(spawn|subagents)$"
                       r"|^cron\.(add|update|run|remove)$|^tts\.|^browser\.|^node\.invoke$|^plugin\.tools\.invoke$")

load_all()
SAFE = [s for s in registry.specs() if not NEVER_RUN.search(s.name)]
UNSAFE = [s.name for s in registry.specs() if NEVER_RUN.search(s.name)]
ALIASES = [a for s in SAFE for a in s.aliases]
_counter = itertools.count()

good_ids = st.text(min_size=1, max_size=64) | huge_text | st.text(string.printable, min_size=1, max_size=8)
bad_ids = st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.none() | st.just("") \
    | st.lists(json_scalars, max_size=2) | st.dictionaries(st.text(max_size=4), json_scalars, max_size=2)


@st.composite
def params_for(draw: st.DrawFn, name: str) -> Any:
    spec = registry.get(name)
    if spec is None or NEVER_RUN.search(spec.name):
        return draw(st.lists(json_scalars, max_size=3) | st.integers() | st.text(max_size=10))
    fields = list(spec.params.model_fields)
    keyed = st.dictionaries(st.sampled_from(fields), json_values, max_size=len(fields)) if fields else st.just({})
    return draw(st.none() | keyed | json_values)


@st.composite
def request_frames(draw: st.DrawFn) -> dict[str, Any]:
    method = draw(st.sampled_from([s.name for s in SAFE] + ALIASES + UNSAFE) | st.text(max_size=30)
                  | st.just("connect"))
    frame: dict[str, Any] = {"type": "req", "method": method}
    if draw(st.booleans()):
        frame["id"] = f"{next(_counter)}:{draw(good_ids)}"
    else:
        frame["id"] = draw(bad_ids)
    params = draw(params_for(method))
    if params is not None or draw(st.booleans()):
        frame["params"] = params
    if draw(st.integers(0, 9)) == 0:  # now and then, a wrong frame shape
        key = draw(st.sampled_from(["type", "method", "extra", "params"]))
        frame[key] = draw(json_values)
    return frame


frames = request_frames() | json_values


@pytest.fixture(scope="module")
def fuzz_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {"gateway": {"auth": {"rateLimit": {"maxFailures": 100_000}}}}
    with GatewayProcess(tmp_path_factory.mktemp("gw-fuzz"), config=config) as gw:
        yield gw


def _well_formed_id(frame: Any) -> str | None:
    if isinstance(frame, dict) and isinstance(frame.get("id"), str) and frame["id"]:
        return frame["id"]
    return None


async def _session(gw: GatewayProcess) -> RawClient:
    client = await RawClient.open(gw.url)
    await client.send_raw({"type": "req", "id": "c1", "method": "connect", "params": connect_params(gw.token)})
    while (frame := await client.recv())["type"] != "res":
        pass
    assert frame["ok"], frame
    return client


async def _exchange(client: RawClient, frame: Any, n: int) -> None:
    """Send one frame, then a sentinel; collect answers until both are accounted for."""
    # stdlib json: it also encodes integers past 64 bits (orjson refuses them).
    await client.send_raw(json.dumps(frame, ensure_ascii=False, allow_nan=False))
    sentinel = f"sentinel-{n}"
    await client.send_raw({"type": "req", "id": sentinel, "method": "health"})
    want = _well_formed_id(frame)
    answers: list[dict[str, Any]] = []
    seen_sentinel = False
    while not seen_sentinel or (want is not None and not any(a["id"] == want for a in answers)):
        res = await client.recv(timeout=15)
        if res["type"] != "res":
            continue
        _check_response(res)
        if res["id"] == sentinel:
            assert res["ok"] is True
            seen_sentinel = True
        else:
            answers.append(res)
    if want is None:
        # A malformed frame is refused before the next frame is read, so its answer precedes the sentinel's.
        assert len(answers) == 1, (frame, answers)
        assert answers[0]["ok"] is False and answers[0]["error"]["code"] == "INVALID_REQUEST"
    else:
        assert [a["id"] for a in answers] == [want], (frame, answers)


FRAME_EXAMPLES = int(os.environ.get("REMOTECLAW_FUZZ_EXAMPLES", "150"))
"""Frames per run: 150 in the test suite; CI runs 10,000 in a step of its own (``.ci/run``)."""


def test_random_frames_never_break_the_gateway(fuzz_gateway: GatewayProcess) -> None:
    loop = asyncio.new_event_loop()
    client = loop.run_until_complete(_session(fuzz_gateway))
    n = itertools.count()

    @settings(max_examples=FRAME_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(frame=frames)
    def check(frame: Any) -> None:
        loop.run_until_complete(_exchange(client, frame, next(n)))

    try:
        check()
        assert fuzz_gateway.proc is not None and fuzz_gateway.proc.poll() is None
        health = loop.run_until_complete(_fresh_health(fuzz_gateway))
        assert health["ok"] is True
    finally:
        loop.run_until_complete(client.close())
        loop.close()


async def _first_frame(gw: GatewayProcess, text: str) -> None:
    client = await RawClient.open(gw.url)
    await client.send_raw(text)
    try:
        frame = await client.handshake(gw.token)
    except Exception:  # the random frame already closed the socket
        code = await client.wait_closed()
        # A frame over the pre-connect limit is refused from its header while the client is still sending
        # it: the close frame may be lost in the reset of the connection (1006). Either way, refused early.
        too_big = len(text.encode()) > MAX_PREAUTH_FRAME_BYTES
        assert code in ((1002, 1006, 1008, 1009) if too_big else (1002, 1008, 1009)), code
        return
    if not frame.get("ok"):
        # The random frame itself was the connect attempt (or was refused): answered, then closed.
        _check_response(frame)
        assert await client.wait_closed() in (1002, 1008, 1009)
        return
    assert (await client.call("health"))["ok"] is True
    await client.close()


def test_random_first_frames_are_refused_or_ignored(fuzz_gateway: GatewayProcess) -> None:
    loop = asyncio.new_event_loop()
    texts = st.text(max_size=200) | frames.map(lambda f: json.dumps(f, ensure_ascii=False, allow_nan=False))

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(text=texts)
    def check(text: str) -> None:
        loop.run_until_complete(_first_frame(fuzz_gateway, text))

    try:
        check()
        assert loop.run_until_complete(_fresh_health(fuzz_gateway))["ok"] is True
    finally:
        loop.close()
