"""The web chat page in real headless Chromium against a real gateway whose agent is a scripted CLI.

The CLI stand-in prints Claude Code's stream-json (text, a tool call, its result, more text) with
pauses, so the page has something to stream. Chromium only ever talks to 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.gateway_proc import GatewayProcess
from tests.support.requires import require
from tests.support.ws import operator

playwright_api = pytest.importorskip("playwright.async_api")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run"]

pytestmark = [pytest.mark.slow]


@pytest.fixture(autouse=True)
def _needs_chromium() -> None:
    require(os.path.exists(CHROMIUM), "needs /usr/bin/chromium (apt-get install chromium)")

AGENT = textwrap.dedent('''
    import json, sys, time, uuid

    def out(obj):
        sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()

    def say(text):
        out({"type": "assistant", "session_id": sid, "message": {"content": [{"type": "text", "text": text}]}})

    prompt = sys.stdin.read()
    sid = str(uuid.uuid4())
    out({"type": "system", "subtype": "init", "session_id": sid, "model": "scripted", "mcp_servers": []})
    usage = {"input_tokens": 1, "output_tokens": 1}
    if "slow please" in prompt:
        say("Thinking hard")
        time.sleep(60)
    if "<img" in prompt:
        start = prompt.index("<img")
        reply = "You wrote " + prompt[start:prompt.index(">", start) + 1] + " and **bold** `code`"
        say(reply)
        out({"type": "result", "subtype": "success", "session_id": sid, "result": reply, "usage": usage})
        sys.exit(0)
    say("Let me look at the sessions.")
    time.sleep(0.8)
    out({"type": "assistant", "session_id": sid, "message": {"content": [
        {"type": "tool_use", "id": "toolu_1", "name": "mcp__remoteclaw__sessions_list", "input": {"limit": 5}}]}})
    time.sleep(0.8)
    result = [{"type": "text", "text": json.dumps(["agent:main:main"])}]
    out({"type": "user", "session_id": sid, "message": {"content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": result}]}})
    time.sleep(0.3)
    reply = "There is **one** session:\\n\\n```\\nagent:main:main\\n```"
    say(reply)
    out({"type": "result", "subtype": "success", "session_id": sid, "result": reply, "usage": usage})
''')


@pytest.fixture(scope="module")
def chat_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("webchat")
    script = root / "agent.py"
    script.write_text(AGENT)
    config = {"agents": {"list": [{"id": "main", "runtime": "claude", "command": [sys.executable, str(script)]}]}}
    # No token given: the gateway makes one and prints the link, as it does for a newcomer.
    with GatewayProcess(root / "state", config=config, token=None) as gw:
        yield gw


def printed_link(gw: GatewayProcess) -> str:
    m = re.search(r"web chat: (http://\S+/#token=\S+)", gw.output())
    assert m, gw.output()
    return m.group(1).replace("localhost", "127.0.0.1")


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    pw = await playwright_api.async_playwright().start()
    b = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield b
    await b.close()
    await pw.stop()


@pytest.fixture
async def page(browser: Any) -> AsyncIterator[Any]:
    ctx = await browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2,
                                    is_mobile=True, has_touch=True)
    pg = await ctx.new_page()
    pg.errors = []
    pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))
    pg.on("console", lambda msg: pg.errors.append(msg.text) if msg.type == "error" else None)
    yield pg
    await ctx.close()


async def open_chat(page: Any, link: str) -> None:
    await page.goto(link)
    await page.wait_for_selector('#status[data-state="online"]', timeout=10_000)


async def send(page: Any, text: str) -> None:
    await page.fill("#input", text)
    await page.click("#send")


async def test_printed_link_signs_in_and_hides_the_token(chat_gateway: GatewayProcess, page: Any) -> None:
    link = printed_link(chat_gateway)
    assert "?" not in link.split("#")[0]  # the token is in the fragment, never in the query
    await open_chat(page, link)
    assert "token" not in page.url
    assert await page.evaluate("localStorage.getItem('remoteclaw.token')") == chat_gateway.token
    assert await page.text_content("#session-label") == "agent:main:main"
    assert page.errors == []


async def test_streamed_reply_tool_card_history_and_phone_layout(
        chat_gateway: GatewayProcess, page: Any, tmp_path: Path) -> None:
    await open_chat(page, printed_link(chat_gateway))
    await page.click("#new-chat")  # a session of its own, so other tests' messages stay out
    session = await page.text_content("#session-label")
    assert session and session.startswith("agent:main:webchat:")
    await send(page, "which sessions exist?")
    await page.wait_for_selector(".msg.user >> text=which sessions exist?")
    # Streaming: the first text and the running tool card show before the run has finished.
    await page.wait_for_selector(".msg.assistant.streaming >> text=Let me look at the sessions.", timeout=15_000)
    assert await page.is_visible("#abort")
    card = page.locator("details.tool")
    await card.wait_for()
    assert await card.locator(".tname").text_content() == "mcp__remoteclaw__sessions_list"
    await page.wait_for_selector('details.tool[data-state="done"]', timeout=10_000)
    await page.wait_for_selector("#send:visible", timeout=10_000)  # the run is over
    assert await page.is_hidden("#abort")
    assert await page.locator(".msg.assistant.streaming").count() == 0
    texts = await page.locator(".turn").last.locator(":scope > *").all_text_contents()
    assert texts[0] == "Let me look at the sessions." and texts[1].startswith("mcp__remoteclaw__sessions_list")
    final = page.locator(".turn .msg.assistant").last
    assert (await final.text_content() or "").startswith("There is one session:")
    assert await final.locator("pre code").text_content() == "agent:main:main"
    assert await final.locator("strong").text_content() == "one"

    # The tool card opens to show what went in and what came out.
    await card.locator("summary").click()
    assert '"limit": 5' in (await card.locator(".tinput").text_content() or "")
    assert "agent:main:main" in (await card.locator(".toutput").text_content() or "")

    shots = Path(os.environ.get("WEBCHAT_SCREENSHOT_DIR") or tmp_path)
    await page.screenshot(path=str(shots / "webchat-phone.png"))
    # Nothing wider than the phone's screen.
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390

    await page.reload()
    await page.wait_for_selector('#status[data-state="online"]')
    assert await page.text_content("#session-label") == session
    await page.wait_for_selector(".msg.user >> text=which sessions exist?")
    await page.wait_for_selector('details.tool[data-state="done"] >> text=mcp__remoteclaw__sessions_list')
    assert await page.locator(".turn .msg.assistant pre code").last.text_content() == "agent:main:main"
    await page.screenshot(path=str(shots / "webchat-phone-reloaded.png"))
    assert page.errors == []


async def test_model_text_is_never_html(chat_gateway: GatewayProcess, page: Any) -> None:
    await open_chat(page, printed_link(chat_gateway))
    await page.click("#new-chat")
    await send(page, 'look: <img src=x onerror="window.pwned=1">')
    reply = page.locator(".turn .msg.assistant").last
    await reply.locator("code").wait_for(timeout=15_000)
    assert "<img src=x" in (await reply.text_content() or "")
    assert await page.locator("#messages img").count() == 0
    assert await page.evaluate("window.pwned") is None


async def test_abort_stops_the_running_reply(chat_gateway: GatewayProcess, page: Any) -> None:
    await open_chat(page, printed_link(chat_gateway))
    await page.click("#new-chat")
    await send(page, "slow please")
    await page.wait_for_selector("text=Thinking hard", timeout=15_000)
    await page.click("#abort")
    await page.wait_for_selector(".turn .note >> text=stopped", timeout=10_000)
    await page.wait_for_selector("#send:visible")


async def test_message_send_to_webchat_reaches_open_pages(chat_gateway: GatewayProcess, page: Any) -> None:
    await open_chat(page, printed_link(chat_gateway))
    await page.click("#main-chat")
    client = await operator(chat_gateway.url, chat_gateway.token or "")
    try:
        res = await client.call("message.send", {"channel": "webchat", "to": "main", "message": "note from cron"})
        assert res["ok"] and res["channel"] == "webchat"
        await page.wait_for_selector(".msg.assistant >> text=note from cron", timeout=10_000)
        hist = await client.call("chat.history", {"sessionKey": "agent:main:main"})
        assert any(m["text"] == "note from cron" and m["role"] == "assistant" for m in hist["messages"])
    finally:
        await client.close()
    await page.reload()
    await page.wait_for_selector(".msg.assistant >> text=note from cron")


async def test_wrong_token_asks_for_one_and_reconnects(chat_gateway: GatewayProcess, page: Any) -> None:
    await page.goto(chat_gateway.http + "/#token=not-the-token")
    await page.wait_for_selector("#token-form:visible", timeout=10_000)
    assert await page.get_attribute("#status", "data-state") == "auth"
    assert await page.evaluate("localStorage.getItem('remoteclaw.token')") is None
    await page.fill("#token-input", chat_gateway.token or "")
    await page.click("#token-form button")
    await page.wait_for_selector('#status[data-state="online"]', timeout=10_000)
    assert await page.is_hidden("#token-form")


async def test_page_is_served_with_a_strict_policy(chat_gateway: GatewayProcess) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        resp = await http.get(chat_gateway.http + "/")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
    assert resp.headers["referrer-policy"] == "no-referrer"
    assert "script-src 'sha256-" in resp.text and "unsafe-inline" not in resp.text
