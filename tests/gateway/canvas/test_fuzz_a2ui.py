"""Fuzzing A2UI through the real path that accepts it: ``node.invoke`` of ``canvas.a2ui.pushJSONL`` and
``canvas.a2ui.push`` to a paired node, on a running gateway, over real sockets.

The node is driven by hand (a real device key, paired by the owner) and answers every call it receives, so
what the gateway lets through is visible. Random JSONL (valid messages of both versions mutated field by
field, JSON that is not a message, text that is not JSON, blank lines, huge strings, too many lines) must be
answered exactly as the checker (``gateway.canvas.a2ui``) judges it: a fault refused ``INVALID_REQUEST`` with
its line and field in the details and the message, before it reaches the node; a good batch delivered.
``REMOTECLAW_FUZZ_EXAMPLES`` sets the count (CI: 10,000).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.canvas.a2ui import COMPONENTS, A2UIError, parse_jsonl, validate_messages
from tests.support.devices import DeviceKey
from tests.support.frame_fuzz import check_response, fresh_health, huge_text, int64_values
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.timeout(900)

EXAMPLES = int(os.environ.get("REMOTECLAW_FUZZ_EXAMPLES", "150"))
COMMANDS = ["canvas.a2ui.push", "canvas.a2ui.pushJSONL"]

GOOD: list[dict[str, Any]] = [
    {"surfaceUpdate": {"surfaceId": "main", "components": [
        {"id": "root", "component": {"Column": {"children": {"explicitList": ["t", "b"]}}}},
        {"id": "t", "component": {"Text": {"text": {"literalString": "Hello"}}}},
        {"id": "b", "component": {"Button": {"child": "t", "action": {"name": "go"}}}}]}},
    {"dataModelUpdate": {"surfaceId": "main", "contents": [
        {"key": "n", "valueString": "x"}, {"key": "m", "valueMap": [{"key": "k", "valueNumber": 1}]}]}},
    {"beginRendering": {"surfaceId": "main", "root": "root"}},
    {"version": "v0.9", "createSurface": {"surfaceId": "s", "catalogId": "c"}},
    {"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [
        {"id": "root", "component": "Row", "children": ["x"]},
        {"id": "x", "component": "Tabs", "tabItems": [{"title": "a", "child": "root"}]}]}},
    {"version": "v0.9", "updateDataModel": {"surfaceId": "s", "path": "/form", "value": {"a": 1}}},
    {"deleteSurface": {"surfaceId": "main"}},
]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))


REPLACEMENTS = int64_values | st.sampled_from(sorted(COMPONENTS)) | st.just("Buton") | huge_text | st.just(None)
"""What one place in a good message is changed to (``None``: removed). Built once: a strategy made in every
draw is validated again each time, which cost more than the gateway's round trip."""


@st.composite
def messages(draw: st.DrawFn) -> Any:
    """One message: a good one, a good one with one place changed or removed, or any JSON."""
    if draw(st.integers(0, 5)) == 0:
        return draw(int64_values)
    message = copy.deepcopy(draw(st.sampled_from(GOOD)))
    for _ in range(draw(st.integers(0, 2))):
        inner = list(_paths(message))[1:]
        if not inner:
            break
        path = draw(st.sampled_from(inner))
        holder = message
        for part in path[:-1]:
            holder = holder[part]
        replacement = draw(REPLACEMENTS)
        if replacement is None and isinstance(holder, dict):
            del holder[path[-1]]
        else:
            holder[path[-1]] = replacement
    return message


