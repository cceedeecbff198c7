"""The web chat's people page in real headless Chromium against a real gateway whose agent is the stand-in CLI.

An admin (the gateway token) adds Alice through the page's forms, links her Telegram and makes her a sign-in link;
Alice opens it in a browser of her own, sees herself as a member with no People page and chats in her own
session; the admin revokes that sign-in and Alice's page says she is signed out. A second test drives the other
forms (role, budget, unlink, link code, remove) and signing out. What the page did is checked in the database
through ``people.list`` and ``people.signins.list`` over a socket of the test's own. Screenshots (phone and
desktop) go to ``WEBCHAT_SCREENSHOT_DIR`` as in ``test_webchat_browser.py``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.requires import require
from tests.support.ws import operator

playwright_api = pytest.importorskip("playwright.async_api")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run"]
FAKE_CLI = str(ROOT / "tests/support/fake_cli.py")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}


@pytest.fixture(autouse=True)
def _needs_chromium() -> None:
    require(os.path.exists(CHROMIUM), "needs /usr/bin/chromium (apt-get install chromium)")


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("webchat-people")
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    with GatewayProcess(root / "state", config=config, env={"FAKE_CLI_ECHO_ONLY": "1"}) as proc:
        yield proc


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    pw = await playwright_api.async_playwright().start()
    b = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield b
    await b.close()
    await pw.stop()


async def new_page(browser: Any, **options: Any) -> tuple[Any, Any]:
    ctx = await browser.new_context(**options)
    pg = await ctx.new_page()
    pg.errors = []
    pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))
    pg.on("console", lambda msg: pg.errors.append(msg.text) if msg.type == "error" else None)
    return ctx, pg


def shots_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("WEBCHAT_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def open_chat(page: Any, link: str) -> None:
    await page.goto(link)
    await page.wait_for_selector('#status[data-state="online"]', timeout=10_000)


async def open_people(page: Any) -> None:
    """The People button is in the list's foot (behind the ☰ menu on a phone)."""
    await page.wait_for_selector("#open-people", state="attached")
    await page.wait_for_function("() => !document.getElementById('open-people').hidden", timeout=10_000)
    if await page.is_visible("#menu"):
        await page.click("#menu")
    await page.click("#open-people")
    await page.wait_for_selector("#people:not([hidden]) .person, #people-note:has-text('Nobody')", timeout=10_000)


async def signed_in_as(page: Any, name: str) -> None:
    """Wait until the page's "you" area names ``name`` (a function, not an expression: the page's CSP forbids eval)."""
    await page.wait_for_function("n => document.getElementById('you-name').textContent === n", arg=name,
                                 timeout=10_000)


async def submit(form: Any, **values: str) -> None:
    for name, value in values.items():
        field = form.locator(f"[name={name}]")
        if await field.evaluate("x => x.tagName") == "SELECT":
            await field.select_option(value)
        else:
            await field.fill(value)
    await form.locator("button[type=submit]").click()


async def people_rows(gw: GatewayProcess) -> dict[str, dict[str, Any]]:
    c = await operator(gw.url, gw.token or "")
    try:
        return {p["id"]: p for p in (await c.call("people.list", {}))["people"]}
    finally:
        await c.close()


async def live_signins(gw: GatewayProcess, person: str) -> list[dict[str, Any]]:
    c = await operator(gw.url, gw.token or "")
    try:
        return list((await c.call("people.signins.list", {"id": person}))["signins"])
    finally:
        await c.close()


async def no_sideways_scroll(page: Any) -> None:
    wide = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth, "
                               "document.getElementById('people').scrollWidth, "
                               "document.getElementById('people').clientWidth]")
    assert wide[0] <= wide[1] and wide[2] <= wide[3], wide


