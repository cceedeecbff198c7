"""Doors x principals x actions, generated from the method registry: nobody reaches member B's things but the owner.

For every method whose declaration (``access=``) names an object in its params (a session, a run, a chat, a
person), each principal (member A, admin C, guest G, A's agent run and a paired stranger's, each with its run
token) calls it with B's object in that field and the rest of its params made up from its schema: the access model
must refuse it, before the handler runs. Then A and the owner call it with their own object: the model must not
refuse it, so the suite cannot pass with every door shut. A method added without a declaration cannot be declared
at all (the first test). ``/mcp`` tokens call the same dispatcher as their person's runs
(tests/gateway/mcp_http/test_person_tokens.py).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from gateway.access import Access
from gateway.access.objects import SESSION_BOUND
from gateway.dispatch.registry import MethodSpec, Registry, registry
from gateway.methods import load_all
from tests.support.fake_telegram import FakeTelegram, cli_runs
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.signin import signin_token
from tests.support.waiting import until
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

FAKE_CLI = str(ROOT / "tests/support/fake_cli.py")
A_TG, B_TG, STRANGER_TG = 301, 302, 303
A_KEY, B_KEY = "agent:main:person:a", "agent:main:person:b"
MODEL_CODES = {"SESSION_FORBIDDEN", "FORBIDDEN_OBJECT", "OWNER_ONLY"}
"""What the access model answers a refusal with (``gateway.access.policy.refusal``)."""


def test_a_method_without_a_declaration_does_not_load() -> None:
    reg = Registry()
    with pytest.raises(TypeError, match="access"):
        reg.method("x.y")(_noop)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="access"):
        reg.add(MethodSpec(name="x.z", params=Access, scope="operator.read", handler=_noop, access=()))  # type: ignore[arg-type]
    load_all()
    undeclared = [s.name for s in registry.specs() if not s.access]
    assert undeclared == []


async def _noop(p: Any, ctx: Any) -> None:
    return None


# -- params made up from a method's schema -----------------------------------------------------------------


def _minimal(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    if "$ref" in schema:
        return _minimal(defs[schema["$ref"].split("/")[-1]], defs)
    for many in ("anyOf", "oneOf"):
        if many in schema:
            options = [s for s in schema[many] if s.get("type") != "null"]
            return _minimal(options[0], defs) if options else None
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema and schema["default"] not in (None, ""):
        return schema["default"]
    kind = schema.get("type")
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 1))
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return max(1.0, schema.get("minimum", 1.0))
    if kind == "boolean":
        return False
    if kind == "array":
        return [_minimal(schema.get("items", {"type": "string"}), defs)] * schema.get("minItems", 0)
    if kind == "object" or "properties" in schema:
        return {k: _minimal(v, defs) for k, v in schema.get("properties", {}).items()
                if k in schema.get("required", ())}
    return "x"


def params_for(spec: MethodSpec, who: dict[str, Any]) -> dict[str, Any] | None:
    """The method's required params, made up, with every object it declares set to ``who``'s (None: the suite
    has no object of a kind it names)."""
    schema = spec.params.model_json_schema()
    params = _minimal(schema, schema.get("$defs", {})) or {}
    fields = [object_fields(access, who) for access in spec.access
              if access.kind in SESSION_BOUND | {"chat", "person"}]
    if not any(fields):
        return None
    for values in fields:
        params.update(values or {})
    if "message" in spec.params.model_fields and not params.get("message"):
        params["message"] = "hello"
    if "idempotencyKey" in spec.params.model_fields:
        params["idempotencyKey"] = f"{spec.name}-{who['id']}-{len(params)}"
    return params


def object_fields(access: Access, who: dict[str, Any]) -> dict[str, Any] | None:
    """The params naming ``who``'s object for this declaration, or None when the suite has none of that kind."""
    if access.kind == "chat":
        return {"channel": "telegram", ("targets" if access.each else "to"): [str(who["tg"])] if access.each
                else str(who["tg"])}
    if not access.locate:
        return None
    field = access.locate[0]
    if access.kind in ("session", "usage"):
        return None if field in ("label", "agentId") else {field: who["key"]}
    if access.kind == "run":
        return {field: who["run"]}
    if access.kind == "person":
        return {field: who["id"]}
    return None  # approvals: refused as unknown by their own handlers (tests/gateway/approvals)


