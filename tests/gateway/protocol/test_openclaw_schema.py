"""OpenClaw's published protocol schema (``@openclaw/gateway-protocol``) as the contract of the methods we share.

Params: for every method OpenClaw also has and we implement, params objects built from its ``…Params``
definition (required fields only, and every top-level field) are accepted: a refusal may only be about a
value (no such session, a time that is not a time), never about the shape. Fields we do not act on are
accepted, checked and ignored; a wrong one is still refused naming it. Results and events: every frame the
clients here receive is checked by the ``openclaw_frames`` marker (tests/conftest.py).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from gateway.dispatch.dispatcher import NODE, registry
from gateway.methods import load_all
from tests.support.gateway_proc import GatewayProcess
from tests.support.openclaw_schema import require_schema, sample
from tests.support.ws import RawClient

pytestmark = pytest.mark.openclaw_frames

# Methods whose call with placeholder values would take this module's gateway away from the other tests.
_DISRUPTIVE = frozenset({"config.apply", "config.patch", "config.set"})


def _structural(method: str, error: dict[str, Any]) -> bool:
    """A refusal about the params' shape (a field unknown, missing or of the wrong type), not a value."""
    message = str(error.get("message", ""))
    return error.get("code") == "INVALID_REQUEST" and (
        message.startswith(f"invalid {method} params") or bool(re.search(r"unknown field|unexpected property",
                                                                          message)))


def _shared_methods() -> list[str]:
    schema = require_schema()
    load_all()
    return [spec.name for spec in registry.specs()
            if spec.name in schema.methods and schema.params_definition(spec.name) and spec.scope != NODE]


async def test_params_built_from_the_schema_are_accepted(admin: RawClient) -> None:
    schema = require_schema()
    refused: list[str] = []
    checked = 0
    for method in _shared_methods():
        if method in _DISRUPTIVE:
            continue
        definition = schema.params_definition(method)
        assert definition is not None
        for full in (False, True):
            params = sample(schema.definitions[definition], full=full)
            assert not schema.violations(definition, params), (method, params)
            frame = await admin.req(method, params, timeout=30)
            checked += 1
            if not frame["ok"] and _structural(method, frame["error"]):
                refused.append(f"{method} {params}: {frame['error']['message']}")
    assert checked >= 60
    assert not refused, "\n".join(refused)


async def test_config_writes_take_the_schema_shapes(admin: RawClient) -> None:
    """The config writers, with the base hash they need, so the call changes nothing."""
    current = await admin.call("config.get")
    for method in sorted(_DISRUPTIVE):
        schema = require_schema()
        definition = schema.params_definition(method)
        assert definition is not None
        params = {**sample(schema.definitions[definition]), "baseHash": "stale"}
        if schema.violations(definition, params):
            params.pop("baseHash")
        frame = await admin.req(method, params)
        assert frame["ok"] or not _structural(method, frame["error"]), (method, frame)
    assert (await admin.call("config.get"))["hash"] == current["hash"]


async def test_an_ignored_field_is_still_checked(admin: RawClient) -> None:
    frame = await admin.req("sessions.list", {"archived": "sometimes"})
    assert frame["error"]["code"] == "INVALID_REQUEST"
    assert frame["error"]["message"].startswith("invalid sessions.list params: at /archived:")
    assert frame["error"]["details"]["field"] == "archived"
    frame = await admin.req("cron.list", {"compact": "yes"})
    assert frame["error"]["message"] == "invalid cron.list params: at /compact: 'yes' is not of type 'boolean'"
    frame = await admin.req("sessions.list", {"noSuchField": 1})
    assert frame["error"]["message"] == "invalid sessions.list params: at root: unexpected property 'noSuchField'"


async def test_control_ui_params_are_accepted(admin: RawClient) -> None:
    """What OpenClaw's Control UI and CLI send on their first screens (issue #29)."""
    sessions = await admin.call("sessions.list", {"configuredAgentsOnly": True, "archived": False,
                                                  "includeDerivedTitles": True, "includeLastMessage": True,
                                                  "agentId": "main", "hasBoard": False, "limit": 20})
    assert isinstance(sessions["sessions"], list)
    assert isinstance((await admin.call("sessions.list", {"limit": 5000}))["sessions"], list)  # no cap there
    await admin.call("cron.list", {"agentId": "main", "sortBy": "nextRunAtMs", "enabled": "all", "compact": True,
                                   "limit": 50, "offset": 0, "includeDisabled": True})
    await admin.call("cron.runs", {"scope": "all", "limit": 20, "statuses": ["ok", "error"], "sortDir": "desc"})
    await admin.call("channels.status", {"probe": True, "timeoutMs": 8000})
    tail = await admin.call("logs.tail", {"limit": 50, "maxBytes": 250_000})
    assert isinstance(tail["lines"], list)


async def test_plugins_set_enabled_takes_plugin_id(admin: RawClient, gateway: GatewayProcess) -> None:
    listed = await admin.call("plugins.list")
    plugin = next(p for p in listed["plugins"] if p["id"] == "example")
    assert plugin["enabled"] is False
    done = await admin.call("plugins.setEnabled", {"pluginId": "example", "enabled": True})
    assert done["ok"] is True and done["plugin"]["id"] == "example" and done["plugin"]["enabled"] is True
    done = await admin.call("plugins.setEnabled", {"id": "example", "enabled": False})  # our older spelling
    assert done["plugin"]["enabled"] is False
    frame = await admin.req("plugins.setEnabled", {"enabled": True})
    assert frame["error"]["code"] == "INVALID_REQUEST" and "pluginId" in frame["error"]["message"]


async def test_cron_add_with_the_cli_defaults(admin: RawClient) -> None:
    """``openclaw cron add`` with no delivery flags: announce to the chat the session last used."""
    job = await admin.call("cron.add", {
        "name": "digest", "schedule": {"kind": "every", "everyMs": 3_600_000}, "sessionTarget": "isolated",
        "wakeMode": "now", "payload": {"kind": "agentTurn", "message": "summarise"},
        "delivery": {"mode": "announce", "channel": "last"}, "enabled": True,
    })
    assert job["delivery"] == {"mode": "announce", "channel": "last"}
    assert job["wakeMode"] == "now"
    fetched = await admin.call("cron.get", {"id": job["id"]})
    assert fetched["delivery"] == {"mode": "announce", "channel": "last"}
    frame = await admin.req("cron.add", {"name": "half", "schedule": {"kind": "every", "everyMs": 60_000},
                                         "sessionTarget": "isolated", "wakeMode": "now",
                                         "payload": {"kind": "agentTurn", "message": "x"},
                                         "delivery": {"mode": "announce", "channel": "telegram"}})
    assert frame["error"]["code"] == "INVALID_REQUEST" and "delivery.to" in frame["error"]["message"]
    await admin.call("cron.remove", {"id": job["id"]})