async def test_an_admin_adds_alice_who_signs_in_chats_and_is_signed_out_by_a_revoke(
        gw: GatewayProcess, browser: Any, tmp_path: Path) -> None:
    shots = shots_dir(tmp_path)
    admin_ctx, admin = await new_page(browser, **DESKTOP)
    alice_ctx, alice = await new_page(browser, **PHONE)
    try:
        # (a) the gateway token: no name shown, but the People page
        await open_chat(admin, f"{gw.http}/#token={gw.token}")
        await open_people(admin)
        assert await admin.is_hidden("#you-who")
        add = admin.locator("form.p-add")
        await submit(add, id="Alice!", name="Alice")  # the gateway's error, naming the field, beside the form
        await add.locator(".form-error", has_text="invalid id").wait_for()
        assert await add.locator("[name=id]").get_attribute("aria-invalid") == "true"
        await submit(add, id="alice", name="Alice", role="member", maxCostPerDay="2.5")
        card = admin.locator('.person[data-id="alice"]')
        await card.wait_for()
        assert await add.locator(".form-error").text_content() == ""
        assert await admin.text_content("#people-count") == "1 person"
        await card.locator(".p-manage > summary").click()
        await submit(card.locator("form.p-link"), channel="telegram", senderId="201")
        await card.locator('.p-chat[data-chat="telegram:201"]').wait_for()
        await card.locator("button.p-signinlink").click()
        url = await card.locator("code.p-url").text_content(timeout=10_000)
        assert url and re.search(r"/#signin=[A-Z2-9]{32}$", url), url
        rows = await people_rows(gw)
        alice_row = rows["alice"]
        assert (alice_row["name"], alice_row["role"], alice_row["maxCostPerDay"]) == ("Alice", "member", 2.5)
        assert [(i["channel"], i["senderId"]) for i in alice_row["identities"]] == [("telegram", "201")]
        assert "2.50/day" in (await card.locator(".p-budget").first.text_content() or "")
        await admin.screenshot(path=str(shots / "webchat-desktop-people.png"))

        # (b) Alice's own browser: herself, a member, no People page, her own conversation
        await open_chat(alice, url.replace("localhost", "127.0.0.1"))
        await signed_in_as(alice, "Alice")
        assert await alice.text_content("#you-role") == "member"
        assert await alice.text_content("#session-label") == "agent:main:person:alice"
        assert await alice.is_hidden("#handoff")  # a shell on the gateway's machine is no member's
        assert (await alice.evaluate("localStorage.getItem('remoteclaw.token')")).startswith("rcp_")
        await alice.fill("#input", "hello from alice")
        await alice.click("#send")
        await alice.wait_for_selector(".msg.assistant >> text=echo: hello from alice", timeout=30_000)
        await alice.click("#menu")
        assert await alice.is_hidden("#open-people")
        await alice.click("#you-signins > summary")
        await alice.wait_for_selector("#you-signin-list .signin .s-badge.this", timeout=10_000)
        await alice.screenshot(path=str(shots / "webchat-phone-you.png"))
        await alice.click("#close-menu")

        # (c) the admin revokes her sign-in from the People page: her page is signed out at once
        await card.locator("button.p-signins-show").click()
        signin = card.locator(".p-signins .signin")
        await signin.first.wait_for()
        assert await signin.count() == 1
        await signin.locator("button.revoke").click()
        await alice.wait_for_selector('#status[data-state="auth"]', timeout=10_000)
        assert "signed out" in (await alice.text_content("#token-error") or "")
        assert await alice.evaluate("localStorage.getItem('remoteclaw.token')") is None
        assert await alice.locator("#messages > *").count() == 0  # nothing of hers stays on the page
        assert await alice.is_visible("#token-form")
        assert await live_signins(gw, "alice") == []
        await alice.screenshot(path=str(shots / "webchat-phone-signed-out.png"))
        assert admin.errors == [] and alice.errors == [], (admin.errors, alice.errors)
    finally:
        await admin_ctx.close()
        await alice_ctx.close()


async def test_role_budget_unlink_link_code_remove_and_signing_out_on_a_phone(
        gw: GatewayProcess, browser: Any, tmp_path: Path) -> None:
    shots = shots_dir(tmp_path)
    c = await operator(gw.url, gw.token or "")
    try:
        await c.call("people.create", {"id": "bob", "name": "Bob", "role": "member", "maxCostPerDay": 1})
        await c.call("people.link", {"id": "bob", "channel": "discord", "senderId": "8880002"})
        bob_link = (await c.call("people.loginLink", {"id": "bob"}))["url"]
    finally:
        await c.close()
    admin_ctx, admin = await new_page(browser, **PHONE)
    bob_ctx, bob = await new_page(browser, **DESKTOP)
    try:
        await open_chat(admin, f"{gw.http}/#token={gw.token}")
        await open_people(admin)
        await no_sideways_scroll(admin)
        card = admin.locator('.person[data-id="bob"]')
        await card.locator(".p-manage > summary").click()
        await no_sideways_scroll(admin)
        change = card.locator("form.p-change")
        await submit(change, maxCostPerDay="-1")  # refused by the gateway: the message names the field
        await change.locator(".form-error", has_text="maxCostPerDay").wait_for()
        assert await change.locator("[name=maxCostPerDay]").get_attribute("aria-invalid") == "true"
        await submit(change, role="guest", maxCostPerDay="")  # an empty budget: none
        await card.locator(".p-role", has_text="guest").wait_for()
        rows = await people_rows(gw)
        assert (rows["bob"]["role"], rows["bob"]["maxCostPerDay"]) == ("guest", None)
        await card.locator('.p-chat[data-chat="discord:8880002"] button').click()
        await card.locator(".p-chats", has_text="no chats linked").wait_for()
        assert (await people_rows(gw))["bob"]["identities"] == []
        await card.locator("button.p-linkcode").click()
        code = await card.locator("code.p-code").text_content(timeout=10_000)
        assert code and re.fullmatch(r"/link [A-Z2-9]{8}", code), code
        await admin.screenshot(path=str(shots / "webchat-phone-people.png"))

        # Bob signs in, then signs out: the page forgets him and his sign-in is revoked
        await open_chat(bob, bob_link.replace("localhost", "127.0.0.1"))
        await signed_in_as(bob, "Bob")
        assert len(await live_signins(gw, "bob")) == 1
        await bob.click("#sign-out")
        await bob.wait_for_selector('#status[data-state="auth"]', timeout=10_000)
        assert "You signed out" in (await bob.text_content("#token-error") or "")
        assert await bob.evaluate("localStorage.getItem('remoteclaw.token')") is None
        assert await live_signins(gw, "bob") == []

        # removing takes a second click; then Bob is gone from the database
        remove = card.locator("button.p-remove")
        await remove.click()
        await card.locator("button.p-remove.confirm").wait_for()
        assert "bob" in await people_rows(gw)
        await remove.click()
        await card.wait_for(state="detached", timeout=10_000)
        assert "bob" not in await people_rows(gw)

        # the gateway token signs out too: only forgotten (it is nobody's sign-in)
        await admin.click("#close-people")
        await admin.click("#menu")
        await admin.click("#sign-out")
        await admin.wait_for_selector("#token-form:not([hidden])", timeout=10_000)
        assert await admin.evaluate("localStorage.getItem('remoteclaw.token')") is None
        assert admin.errors == [] and bob.errors == [], (admin.errors, bob.errors)
    finally:
        await admin_ctx.close()
        await bob_ctx.close()
