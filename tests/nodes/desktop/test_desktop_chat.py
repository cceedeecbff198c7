"""``/record`` typed into the loopback Telegram: the owner records what happens on the desktop node and gets
the trajectory back in the chat as a zip, with the page that shows it turn by turn; nobody else may record.

Real gateway with the Telegram channel, our node host with Cua Driver in a real Xvfb session with zenity.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.gateway.agents.test_chat_commands import OWNER, say
from tests.nodes.desktop.conftest import desktop_node, entry_text, window_of
from tests.support.desktop import DesktopSession
from tests.support.fake_telegram import FakeTelegram, module_fake, module_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

fake = module_fake()
gw = module_gateway(ownerAllowFrom=[OWNER])


@pytest.fixture(scope="module")
async def admin(gw: GatewayProcess, desktop: DesktopSession, tmp_path_factory: pytest.TempPathFactory
                ) -> AsyncIterator[RawClient]:
    async with desktop_node(gw, desktop, tmp_path_factory.mktemp("desknode") / "state", "chatbox") as (c, _node, _id):
        yield c


async def test_record_start_and_stop_in_the_chat_sends_the_trajectory(
        gw: GatewayProcess, fake: FakeTelegram, admin: RawClient, desktop: DesktopSession) -> None:
    await fake.wait_polling()
    zen = desktop.zenity("Chat record")
    window = await window_of(admin, zen.pid)
    started = await say(fake, "/record start", lambda t: "Recording" in t)
    assert "chatbox" in started
    for piece in ("to", "day"):
        await admin.call("desktop.invoke", {"tool": "type_text", "arguments": {
            "pid": zen.pid, "window_id": window["window_id"], "text": piece}})
    assert (await entry_text(admin, zen.pid, window["window_id"]))[0] == "today"
    before = len(fake.calls_of("sendDocument"))
    stopped = await say(fake, "/record stop", lambda t: "Recorded" in t, timeout=60)
    assert "Recorded 2 action(s) on chatbox" in stopped
    doc = await fake.wait_call("sendDocument", lambda c: True, timeout=30)
    assert len(fake.calls_of("sendDocument")) == before + 1
    sent: dict[str, Any] = doc.files["document"]
    assert sent["filename"].endswith(".zip")
    with zipfile.ZipFile(io.BytesIO(sent["data"])) as zf:
        assert {"turn-00001/action.json", "turn-00002/screenshot.png"} <= set(zf.namelist())
    page = re.search(r"(http://[^\s\"<>]+?/__remoteclaw__/desktop/trajectories/\w+/)", stopped)
    assert page, stopped
    async with httpx.AsyncClient(timeout=30) as http:
        assert (await http.get(page.group(1))).status_code == 401  # the address alone: nothing
        shown = await http.get(page.group(1), params={"token": gw.token})
    assert shown.status_code == 200 and "turn-00002" in shown.text
    zen.terminate()
