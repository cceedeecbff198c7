"""The web chat page in real headless Chromium against a real gateway whose agent is a scripted CLI.

The CLI stand-in prints Claude Code's stream-json (text, a tool call, its result, more text) with
pauses, so the page has something to stream. Chromium only ever talks to 127.0.0.1. Pages are opened at
a phone's size (390x844, touch) and a desktop's (1280x800); screenshots go to ``WEBCHAT_SCREENSHOT_DIR``
(``./scripts/test`` sets it to ``.artifacts/webchat``) so a reviewer can look at them.
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
    if "what did I attach" in prompt:
        import os
        reply = "files: " + ", ".join(sorted(n.split("-", 1)[1] for n in os.listdir("attachments")))
        say(reply)
        out({"type": "result", "subtype": "success", "session_id": sid, "result": reply, "usage": usage})
        sys.exit(0)
    if "table please" in prompt:
        reply = ("> as asked\\n\\n| tool | **state** |\\n| --- | :---: |\\n"
                 "| sessions_list | done |\\n| cron | `idle` |\\n\\nThat is all.")
        say(reply)
        out({"type": "result", "subtype": "success", "session_id": sid, "result": reply, "usage": usage})
        sys.exit(0)
    if "what did it cost" in prompt:
        reply = "Cheap."
        say(reply)
        out({"type": "result", "subtype": "success", "session_id": sid, "result": reply, "total_cost_usd": 0.0123,
             "usage": {"input_tokens": 1200, "output_tokens": 34, "cache_read_input_tokens": 0}})
        sys.exit(0)
    if "quote me" in prompt:
        reply = "[[reply_to_current]] Quoting you."
        say(reply)
        out({"type": "result", "subtype": "success", "session_id": sid, "result": reply, "usage": usage})
        sys.exit(0)
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


PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}


async def new_page(browser: Any, **options: Any) -> tuple[Any, Any]:
    ctx = await browser.new_context(**options)
    pg = await ctx.new_page()
    pg.errors = []
    pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))
    pg.on("console", lambda msg: pg.errors.append(msg.text) if msg.type == "error" else None)
    return ctx, pg


@pytest.fixture
async def page(browser: Any) -> AsyncIterator[Any]:
    ctx, pg = await new_page(browser, **PHONE)
    yield pg
    await ctx.close()


@pytest.fixture
async def desktop(browser: Any) -> AsyncIterator[Any]:
    ctx, pg = await new_page(browser, **DESKTOP)
    yield pg
    await ctx.close()


def shots_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("WEBCHAT_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def goto_session(page: Any, key: str) -> None:
    """Pick a conversation from the list (behind the ☰ menu on a phone)."""
    if await page.is_visible("#menu"):
        await page.click("#menu")
    await page.click(f'.session-item[data-key="{key}"] .open')
    await page.wait_for_function("k => document.getElementById('session-label').textContent === k", arg=key)


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

    shots = shots_dir(tmp_path)
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


async def test_a_link_can_open_one_conversation(chat_gateway: GatewayProcess, page: Any) -> None:
    key = f"agent:main:webchat:linked-{os.getpid()}"
    await open_chat(page, printed_link(chat_gateway) + f"&session={key}")
    assert await page.text_content("#session-label") == key
    assert "token" not in page.url and "session" not in page.url


async def test_model_text_is_never_html(chat_gateway: GatewayProcess, page: Any) -> None:
    await open_chat(page, printed_link(chat_gateway))
    await page.click("#new-chat")
    await send(page, 'look: <img src=x onerror="window.pwned=1">')
    reply = page.locator(".turn .msg.assistant").last
    await reply.locator("code").wait_for(timeout=15_000)
    assert "<img src=x" in (await reply.text_content() or "")
    assert await page.locator("#messages img").count() == 0
    assert await page.evaluate("window.pwned") is None


async def test_tables_and_quotes_in_a_reply(chat_gateway: GatewayProcess, page: Any) -> None:
    await open_chat(page, printed_link(chat_gateway))
    await page.click("#new-chat")
    await send(page, "table please")
    reply = page.locator(".turn .msg.assistant", has_text="That is all.")
    await reply.wait_for(timeout=15_000)
    assert await reply.locator("blockquote").text_content() == "as asked"
    assert await reply.locator("th").all_text_contents() == ["tool", "state"]
    assert await reply.locator("th strong").text_content() == "state"
    assert await reply.locator("tbody tr").count() == 2
    assert await reply.locator("tbody tr").last.locator("td code").text_content() == "idle"
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390


async def test_the_cost_of_a_turn_shows_under_its_answer(chat_gateway: GatewayProcess, page: Any) -> None:
    await open_chat(page, printed_link(chat_gateway))
    await page.click("#new-chat")
    await send(page, "what did it cost")
    line = page.locator(".turn .answered", has_text="tokens")
    await line.wait_for(timeout=15_000)
    assert (await line.text_content() or "").endswith(" · 1,234 tokens · $0.0123")
    await page.reload()  # the transcript keeps it
    await page.wait_for_selector(".turn .answered >> text=1,234 tokens · $0.0123", timeout=10_000)
    # "Desk" shows the line that resumes this conversation in the CLI (sessions.handoff).
    await page.click("#handoff")
    command = await page.locator(".handoff code").text_content(timeout=10_000) or ""
    assert command.startswith("mkdir -p ") and " --resume " in command
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390


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
    await goto_session(page, "agent:main:main")
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


# -- the page a person keeps open all day -------------------------------------------------------------


@pytest.fixture(scope="module")
def missing_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A gateway whose agent's CLI is not installed: what a newcomer without Claude Code meets."""
    root = tmp_path_factory.mktemp("webchat-missing")
    config = {"agents": {"list": [{"id": "main", "runtime": "claude", "command": ["remoteclaw-no-such-cli"]}]}}
    with GatewayProcess(root / "state", config=config, token=None) as gw:
        yield gw