def doors() -> list[tuple[MethodSpec, Access]]:
    """Each method naming an object (its first such declaration decides what the expectation is about)."""
    load_all()
    out = []
    for spec in registry.specs():
        named = [a for a in spec.access if a.kind in SESSION_BOUND | {"chat", "person"}
                 and (a.locate or a.kind == "chat")]
        if named and spec.scope != "node":
            out.append((spec, named[0]))
    return out


# -- one gateway, four principals ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tg() -> Iterator[FakeTelegram]:
    server = FakeTelegram().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def world(tg: FakeTelegram, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    state = tmp_path_factory.mktemp("doors") / "gw"
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "channels": {"telegram": tg.channel_config(dmPolicy="open")}, "session": {"dmScope": "per-channel-peer"}}
    gw = GatewayProcess(state, config=config, env={"FAKE_CLI_LOG": str(state / "cli.log")})
    await asyncio.to_thread(gw.start)
    clients: list[RawClient] = []
    try:
        owner = await operator(gw.url, gw.token or "")
        clients.append(owner)
        people: dict[str, Any] = {}
        for pid, role, tg_id in (("a", "member", A_TG), ("b", "member", B_TG), ("c", "admin", None),
                                 ("g", "guest", None)):
            await owner.call("people.create", {"id": pid, "name": pid.upper(), "role": role, "oneConversation": True})
            if tg_id:
                await owner.call("people.link", {"id": pid, "channel": "telegram", "senderId": str(tg_id)})
            url = (await owner.call("people.loginLink", {"id": pid}))["url"]
            c = await RawClient.open(gw.url)
            assert (await c.handshake(await asyncio.to_thread(signin_token, gw, url), client_id="webchat-ui",
                                      mode="webchat"))["ok"]
            clients.append(c)
            people[pid] = {"id": pid, "client": c, "tg": tg_id, "key": f"agent:main:person:{pid}"}
        for pid in ("a", "b"):  # each person's own conversation, and a run of it
            sent = await people[pid]["client"].call("chat.send", {"sessionKey": people[pid]["key"],
                                                                  "message": f"hello from {pid}",
                                                                  "idempotencyKey": f"hello-{pid}"})
            people[pid]["run"] = sent["runId"]
            await people[pid]["client"].call("agent.wait", {"runId": sent["runId"], "timeoutMs": 20_000})
        # A's agent run, held open, with its run token
        tg.user_message(chat_id=A_TG, user_id=A_TG, text="sleep:120 hold the run open")
        run = await until(lambda: next((r for r in cli_runs(state) if "hold the run open" in r["prompt"]), None),
                          timeout=30)
        a_run = await operator(gw.url, run["env"]["REMOTECLAW_GATEWAY_TOKEN"])
        clients.append(a_run)
        # a stranger's agent run (dmPolicy open: nobody on record), held open, with its run token
        tg.user_message(chat_id=STRANGER_TG, user_id=STRANGER_TG, text="sleep:120 a stranger holds a run")
        run = await until(lambda: next((r for r in cli_runs(state) if "a stranger holds" in r["prompt"]), None),
                          timeout=30)
        stranger_run = await operator(gw.url, run["env"]["REMOTECLAW_GATEWAY_TOKEN"])
        clients.append(stranger_run)
        yield {"gw": gw, "owner": owner, "people": people, "a_run": a_run, "stranger_run": stranger_run}
    finally:
        for c in clients:
            await c.close()
        await asyncio.to_thread(gw.stop)


