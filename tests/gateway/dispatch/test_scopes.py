"""A read-only operator can change nothing: every method (and alias) above read scope refuses it.

The refusal must come before params are looked at, so even a call with garbage params says
MISSING_SCOPE rather than naming a field (which would leak what the method accepts and let it run
validators). The list of methods comes from the registry, so a new method is covered automatically.
"""

from __future__ import annotations

import pytest

from gateway.dispatch.dispatcher import NODE, READ, registry
from gateway.methods import load_all
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = pytest.mark.openclaw_frames  # every frame received is checked against OpenClaw's schema


def above_read() -> list[str]:
    load_all()
    names = []
    for spec in registry.specs():
        if spec.scope not in (READ, NODE):
            names += [spec.name, *spec.aliases]
    return names


async def test_read_scope_reaches_no_side_effecting_method(gateway: GatewayProcess) -> None:
    names = above_read()
    assert "config.patch" in names and "message:send" in names and "gateway.restart" in names
    c = await operator(gateway.url, gateway.token or "", scopes=["operator.read"])
    try:
        for name in names:
            frame = await c.req(name, {"bogus": 1})
            assert not frame["ok"], name
            assert frame["error"]["details"]["code"] == "MISSING_SCOPE", (name, frame["error"])
        # still connected and still allowed to read
        assert (await c.call("health"))["ok"]
    finally:
        await c.close()


async def test_node_only_methods_refuse_operators(gateway: GatewayProcess) -> None:
    load_all()
    c = await operator(gateway.url, gateway.token or "")
    try:
        for spec in registry.specs():
            if spec.scope == NODE:
                frame = await c.req(spec.name, {})
                assert frame["error"]["details"]["code"] == "ROLE_REQUIRED", spec.name
    finally:
        await c.close()