async def test_missing_cli_is_explained_its_error_survives_a_reload_and_a_drop_shows_a_banner(
        missing_gateway: GatewayProcess, page: Any, tmp_path: Path) -> None:
    shots = shots_dir(tmp_path)
    await open_chat(page, printed_link(missing_gateway))
    await page.wait_for_selector("#empty-missing:visible")
    assert "remoteclaw-no-such-cli is not installed" in (await page.text_content("#missing-title") or "")
    assert await page.text_content("#missing-install") == "npm install -g @anthropic-ai/claude-code"
    who = await page.text_content("#empty-agent") or ""
    assert "the agent main" in who and "Claude Code" in who and "remoteclaw-no-such-cli" in who
    await page.screenshot(path=str(shots / "webchat-phone-empty-missing-cli.png"))

    # The Desk button of a chat that has no agent session yet says what it will do, not an error.
    await page.click("#handoff")
    desk = page.locator(".handoff").last
    await desk.wait_for()
    assert (await desk.text_content() or "").startswith("Nothing to continue at the desk yet: this conversation "
                                                        "has no Claude Code session until the agent has answered")
    assert await page.locator(".msg.error").count() == 0  # not shown as a failure

    await send(page, "hello")
    error = page.locator(".turn .msg.error")
    await error.wait_for(timeout=15_000)
    said = await error.text_content() or ""
    assert "Claude Code is not installed on the gateway's machine (remoteclaw-no-such-cli was not found)" in said
    assert "npm install -g @anthropic-ai/claude-code" in said and "agents.list" not in said  # words, no config path
    await after_a_failure_the_install_card_is_still_shown(page)
    await page.reload()
    await page.wait_for_selector('#status[data-state="online"]')
    await page.wait_for_selector(".msg.user >> text=hello")
    await page.wait_for_selector(".turn .msg.error >> text=remoteclaw-no-such-cli")  # the answer is not lost
    await after_a_failure_the_install_card_is_still_shown(page)
    await page.screenshot(path=str(shots / "webchat-phone-error-after-reload.png"))

    missing_gateway.stop()
    await page.wait_for_selector("#banner:visible", timeout=10_000)
    assert "Reconnecting" in (await page.text_content("#banner") or "")
    await page.screenshot(path=str(shots / "webchat-phone-reconnecting.png"))
    missing_gateway.start()
    await page.wait_for_selector("#banner", state="hidden", timeout=30_000)
    await page.wait_for_selector('#status[data-state="online"]')
    # refused, or reset (a connect the stopping gateway's socket had queued but never served): while it was down
    assert [e for e in page.errors if "ERR_CONNECTION_REFUSED" not in e and "ERR_CONNECTION_RESET" not in e] == []


