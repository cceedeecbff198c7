"""Fuzzing the params of every method the gateway declares, as its owner, over a real socket.

For each method in ``hello-ok features.methods`` (ours, the capabilities' and the plugins'), first a fixed
set of faults: params that are not an object, ``{}`` when fields are required, an unknown field, each field
given each JSON type it does not take, each string field a 200 KB string, and wrongly typed values for the
OpenClaw fields we accept and ignore. Then random params (hypothesis): known fields with random JSON, huge
strings, deep nesting and unknown keys.

The oracle is the gateway's own validation run here on the same params (``validate_wire``): when it refuses
them, the answer must be ``INVALID_REQUEST`` naming the field at fault (``at /field``) or, for a method only
nodes may call, ``FORBIDDEN``; otherwise any well-formed answer will do. Methods with effects we do not want
from random input (``HARMFUL``, ``RISKY``) only ever receive params that oracle refuses. After all that, the
gateway still answers ``health``. ``REMOTECLAW_FUZZ_EXAMPLES`` sets the random part's count (CI: 10,000).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator
from pydantic import BaseModel, ValidationError

from gateway.dispatch.callers import NODE
from gateway.dispatch.registry import _openclaw_fields, drop_ignored, registry, validate_wire, wire_field_names
from gateway.methods import load_all
from gateway.protocol import InvalidRequest
from tests.support.frame_fuzz import check_response, fresh_health, huge_text, json_values
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, connect_params

pytestmark = pytest.mark.timeout(900)

load_all()

HARMFUL = {
    "gateway.restart": "restarts the gateway under the test",
}
"""Methods whose valid params would disrupt the test itself: they get only params the validation refuses."""
RISKY = re.compile(r"restart|^update\.|^config\.(set|patch|apply)$|^agent$|^chat\.send$"
                   r"|^sessions\.(spawn|subagents|handoff)$|^cron\.(add|update|run|remove)$|^tts\.|^browser\.|^node\.invoke$|^plugin\.tools\.invoke$"
                   r"|^message\.(?!read$)|^plugins\.setEnabled$|^channels\.pairing\.approve$|^stt\.transcribe$"
                   r"|[wW]ait|ask$|^node\.pair\.(approve|reject|remove)$|^device\.pair\.(approve|reject)$")
"""Side effects we do not want from random valid params (agent runs, sends, pairing, plugin loads) or calls
that wait for a decision (``*.wait*``, ``*ask``): refused params only.
(``config.*`` writes have their own fuzzer, ``test_fuzz_config.py``.)"""

WRONG_VALUES: list[Any] = [None, True, 7, -1, 1.5, 2**63, "", "x", [], [1, "a"], {}, {"k": {"k": [None]}}]
"""One value of each JSON type (and a few edges): a field gets every one of them its type refuses."""
BIG = "\U0001f600" * 50_000  # 200 KB of UTF-8
_ids = itertools.count()


def _refusal(name: str, model: type[BaseModel], params: Any) -> tuple[str, ...] | None:
    """How the gateway's validation refuses ``params`` for ``name``: the field paths at fault (the first three,
    as the error message names them), ``()`` for a fault of the whole object, or None when it accepts them."""
    try:
        validate_wire(model, drop_ignored(name, model, plain(params)))
    except ValidationError as exc:
        errors = exc.errors(include_url=False)[:3]
        return tuple(str(e["loc"][0]) if e["loc"] else "" for e in errors)
    except InvalidRequest as exc:
        return (str((exc.details or {}).get("field", "")),)
    except orjson.JSONEncodeError:
        return ("",)
    return None


def _openclaw_only(name: str, model: type[BaseModel]) -> dict[str, Any]:
    known = wire_field_names(model)
    return {k: v for k, v in _openclaw_fields().get(name, {}).items() if k not in known}


def faults(name: str) -> Iterator[tuple[str, Any]]:
    """The fixed faults for one method: ``(label, params)``."""
    spec = registry.get(name)
    yield "not an object", [1, "two"]
    yield "a string", "params"
    if spec is None:
        return
    model = spec.params
    yield "empty", {}
    yield "unknown field", {"zzFuzzUnknown": 1}
    for field in sorted(wire_field_names(model)):
        for value in WRONG_VALUES:
            yield f"{field}={json.dumps(value)[:20]}", {field: value}
        yield f"{field}=200KB", {field: BIG}
        yield f"{field}=deep", {field: Deep(40)}
        yield f"{field}=deeper than orjson encodes", {field: Deep(400)}
    for field, schema in _openclaw_only(name, model).items():
        validator = Draft7Validator(schema)
        for value in WRONG_VALUES:
            if next(iter(validator.iter_errors(value)), None) is not None:
                yield f"openclaw {field}={json.dumps(value)[:20]}", {field: value}


class Deep:
    """A value nested ``depth`` levels (lists in objects): written as JSON text by hand, as Python's encoder
    would hit its recursion limit."""

    def __init__(self, depth: int) -> None:
        self.depth = depth

    def text(self) -> str:
        half = self.depth // 2
        return '{"k":[' * half + '"leaf"' + ']}' * half

    def value(self) -> Any:
        return orjson.loads(self.text()) if self.depth < 1000 else None

    def __repr__(self) -> str:
        return f"Deep({self.depth})"


def dumps(frame: Any) -> str:
    """JSON text of a frame that may hold ``Deep`` values."""
    deep: list[Deep] = []

    def mark(obj: Any) -> str:
        if not isinstance(obj, Deep):
            raise TypeError(type(obj).__name__)
        deep.append(obj)
        return f"\x00deep{len(deep) - 1}\x00"

    text = json.dumps(frame, ensure_ascii=False, default=mark)
    for i, d in enumerate(deep):
        text = text.replace(f'"\\u0000deep{i}\\u0000"', d.text())
    return text


def plain(params: Any) -> Any:
    """``params`` as the gateway decodes them (``Deep`` values expanded)."""
    return orjson.loads(dumps(params))


def allowed_to_run(name: str) -> bool:
    return name not in HARMFUL and not RISKY.search(name)


class Session:
    """One owner connection (every operator scope), reading frames itself so nothing is hidden."""

    def __init__(self, client: RawClient) -> None:
        self.client = client

    @classmethod
    async def open(cls, gw: GatewayProcess) -> Session:
        client = await RawClient.open(gw.url)
        await client.send_raw({"type": "req", "id": "c1", "method": "connect", "params": connect_params(gw.token)})
        while (frame := await client.recv())["type"] != "res":
            pass
        assert frame["ok"], frame
        client.hello = frame["payload"]
        return cls(client)

    async def ask(self, method: str, params: Any) -> dict[str, Any]:
        req_id = f"p{next(_ids)}"
        text = dumps({"type": "req", "id": req_id, "method": method, "params": params})
        await self.client.send_raw(text)
        while True:
            frame = await self.client.recv(timeout=30)
            if frame.get("type") == "res":
                check_response(frame)
                assert frame["id"] == req_id, (frame, req_id)
                return frame


def check_answer(method: str, params: Any, res: dict[str, Any]) -> None:
    """The oracle: refused params are refused naming the field; accepted ones get any well-formed answer."""
    spec = registry.get(method)
    if spec is None:
        return  # a capability's or plugin's method that this process did not load: well-formed is all we know
    if spec.scope == NODE:
        assert not res["ok"] and res["error"]["code"] == "FORBIDDEN", (method, params, res)
        return
    refused = _refusal(spec.name, spec.params, params)
    if refused is None:
        return
    assert not res["ok"] and res["error"]["code"] == "INVALID_REQUEST", (method, str(params)[:300], res)
    message = res["error"]["message"]
    assert message.startswith(f"invalid {spec.name} params"), (method, message)
    named = [f for f in refused if f]
    if named and "at root" not in message:
        assert any(f"/{f[:64]}" in message or f"'{f[:64]}'" in message for f in named), (method, params, message)


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {"gateway": {"auth": {"rateLimit": {"maxFailures": 100_000}},
                          "requestRate": {"perSecond": 0}}}  # the params are under test, not the pace
    with GatewayProcess(tmp_path_factory.mktemp("gw-params"), config=config) as proc:
        yield proc


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def session(gw: GatewayProcess, loop: asyncio.AbstractEventLoop) -> Iterator[Session]:
    s = loop.run_until_complete(Session.open(gw))
    yield s
    loop.run_until_complete(s.client.close())


def declared(session: Session) -> list[str]:
    assert session.client.hello is not None
    methods = session.client.hello["features"]["methods"]
    assert len(methods) > 50, methods
    return sorted(methods)


def test_fixed_faults_in_the_params_of_every_method(gw: GatewayProcess, session: Session,
                                                    loop: asyncio.AbstractEventLoop) -> None:
    sent = 0
    for method in declared(session):
        spec = registry.get(method)
        for label, params in faults(method):
            if not allowed_to_run(method) and (
                    spec is None or (spec.scope != NODE and _refusal(spec.name, spec.params, params) is None)):
                continue  # valid params would run it: not from a fuzzer
            res = loop.run_until_complete(session.ask(method, params))
            try:
                check_answer(method, params, res)
                if label.endswith("deeper than orjson encodes") and not res["ok"] and spec and spec.scope != NODE:
                    # Regression: this was answered "a number is out of range".
                    assert "nest too deeply" in res["error"]["message"], res
            except AssertionError as exc:
                raise AssertionError(f"{method} with {label}: {exc}") from None
            sent += 1
    assert sent > 1000, sent
    assert loop.run_until_complete(fresh_health(gw))["ok"] is True


def test_params_deeper_than_a_frame_may_be_are_refused_and_the_socket_lives_on(
        gw: GatewayProcess, session: Session, loop: asyncio.AbstractEventLoop) -> None:
    text = dumps({"type": "req", "id": "too-deep", "method": "health", "params": {"x": Deep(3000)}})

    async def run() -> dict[str, Any]:
        await session.client.send_raw(text)
        while (frame := await session.client.recv(timeout=15)).get("type") != "res":
            pass
        return frame

    res = loop.run_until_complete(run())
    check_response(res)
    # Regression: such a frame was taken for non-JSON and silently dropped; now it is answered, with its id.
    assert not res["ok"] and res["error"]["code"] == "INVALID_REQUEST", res
    assert res["id"] == "too-deep" and "deeper than 1024" in res["error"]["message"], res
    assert loop.run_until_complete(session.ask("health", None))["ok"] is True


EXAMPLES = int(os.environ.get("REMOTECLAW_FUZZ_EXAMPLES", "200"))
"""Random params per run: 200 in the test suite; CI runs 10,000 (``.ci/run``)."""

deep = st.integers(50, 1000).map(Deep)
values = json_values | huge_text | deep


@st.composite
def random_params(draw: st.DrawFn, method: str) -> Any:
    spec = registry.get(method)
    fields = sorted(wire_field_names(spec.params)) if spec is not None else []
    keys = st.sampled_from(fields) | st.text(max_size=12) if fields else st.text(max_size=12)
    return draw(st.dictionaries(keys, values, max_size=4) | values)


def test_random_params_for_every_method(gw: GatewayProcess, session: Session,
                                        loop: asyncio.AbstractEventLoop) -> None:
    methods = declared(session)
    runnable = [m for m in methods if allowed_to_run(m)]

    sent = 0

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        nonlocal sent
        method = data.draw(st.sampled_from(methods))
        params = data.draw(random_params(method))
        spec = registry.get(method)
        # Valid params that would run a risky method are not sent, and not counted as a case.
        assume(method in runnable or (spec is not None and _refusal(spec.name, spec.params, params) is not None))
        res = loop.run_until_complete(session.ask(method, params))
        check_answer(method, params, res)
        sent += 1

    check()
    print(f"random params sent: {sent}")
    assert sent >= EXAMPLES, (sent, EXAMPLES)
    assert loop.run_until_complete(fresh_health(gw))["ok"] is True