@st.composite
def jsonl(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            lines.append(draw(st.text(max_size=30)))  # not JSON, or blank
        elif kind == 1:
            lines.append("")
        else:
            lines.append(json.dumps(draw(messages())))
    if draw(st.integers(0, 19)) == 0:
        lines += [json.dumps(GOOD[-1])] * 1001  # too many lines
    return "\n".join(lines)


class HandNode:
    """A node on a real socket, paired by the owner, answering every invoke it gets (and counting them)."""

    def __init__(self, raw: RawClient, node_id: str) -> None:
        self.raw = raw
        self.node_id = node_id
        self.received = 0
        self.task = asyncio.get_running_loop().create_task(self._serve())

    async def _serve(self) -> None:
        while True:
            event = await self.raw.next_event("node.invoke.request", timeout=3600)
            self.received += 1
            await self.raw.req("node.invoke.result", {"id": event["payload"]["id"], "nodeId": self.node_id,
                                                      "ok": True, "payloadJSON": json.dumps({"ok": True})})


async def _pair(gw: GatewayProcess, admin: RawClient) -> HandNode:
    device = DeviceKey()
    raw = await RawClient.open(gw.url)
    assert raw.challenge is not None
    params = device.connect_params(gw.token or "", raw.challenge["payload"]["nonce"], role="node", scopes=[],
                                   client_id="node-host", mode="node")
    params["client"]["displayName"] = "a2ui-fuzz"
    params["commands"] = COMMANDS
    hello = await raw.connect_with(params)
    assert hello["ok"], hello
    pending = (await admin.call("node.pair.list"))["pending"]
    request = next(r for r in pending if r["displayName"] == "a2ui-fuzz")
    await admin.call("node.pair.approve", {"requestId": request["requestId"]})
    await raw.next_event("node.pair.resolved")
    return HandNode(raw, device.id)


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with GatewayProcess(tmp_path_factory.mktemp("gw-a2ui")) as proc:
        yield proc


def _expect(command: str, params: dict[str, Any]) -> A2UIError | None:
    try:
        if command == "canvas.a2ui.pushJSONL":
            parse_jsonl(params["jsonl"])
        else:
            validate_messages(params["messages"])
    except A2UIError as err:
        return err
    return None


def test_random_a2ui_is_refused_by_line_and_field_or_delivered(gw: GatewayProcess) -> None:
    loop = asyncio.new_event_loop()
    admin = loop.run_until_complete(operator(gw.url, gw.token or ""))
    node = loop.run_until_complete(_pair(gw, admin))
    stats = {"delivered": 0, "refused": 0}

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(text=jsonl(), batch=st.lists(messages(), max_size=5), as_list=st.integers(0, 3))
    def check(text: str, batch: list[Any], as_list: int) -> None:
        command, params = (("canvas.a2ui.push", {"messages": batch}) if as_list == 0
                           else ("canvas.a2ui.pushJSONL", {"jsonl": text}))
        expected = _expect(command, params)
        before = node.received
        res = loop.run_until_complete(admin.req("node.invoke", {
            "nodeId": node.node_id, "command": command, "params": params, "idempotencyKey": str(uuid.uuid4())},
            timeout=30))
        check_response(res)
        if expected is None:
            assert res["ok"], (params, res)
            assert node.received == before + 1
            stats["delivered"] += 1
        else:
            assert not res["ok"] and res["error"]["code"] == "INVALID_REQUEST", (params, res)
            details = res["error"]["details"]
            assert details["code"] == "A2UI_INVALID", res
            assert (details["line"], details["field"]) == (expected.line, expected.field), (str(expected), res)
            assert res["error"]["message"] == str(expected)
            assert node.received == before, "a refused batch reached the node"
            stats["refused"] += 1

    try:
        check()
        print(f"A2UI batches: {stats}")
        assert stats["refused"] + stats["delivered"] >= EXAMPLES, (stats, EXAMPLES)
        assert stats["refused"] > 0 and (EXAMPLES < 100 or stats["delivered"] > 0), stats
        not_text = loop.run_until_complete(admin.req("node.invoke", {
            "nodeId": node.node_id, "command": "canvas.a2ui.pushJSONL", "params": {"jsonl": ["x"]},
            "idempotencyKey": str(uuid.uuid4())}))
        assert not_text["error"]["details"]["field"] == "jsonl", not_text
        assert loop.run_until_complete(fresh_health(gw))["ok"] is True
    finally:
        node.task.cancel()
        loop.run_until_complete(node.raw.close())
        loop.run_until_complete(admin.close())
        loop.close()