async def after_a_failure_the_install_card_is_still_shown(page: Any) -> None:
    """The card with the install command, below the failed message (the empty state is gone by now)."""
    card = page.locator("#empty-missing")
    await card.wait_for(state="visible", timeout=10_000)
    assert await page.is_hidden("#empty")
    assert await page.text_content("#missing-install") == "npm install -g @anthropic-ai/claude-code"
    error_box = await page.locator(".turn .msg.error").last.bounding_box()
    card_box = await card.bounding_box()
    assert error_box and card_box and card_box["y"] >= error_box["y"] + error_box["height"]  # below the failure


LAYOUT = """() => {
  const code = document.getElementById('missing-install');
  const copy = code.parentNode.querySelector('button.copy').getBoundingClientRect();
  const range = document.createRange(); range.selectNodeContents(code);
  const text = Array.from(range.getClientRects()).map(r => ({left: r.left, top: r.top, right: r.right,
                                                              bottom: r.bottom}));
  const field = document.getElementById('input'), cs = getComputedStyle(field);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = cs.fontStyle + ' ' + cs.fontWeight + ' ' + cs.fontSize + ' ' + cs.fontFamily;
  return {copy: {left: copy.left, top: copy.top, right: copy.right, bottom: copy.bottom}, text,
          placeholder: field.placeholder, placeholderWidth: ctx.measureText(field.placeholder).width,
          room: field.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight),
          pageWidth: document.documentElement.clientWidth, scrollWidth: document.documentElement.scrollWidth};
}"""


@pytest.mark.parametrize("width", [320, 360, 390])
async def test_phone_layout_keeps_the_install_command_and_the_placeholder_whole(
        missing_gateway: GatewayProcess, browser: Any, width: int, tmp_path: Path) -> None:
    """Element boxes, compared: the Copy button covers no part of the install command, the composer's
    placeholder fits its field, and nothing is wider than the screen."""
    ctx, page = await new_page(browser, **{**PHONE, "viewport": {"width": width, "height": 800}})
    try:
        await open_chat(page, printed_link(missing_gateway))
        await page.wait_for_selector("#empty-missing:visible")
        boxes = await page.evaluate(LAYOUT)
        await page.screenshot(path=str(shots_dir(tmp_path) / f"webchat-phone-{width}-install-card.png"))
    finally:
        await ctx.close()
    copy = boxes["copy"]
    assert boxes["text"], boxes
    for line in boxes["text"]:
        apart = (line["right"] <= copy["left"] or line["left"] >= copy["right"] or line["bottom"] <= copy["top"]
                 or line["top"] >= copy["bottom"])
        assert apart, (width, line, copy)
    assert boxes["placeholder"].startswith("Message") and boxes["placeholderWidth"] <= boxes["room"], boxes
    assert boxes["scrollWidth"] <= boxes["pageWidth"], boxes


async def test_desktop_keys_copy_sessions_rename_switch_delete(
        chat_gateway: GatewayProcess, desktop: Any, tmp_path: Path) -> None:
    page = desktop
    await open_chat(page, printed_link(chat_gateway))
    assert await page.is_visible("#sidebar") and await page.is_hidden("#menu")
    await page.click("#new-chat")
    key = await page.text_content("#session-label") or ""
    # Enter sends; Shift+Enter starts a new line.
    await page.click("#input")
    await page.keyboard.type("which sessions")
    await page.keyboard.press("Shift+Enter")
    await page.keyboard.type("exist now?")
    assert await page.input_value("#input") == "which sessions\nexist now?"
    await page.keyboard.press("Enter")
    await page.wait_for_selector(".msg.user >> text=exist now?")
    answered = page.locator(".turn .answered")
    await answered.wait_for(timeout=15_000)
    assert (await answered.text_content() or "").startswith("main · Claude Code (")

    # A code block's copy button puts exactly the code on the clipboard.
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=chat_gateway.http)
    final = page.locator(".turn .msg.assistant").last
    await final.locator("button.copy").click()
    await final.locator("button.copy >> text=Copied").wait_for()
    assert await page.evaluate("navigator.clipboard.readText()") == "agent:main:main"

    # The list names the conversation by its first message; renaming it changes the list and the header.
    item = f'.session-item[data-key="{key}"]'
    await page.wait_for_selector(f"{item} .s-title >> text=which sessions exist now?")
    assert await page.text_content("#session-title") == "which sessions exist now?"
    await page.screenshot(path=str(shots_dir(tmp_path) / "webchat-desktop.png"))
    client = await operator(chat_gateway.url, chat_gateway.token or "")
    try:
        await page.click(f"{item} button.rename")
        await page.wait_for_selector(f"{item} input")
        await page.keyboard.type("Session ")  # the field has the focus
        # A turn ending in another conversation meanwhile rebuilds the list: the name being typed survives it.
        sent = await client.call("chat.send", {"sessionKey": "agent:main:main", "message": "meanwhile elsewhere",
                                               "idempotencyKey": "meanwhile-1"})
        assert (await client.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 20_000}, timeout=25))[
            "status"] == "ok"
        await page.wait_for_selector('.session-item.unread[data-key="agent:main:main"]')  # the list was rebuilt
        await page.keyboard.type("survey")
        assert await page.input_value(f"{item} input") == "Session survey"
        await page.keyboard.press("Enter")
        await page.wait_for_selector(f"{item} .s-title >> text=Session survey")
        await page.wait_for_function(
            "() => document.getElementById('session-title').textContent === 'Session survey'")
        listed = {s["key"]: s for s in (await client.call("sessions.list", {}))["sessions"]}
        assert listed[key]["label"] == "Session survey"

        # Switching shows each conversation's own messages.
        await goto_session(page, "agent:main:main")
        assert await page.locator(".msg.user >> text=exist now?").count() == 0
        await goto_session(page, key)
        await page.wait_for_selector(".msg.user >> text=exist now?")

        # Deleting takes a second click; the page falls back to the main session.
        await page.click(f"{item} button.delete")
        await page.wait_for_selector(f"{item} button.delete.confirm")
        await page.click(f"{item} button.delete")
        await page.wait_for_function("() => document.getElementById('session-label').textContent === 'agent:main:main'")
        await page.wait_for_selector(item, state="detached")
        listed = {s["key"]: s for s in (await client.call("sessions.list", {}))["sessions"]}
        assert key not in listed
    finally:
        await client.close()
    assert page.errors == []