async def _call(client: RawClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    try:
        return await client.req(method, params, timeout=8)
    except ConnectionClosed as exc:
        raise AssertionError(f"{method} {params}: the socket was closed") from exc
    except TimeoutError:
        return {"ok": True, "payload": "still running: not refused"}  # a wait or an ask that was let through


def _refused_by_model(frame: dict[str, Any]) -> bool:
    error = frame.get("error") or {}
    return not frame["ok"] and (error.get("details") or {}).get("code") in MODEL_CODES


def _refused(frame: dict[str, Any]) -> bool:
    return not frame["ok"] and (frame.get("error") or {}).get("code") == "FORBIDDEN"


def _expected_refused(principal: str, access: Access) -> bool:
    if access.kind == "person":
        return principal != "c" or access.action == "become"  # an admin administers people, but becomes nobody
    return True


async def test_events_of_b_reach_neither_a_nor_a_s_run(world: dict[str, Any]) -> None:
    a, b = world["people"]["a"], world["people"]["b"]
    for c in (a["client"], world["a_run"]):
        while not c.events.empty():
            c.events.get_nowait()
    sent = await b["client"].call("chat.send", {"sessionKey": B_KEY, "message": "secret of b",
                                                "idempotencyKey": "b-secret"})
    await b["client"].call("agent.wait", {"runId": sent["runId"], "timeoutMs": 20_000})
    await asyncio.sleep(0.5)
    for c in (a["client"], world["a_run"]):
        seen = []
        while not c.events.empty():
            seen.append(c.events.get_nowait())
        assert not [e for e in seen if "secret of b" in json.dumps(e)], seen


async def test_every_principal_but_the_owner_is_refused_b_s_things(world: dict[str, Any]) -> None:
    b = world["people"]["b"]
    callers = {"a": world["people"]["a"]["client"], "c": world["people"]["c"]["client"],
               "g": world["people"]["g"]["client"], "a-run": world["a_run"], "stranger-run": world["stranger_run"]}
    leaks, unmade = [], []
    tried = 0
    for spec, access in doors():
        params = params_for(spec, b)
        if params is None:
            continue
        for who, client in callers.items():
            if who == "c" and spec.name == "people.remove":
                continue  # an admin may remove B (administering people): B is needed later
            frame = await _call(client, spec.name, dict(params))
            tried += 1
            error = frame.get("error") or {}
            if not frame["ok"] and error.get("code") == "INVALID_REQUEST" and "params" in error.get("message", ""):
                unmade.append((spec.name, who, error["message"]))
            elif _expected_refused(who.split("-")[0], access) and not _refused(frame):
                leaks.append((spec.name, who, params, frame))
    assert tried > 100, tried
    assert not unmade, f"params the suite could not make: {unmade}"
    assert not leaks, "reached B's things: " + "\n".join(map(str, leaks))


async def test_the_owner_and_a_reach_their_own_things(world: dict[str, Any]) -> None:
    a, b = world["people"]["a"], world["people"]["b"]
    late = {"sessions.delete", "sessions.reset", "people.signins.revoke", "people.remove"}  # these go last
    order = sorted(doors(), key=lambda d: d[0].name in late)
    allowed, refused = [], []
    for spec, access in order:
        for who, client, target in (("a", a["client"], a), ("owner", world["owner"], b)):
            params = params_for(spec, target)
            if params is None:
                continue
            frame = await _call(client, spec.name, params)
            own_person_admin = who == "a" and access.kind == "person" and access.action not in ("read", "become")
            if _refused_by_model(frame) and not own_person_admin:  # a member administers nobody, herself included
                refused.append((spec.name, who, frame["error"]))
            elif who == "a" and frame["ok"]:
                allowed.append(spec.name)
    assert not refused, "the model refused the owner or A their own: " + "\n".join(map(str, refused))
    assert len(allowed) >= 10, allowed  # A's own doors really open: the suite would notice every door shut
