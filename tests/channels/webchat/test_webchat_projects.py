"""The web chat with a project: the header shows project and branch, a turn's diff shows under its answer.

Real headless Chromium, a real gateway whose agent is the stand-in CLI (``edit:<path>`` edits a file in its
working directory), a real git repository; the session is switched with the header's project picker (which
calls ``sessions.project``; chats type ``/project``).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_telegram import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.gitrepo import make_repo
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


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("wcproj") / "site", {"index.html": "<h1>old</h1>\n"})


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, repo: Path) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("webchat-projects")
    agent = {"id": "main", "command": [sys.executable, FAKE_CLI],
             "projects": [{"name": "site", "path": str(repo), "worktrees": True}]}
    with GatewayProcess(root / "state", config={"agents": {"list": [agent]}}, token=None) as proc:
        yield proc


@pytest.fixture(scope="module")
async def page(gw: GatewayProcess) -> AsyncIterator[Any]:
    pw = await playwright_api.async_playwright().start()
    browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    ctx = await browser.new_context(viewport={"width": 1280, "height": 800})
    pg = await ctx.new_page()
    pg.errors = []
    pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))
    yield pg
    await ctx.close()
    await browser.close()
    await pw.stop()


def printed_link(gw: GatewayProcess) -> str:
    m = re.search(r"web chat: (http://\S+/#token=\S+)", gw.output())
    assert m, gw.output()
    return m.group(1).replace("localhost", "127.0.0.1")


async def send(page: Any, text: str) -> None:
    await page.fill("#input", text)
    await page.click("#send")


async def test_header_and_diff_in_the_web_chat(gw: GatewayProcess, page: Any, repo: Path) -> None:
    await page.goto(printed_link(gw))
    await page.wait_for_selector('#status[data-state="online"]', timeout=10_000)
    await page.click("#new-chat")
    key = await page.text_content("#session-label")
    await send(page, "hello")
    await page.wait_for_selector(".turn .msg.assistant >> text=echo: hello", timeout=15_000)
    assert await page.is_hidden("#session-project")  # no project yet

    client = await operator(gw.url, gw.token or "")
    bad = await client.req("sessions.project", {"sessionKey": key, "project": "nope"})
    await client.close()
    assert not bad["ok"] and bad["error"]["details"]["field"] == "project"
    pick = page.locator("#project-pick")
    await pick.wait_for()  # the session exists now: the picker offers the agent's projects
    assert await pick.locator("option").all_text_contents() == ["no project", "📁 site"]
    assert await pick.input_value() == ""
    await pick.select_option("site")
    await page.wait_for_function(
        "() => (document.querySelector('#session-project')?.textContent || '').startsWith('📁 site')",
        timeout=10_000)

    await send(page, "edit:index.html edit:<b>x.txt please")
    block = page.locator(".turn details.diff").last
    await block.wait_for(timeout=15_000)
    summary = await block.locator("summary").text_content() or ""
    assert summary.startswith("📝 2 files changed, +4 \N{MINUS SIGN}1") and summary.endswith("-1.diff")
    assert not await block.locator("pre").is_visible()  # collapsed until asked
    await block.locator("summary").click()
    added = await block.locator("pre .da").all_text_contents()
    assert "+edited by the agent\n" in added and "+line 1\n" in added
    assert "-<h1>old</h1>\n" in await block.locator("pre .dr").all_text_contents()
    assert await page.locator("#messages b").count() == 0  # file names and lines are text, never markup
    header = page.locator("#session-project")
    await header.wait_for()
    assert re.fullmatch(r"📁 site · remoteclaw/\S+", await header.text_content() or "")

    # After a reload the diff comes back from the transcript.
    await page.reload()
    await page.wait_for_selector('#status[data-state="online"]')
    await page.locator(".turn details.diff").last.wait_for(timeout=10_000)
    await page.wait_for_function(  # the header is filled in once the page has asked for the status
        "() => (document.querySelector('#session-project')?.textContent || '').startsWith('📁 site')",
        timeout=10_000)
    assert not (repo / "index.html").read_text().startswith("edited")  # the worktree changed, not the repo
    assert page.errors == []

    # On a phone the picker and the header fit: nothing wider than the screen.
    await page.set_viewport_size({"width": 390, "height": 844})
    await page.locator("#project-pick").wait_for()
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