async def test_escape_stops_a_reply_and_the_stop_is_kept(chat_gateway: GatewayProcess, desktop: Any) -> None:
    page = desktop
    await open_chat(page, printed_link(chat_gateway))
    await page.click("#new-chat")
    await page.fill("#input", "slow please")
    await page.press("#input", "Enter")
    await page.wait_for_selector("text=Thinking hard", timeout=15_000)
    await page.keyboard.press("Escape")
    await page.wait_for_selector(".turn .note >> text=stopped", timeout=10_000)
    await page.reload()
    await page.wait_for_selector('#status[data-state="online"]')
    await page.wait_for_selector(".turn .note >> text=stopped")


async def test_agent_message_tools_show_live_and_after_reload(
        chat_gateway: GatewayProcess, page: Any, tmp_path: Path) -> None:
    from PIL import Image

    await open_chat(page, printed_link(chat_gateway))
    await page.click("#new-chat")
    key = await page.text_content("#session-label") or ""
    await send(page, "quote me")
    # [[reply_to_current]] makes the reply quote the message it answers (and the tag is not shown).
    reply = page.locator(".turn .msg.assistant", has_text="Quoting you.")
    await reply.wait_for(timeout=15_000)
    assert await reply.locator(".quote").text_content() == "↩ quote me"
    assert "reply_to_current" not in (await page.text_content("#messages") or "")
    user_id = await page.get_attribute(".msg.user", "data-id")
    assert user_id and user_id.isdigit()

    chart, notes = tmp_path / "chart.png", tmp_path / "notes.txt"
    Image.new("RGB", (40, 20), (220, 30, 30)).save(chart)
    notes.write_text("plain notes")
    client = await operator(chat_gateway.url, chat_gateway.token or "")
    target = {"channel": "webchat", "to": key}
    try:
        answer = await client.call("message.reply", {**target, "message": "replying", "replyToId": user_id})
        await client.call("message.sendAttachment", {**target, "file": str(chart), "caption": "the chart"})
        sent_notes = await client.call("message.sendAttachment", {**target, "file": str(notes)})
        await client.call("message.react", {**target, "messageId": user_id, "emoji": "👍"})
        await client.call("message.pin", {**target, "messageId": answer["messageId"]})
        await page.wait_for_selector(f'[data-id="{sent_notes["messageId"]}"] a.file >> text=notes.txt')
        await client.call("message.delete", {**target, "messageId": sent_notes["messageId"]})
    finally:
        await client.close()

    async def check() -> None:
        await page.wait_for_selector(".msg.user .reaction >> text=👍", timeout=10_000)
        pinned = page.locator(".msg.assistant.pinned", has_text="replying")
        await pinned.wait_for()
        assert await pinned.locator(".quote").text_content() == "↩ quote me"
        figure = page.locator(".msg.assistant", has_text="the chart")
        await figure.locator(".attachment img").wait_for()
        await page.wait_for_function("() => { const i = document.querySelector('.attachment img');"
                                     " return i && i.complete && i.naturalWidth === 40; }")
        await page.wait_for_selector(f'[data-id="{sent_notes["messageId"]}"].deleted >> text=message deleted')

    await check()
    await page.screenshot(path=str(shots_dir(tmp_path) / "webchat-phone-message-tools.png"))
    await page.reload()
    await page.wait_for_selector('#status[data-state="online"]')
    await check()
    assert page.errors == []


