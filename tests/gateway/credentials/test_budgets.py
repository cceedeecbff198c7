"""Usage and budgets at the wire: what the model API's answers state is each turn's usage (per run, person and
session), and a spent budget stops a run at the model gateway mid-stream, saying so in the chat."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.gateway.credentials.test_model_gateway import ask_model, gateway, pry
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.ws import operator

PRICES = {"claude-*": {"input": 10.0, "output": 50.0}}  # $ per million tokens


async def test_usage_is_what_the_upstream_stated(tmp_path: Path) -> None:
    with FakeAnthropic() as api:
        gw = gateway(tmp_path, api.url, config={"modelGateway": {"prices": PRICES}})
        try:
            for _ in range(2):  # two turns, each one streamed answer of 100 tokens in and 20 out (the fake's count)
                await pry(gw, owner=True, http=[ask_model("counted")])
            c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
            cost = await c.call("usage.cost", {"days": 1, "agentId": "main"})
            await c.close()
        finally:
            gw.stop()
    totals = cost["totals"]
    assert (totals["input"], totals["output"]) == (200, 40), totals
    assert abs(totals["totalCost"] - 2 * (100 * 10 + 20 * 50) / 1e6) < 1e-9, totals


async def test_a_spent_budget_stops_the_run_mid_stream_with_the_reason_in_the_chat(tmp_path: Path) -> None:
    with FakeAnthropic() as api:
        gw = gateway(tmp_path, api.url, config={"modelGateway": {"prices": PRICES}}, maxCostPerDay=0.0005)
        key = f"agent:main:budget:{uuid.uuid4().hex[:6]}"
        try:
            c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
            streamed = ask_model("x")
            streamed["body"]["stream"] = True
            acc = await c.call("chat.send", {"sessionKey": key, "message": json.dumps({"http": [streamed]}),
                                             "idempotencyKey": str(uuid.uuid4())})
            done = await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 60000}, timeout=70)
            history = (await c.call("chat.history", {"sessionKey": key}))["messages"]
            acc = await c.call("chat.send", {"sessionKey": key, "message": json.dumps({}),
                                             "idempotencyKey": str(uuid.uuid4())})
            again = await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 60000}, timeout=70)
            await c.close()
        finally:
            gw.stop()
    assert done["status"] == "error" and "daily budget (maxCostPerDay) is spent" in done["error"], done
    assert "daily budget (maxCostPerDay) is spent" in history[-1]["text"], history[-1]  # the chat says why
    assert again["status"] == "error" and "daily budget reached" in again["error"], again  # the next turn: refused
    assert len([r for r in api.requests]) == 1  # one request went upstream, cut after its first event


async def test_a_tier_model_allowlist_holds_for_everyone_but_the_owner(tmp_path: Path) -> None:
    def asking(model: str) -> dict:
        ask = ask_model(model)
        ask["body"]["model"] = model
        return ask

    with FakeAnthropic() as api:
        gw = gateway(tmp_path, api.url, config={"modelGateway": {"othersModels": ["claude-haiku-*"]}})
        try:
            stranger = await pry(gw, owner=False, http=[asking("claude-opus-9"), asking("claude-haiku-9")])
            owner = await pry(gw, owner=True, http=[asking("claude-opus-9")])
        finally:
            gw.stop()
    big, small = stranger["http"]
    assert big.startswith("403 ") and "model claude-opus-9 is not open to this conversation" in big, big
    assert small.startswith("200 ") and owner["http"][0].startswith("200 "), (small, owner["http"])
    assert [r["model"] for r in api.requests] == ["claude-haiku-9", "claude-opus-9"]  # the refused one never left


async def test_a_persons_budget_stops_their_run_at_the_wire(tmp_path: Path) -> None:
    """Dana (a member signed in at the web chat) has $0.0005 a day: her run is cut at the model gateway as the
    answer's first event spends it, saying whose budget it was."""
    from tests.gateway.people.test_people import redeem, signed_in

    with FakeAnthropic() as api:
        gw = gateway(tmp_path, api.url, config={"modelGateway": {"prices": PRICES}})
        try:
            owner = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
            await owner.call("people.create", {"id": "dana", "name": "Dana", "role": "member",
                                               "maxCostPerDay": 0.0005})
            link = (await owner.call("people.loginLink", {"id": "dana"}))["url"]
            dana, _ = await signed_in(gw, redeem(gw, link.split("#signin=")[1])[1]["token"])
            streamed = ask_model("x")
            streamed["body"]["stream"] = True
            acc = await dana.call("chat.send", {"sessionKey": "agent:main:person:dana", "idempotencyKey": "b1",
                                                "message": json.dumps({"http": [streamed]})})
            done = await dana.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 60000}, timeout=70)
            await dana.close()
            await owner.close()
        finally:
            gw.stop()
    assert done["status"] == "error" and "Dana's daily budget is spent" in done["error"], done
    assert len(api.requests) == 1
