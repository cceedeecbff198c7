"""Cost and usage through a real gateway and the loopback Telegram: every turn recorded, /usage, the daily
budget refusing the next turn, and ``usage.cost`` / ``sessions.usage`` answering the same figures.

The stand-in CLI states a cost with ``cost:<usd>`` in its result (``total_cost_usd``, as Claude Code does)
and always reports 10 input, 5 output, 2 cache-read and 1 cache-write tokens.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

from tests.support.fake_telegram import FAKE_CLI, FakeTelegram, cli_runs, module_fake, module_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

OWNER = 111
KEY = "agent:main:main"

fake = module_fake()
gw = module_gateway(
    ownerAllowFrom=[OWNER],
    config={"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI], "maxCostPerDay": 0.05}]}},
)


async def say(fake: FakeTelegram, text: str, want: Any) -> str:
    before = len(fake.calls)
    fake.user_message(chat_id=OWNER, user_id=OWNER, text=text)
    call = await fake.wait_call(
        "sendMessage", lambda c: any(c is x for x in fake.calls[before:]) and want(c.params["text"]), timeout=20
    )
    return str(call.params["text"])


async def test_turns_are_counted_and_the_budget_stops_the_next_one(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    assert await say(fake, "cost:0.02 first", lambda t: t.startswith("echo:")) == "echo: cost:0.02 first"
    usage = await say(fake, "/usage", lambda t: t.startswith("Today"))
    assert "Today: 1 turn(s), 18 tokens (10 in, 5 out, 3 cache), $0.02" in usage
    assert "This conversation: 1 turn(s)" in usage and "Budget: $0.02 of $0.05 today (UTC)" in usage
    await say(fake, "cost:0.04 second", lambda t: t.startswith("echo:"))
    refused = await say(fake, "third", lambda t: "budget" in t)
    assert refused.startswith("⚠️") and "daily budget reached: agent main has spent $0.06 of its $0.05" in refused
    assert "00:00 UTC" in refused
    assert not [r for r in cli_runs(gw.state_dir) if r["prompt"].strip() == "third"]  # no CLI was started
    usage = await say(fake, "/usage", lambda t: t.startswith("Today"))
    assert "Today: 2 turn(s), 36 tokens" in usage and "$0.06" in usage

    c = await operator(gw.url, gw.token or "")
    try:
        today = datetime.now(UTC).date().isoformat()
        cost = await c.call("usage.cost", {"days": 7})
        assert cost["days"] == 7 and len(cost["daily"]) == 7 and cost["daily"][-1]["date"] == today
        assert cost["totals"]["totalCost"] == 0.06 and cost["totals"]["input"] == 20
        assert cost["totals"]["totalTokens"] == 36 and cost["totals"]["missingCostEntries"] == 0
        assert cost["daily"][-1]["totalCost"] == 0.06 and cost["daily"][0]["totalCost"] == 0
        assert set(cost["totals"]) == {
            "input",
            "output",
            "cacheRead",
            "cacheWrite",
            "totalTokens",
            "totalCost",
            "inputCost",
            "outputCost",
            "cacheReadCost",
            "cacheWriteCost",
            "missingCostEntries",
        }
        sessions = await c.call("sessions.usage", {"range": "7d"})
        assert round(sessions["totals"]["totalCost"], 6) == 0.06
        bad = await c.req("usage.cost", {"days": 0})
        assert not bad["ok"] and "days" in bad["error"]["message"]
        bad = await c.req("usage.cost", {"agentId": "ghost"})
        assert not bad["ok"] and "agentId" in bad["error"]["message"]
        # sessions.handoff (the web chat's "Desk" button) gives the /handoff line as data.
        desk = await c.call("sessions.handoff", {"key": KEY})
        assert desk["runtime"] == "claude" and desk["command"].endswith(f" --resume {desk['sessionId']}")
        for params in ({"key": "agent:main:nobody-yet"}, {"key": "nonsense"}, {}):
            bad = await c.req("sessions.handoff", params)
            assert not bad["ok"] and "key" in bad["error"]["message"], bad
        # The final chat event of a turn carries its usage (the web chat shows it under the answer).
        history = (await c.call("chat.history", {"sessionKey": KEY}))["messages"]
        answered = [m for m in history if m.get("role") == "assistant" and m.get("usage")]
        assert answered[0]["usage"] == {"input": 10, "output": 5, "cacheRead": 2, "cacheWrite": 1, "costUsd": 0.02}
    finally:
        await c.close()