async def test_phone_menu_opens_the_list_and_closes_on_a_pick(
        chat_gateway: GatewayProcess, page: Any, tmp_path: Path) -> None:
    await open_chat(page, printed_link(chat_gateway))
    box = await page.locator("#sidebar").bounding_box()
    assert box is not None and box["x"] + box["width"] <= 0  # off screen until asked for
    await page.click("#menu")
    await page.wait_for_function("() => document.getElementById('sidebar').getBoundingClientRect().x >= 0")
    await page.screenshot(path=str(shots_dir(tmp_path) / "webchat-phone-menu.png"))
    await page.keyboard.press("Escape")
    await page.wait_for_function("() => document.getElementById('sidebar').getBoundingClientRect().right <= 0")
    await goto_session(page, "agent:main:main")
    await page.wait_for_function("() => document.getElementById('sidebar').getBoundingClientRect().right <= 0")
    assert await page.is_hidden("#scrim")


async def test_dark_mode_follows_the_system(chat_gateway: GatewayProcess, browser: Any, tmp_path: Path) -> None:
    for scheme, background in (("light", "rgb(246, 247, 249)"), ("dark", "rgb(15, 17, 21)")):
        ctx, pg = await new_page(browser, color_scheme=scheme, **DESKTOP)
        try:
            await open_chat(pg, printed_link(chat_gateway))
            assert await pg.evaluate("getComputedStyle(document.body).backgroundColor") == background
            await pg.screenshot(path=str(shots_dir(tmp_path) / f"webchat-desktop-{scheme}.png"))
        finally:
            await ctx.close()


async def test_a_second_page_on_the_session_sees_messages_sent_from_the_first(
        chat_gateway: GatewayProcess, page: Any, desktop: Any) -> None:
    link = printed_link(chat_gateway)
    await open_chat(desktop, link)
    await desktop.click("#new-chat")
    key = await desktop.text_content("#session-label") or ""
    await send(desktop, "quote me")
    await desktop.wait_for_selector(".msg.assistant >> text=Quoting you.", timeout=15_000)
    await open_chat(page, link)
    await page.wait_for_selector(f'.session-item[data-key="{key}"]', state="attached")
    await goto_session(page, key)
    await page.wait_for_selector(".msg.assistant >> text=Quoting you.")
    await send(desktop, "quote me")  # the phone shows it (and the reply) live; the desktop shows it once
    await page.wait_for_function("() => document.querySelectorAll('.msg.user').length === 2", timeout=10_000)
    await page.wait_for_function("() => document.querySelectorAll('.msg.assistant .quote').length === 2",
                                 timeout=15_000)
    assert await desktop.locator(".msg.user").count() == 2
    ids = await page.eval_on_selector_all(".msg.user", "nodes => nodes.map(n => n.dataset.id)")
    assert ids == await desktop.eval_on_selector_all(".msg.user", "nodes => nodes.map(n => n.dataset.id)")


async def test_files_attached_on_the_page_reach_the_agent_and_stay_in_the_conversation(
        chat_gateway: GatewayProcess, desktop: Any, tmp_path: Path) -> None:
    from PIL import Image

    page = desktop
    chart, notes = tmp_path / "chart.png", tmp_path / "notes.txt"
    Image.new("RGB", (64, 32), (30, 120, 220)).save(chart)
    notes.write_text("plain notes")
    await open_chat(page, printed_link(chat_gateway))
    await page.click("#new-chat")
    await page.set_input_files("#file-input", [str(chart), str(notes)])
    assert await page.locator("#pending .chip .cname").all_text_contents() == ["chart.png", "notes.txt"]
    await page.fill("#input", "what did I attach?")
    await page.press("#input", "Enter")
    # The agent found both files in its workspace.
    await page.wait_for_selector(".msg.assistant >> text=files: chart.png, notes.txt", timeout=15_000)
    assert await page.is_hidden("#pending")

    async def check() -> None:
        bubble = page.locator(".msg.user", has_text="what did I attach?")
        await page.wait_for_function("() => { const i = document.querySelector('.msg.user .attachment img');"
                                     " return i && i.complete && i.naturalWidth === 64; }")
        assert (await bubble.locator("a.file").text_content() or "").startswith("📄 notes.txt")
        assert "[attachment:" not in (await bubble.text_content() or "")

    await check()
    await page.screenshot(path=str(shots_dir(tmp_path) / "webchat-desktop-attachments.png"))
    await page.reload()
    await page.wait_for_selector('#status[data-state="online"]')
    await check()
    assert page.errors == []


