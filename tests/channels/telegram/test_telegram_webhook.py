"""Telegram webhook mode and live account changes.

The gateway registers the webhook (with a secret token) at the fake, then accepts updates posted to
``/channels/telegram/<accountId>/webhook`` only with Telegram's secret-token header.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.fake_telegram import FakeTelegram, module_fake, telegram_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

SECRET = "s3cret-token_value"
PUBLIC = "https://bot.example.org/channels/telegram/default/webhook"


fake = module_fake()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram) -> Iterator[GatewayProcess]:
    d = tmp_path_factory.mktemp("hook")
    with telegram_gateway(d / "gw", fake, mode="webhook", webhookUrl=PUBLIC, webhookSecret=SECRET,
                          dmPolicy="open") as proc:
        yield proc


def update(text: str, update_id: int) -> dict:
    return {"update_id": update_id, "message": {
        "message_id": update_id, "date": 1_700_000_000, "text": text,
        "chat": {"id": 321, "type": "private", "first_name": "Web"},
        "from": {"id": 321, "is_bot": False, "first_name": "Web"}}}


async def test_webhook_is_registered_and_checks_the_secret(gw: GatewayProcess, fake: FakeTelegram) -> None:
    hook = await fake.wait_call("setWebhook")
    assert hook.params["url"] == PUBLIC and hook.params["secret_token"] == SECRET
    assert not fake.calls_of("getUpdates")  # no polling in webhook mode
    url = f"{gw.http}/channels/telegram/default/webhook"
    async with httpx.AsyncClient() as http:
        denied = await http.post(url, json=update("sneaky", 1))
        assert denied.status_code == 403
        wrong = await http.post(url, json=update("sneaky", 2), headers={"X-Telegram-Bot-Api-Secret-Token": "nope"})
        assert wrong.status_code == 403
        junk = await http.post(url, content=b"not json", headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
        assert junk.status_code == 400
        ok = await http.post(url, json=update("through the hook", 3),
                             headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
        assert ok.status_code == 200
        none = await http.post(f"{gw.http}/channels/telegram/nobody/webhook", json=update("x", 4))
        assert none.status_code == 404
    await fake.wait_call("sendMessage", lambda c: c.params["text"] == "echo: through the hook")
    await asyncio.sleep(0.3)
    assert not [c for c in fake.calls_of("sendMessage") if "sneaky" in c.params["text"]]


async def test_accounts_follow_config_changes(gw: GatewayProcess, fake: FakeTelegram) -> None:
    c = await operator(gw.url, gw.token or "")
    base = (await c.call("config.get"))["hash"]
    patch = {"channels": {"telegram": {"accounts": {"second": {"botToken": "999:refused", "mode": "polling"}}}}}
    await c.call("config.patch", {"patch": patch, "baseHash": base})
    for _ in range(100):
        accounts = {a["accountId"]: a for a in _accounts(await c.call("channels.status"))
                    if a["channel"] == "telegram"}
        if accounts.get("second", {}).get("state") == "error":
            break
        await asyncio.sleep(0.1)
    assert accounts["default"]["state"] == "running"
    assert accounts["second"]["state"] == "error" and "refused" in accounts["second"]["error"]
    res = await c.req("message.send", {"channel": "telegram", "accountId": "second", "to": "1", "message": "x"})
    assert res["error"]["code"] == "NOT_LINKED" and "refused" in res["error"]["message"]
    # Removing the account stops it; the default bot keeps working throughout.
    base = (await c.call("config.get"))["hash"]
    await c.call("config.patch", {"patch": {"channels": {"telegram": {"accounts": None}}}, "baseHash": base})
    sent = await c.call("message.send", {"channel": "telegram", "to": "321", "message": "still here"})
    assert sent["ok"]
    accounts = [a["accountId"] for a in _accounts(await c.call("channels.status")) if a["channel"] == "telegram"]
    assert accounts == ["default"]
    await c.close()


def _accounts(status: dict[str, Any]) -> list[dict[str, Any]]:
    """Every account in a ``channels.status`` answer (ours, under ``channels.<name>.accounts``)."""
    return [a for channel in status["channels"].values() for a in channel["accounts"]]