async def test_news_in_another_conversation_is_marked_until_opened(chat_gateway: GatewayProcess, desktop: Any) -> None:
    page = desktop
    await open_chat(page, printed_link(chat_gateway))
    other = f"agent:main:webchat:elsewhere-{os.getpid()}"
    client = await operator(chat_gateway.url, chat_gateway.token or "")
    try:
        await client.call("message.send", {"channel": "webchat", "to": other, "message": "the build is green"})
    finally:
        await client.close()
    item = f'.session-item[data-key="{other}"]'
    await page.wait_for_selector(f"{item}.unread", timeout=10_000)
    await goto_session(page, other)
    await page.wait_for_selector(".msg.assistant >> text=the build is green")
    assert "unread" not in (await page.get_attribute(item, "class") or "")


async def test_scrolled_up_readers_get_a_new_messages_button(chat_gateway: GatewayProcess, page: Any) -> None:
    await open_chat(page, printed_link(chat_gateway))
    await page.click("#new-chat")
    key = await page.text_content("#session-label") or ""
    client = await operator(chat_gateway.url, chat_gateway.token or "")
    try:
        for i in range(25):
            await client.call("message.send", {"channel": "webchat", "to": key, "message": f"line {i}"})
        await page.wait_for_selector(".msg.assistant >> text=line 24")
        assert await page.is_hidden("#jump")  # read at the bottom: it follows
        await page.evaluate("new Promise(done => { const s = document.getElementById('scroller');"
                            " s.addEventListener('scroll', () => done(), {once: true}); s.scrollTop = 0; })")
        await client.call("message.send", {"channel": "webchat", "to": key, "message": "something new"})
        await page.wait_for_selector("#jump:visible")
        await page.click("#jump")
        await page.wait_for_function("() => { const s = document.getElementById('scroller');"
                                     " return s.scrollHeight - s.scrollTop - s.clientHeight < 2; }")
        assert await page.is_hidden("#jump")
    finally:
        await client.close()


async def test_an_approval_and_a_question_are_answered_with_the_page_buttons(
    chat_gateway: GatewayProcess, page: Any, tmp_path: Path
) -> None:
    """The real shim asks (as Claude Code would run it); the page shows buttons; a tap answers the run."""
    import asyncio
    import json

    from tests.mcp_shim.shim import Shim, shim_env

    await open_chat(page, printed_link(chat_gateway))
    await goto_session(page, "agent:main:main")
    shim = await Shim.start(shim_env(chat_gateway, tmp_path, plugin_manifest={"tools": []}))
    await shim.initialize()
    try:
        questions = [{"id": "db", "header": "Database", "question": "Which database?",
                      "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]
        call = asyncio.create_task(shim.call("ask_user", {"questions": questions}, timeout=60))
        await page.wait_for_selector(".msg.assistant .choice >> text=SQLite", timeout=15_000)
        await page.click(".msg.assistant .choice >> text=SQLite")
        result = json.loads((await call)["content"][0]["text"])
        assert result["status"] == "answered" and result["answers"] == {"db": ["SQLite"]}
        args = {"tool_name": "Bash", "input": {"command": "make page"}}
        call = asyncio.create_task(shim.call("approval_prompt", args, timeout=60))
        await page.wait_for_selector(".msg.assistant:has-text('make page') .choice >> text=Allow once", timeout=15_000)
        await page.click(".msg.assistant:has-text('make page') .choice >> text=Allow once")
        verdict = json.loads((await call)["content"][0]["text"])
        assert verdict == {"behavior": "allow", "updatedInput": {"command": "make page"}}
        await page.wait_for_selector(".msg.assistant >> text=Allowed once", timeout=10_000)
        assert not page.errors, page.errors
    finally:
        await shim.close()
