"""A voice message from the web chat page, in real headless Chromium with its fake microphone: the clip is
recorded (MediaRecorder), transcribed by the gateway before the agent sees it, and the agent's reply is
spoken back as a clip the page can play.
"""

from __future__ import annotations

import base64
import os
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.channels.webchat.test_webchat_browser import CHROMIUM, CHROMIUM_ARGS, open_chat
from tests.support.fake_telegram import FAKE_CLI
from tests.support.fake_voice import FakeVoiceAPI
from tests.support.gateway_proc import GatewayProcess
from tests.support.requires import require

playwright_api = pytest.importorskip("playwright.async_api")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def api() -> Iterator[FakeVoiceAPI]:
    with FakeVoiceAPI(transcript="summarise my inbox") as voice_api:
        yield voice_api


@pytest.fixture(scope="module")
def voice_gateway(tmp_path_factory: pytest.TempPathFactory, api: FakeVoiceAPI) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("webchat-voice")
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "messages": {"tts": {"enabled": True, "auto": "inbound", "provider": "local"},
                           "stt": {"provider": "openai", "openai": {"apiKey": "sk-test", "baseUrl": f"{api.url}/v1"}}}}
    with GatewayProcess(root / "state", config=config, env={"FAKE_CLI_LOG": str(root / "cli.log")}) as gw:
        yield gw


@pytest.fixture(autouse=True)
def _needs_tools() -> None:
    require(os.path.exists(CHROMIUM) and shutil.which("espeak-ng") is not None, "needs chromium and espeak-ng")


@pytest.fixture
async def page() -> AsyncIterator[Any]:
    pw = await playwright_api.async_playwright().start()
    browser = await pw.chromium.launch(executable_path=CHROMIUM, args=[
        *CHROMIUM_ARGS, "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"])
    ctx = await browser.new_context(viewport={"width": 1280, "height": 800})
    pg = await ctx.new_page()
    pg.errors = []
    pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))
    yield pg
    await browser.close()
    await pw.stop()


async def test_a_recorded_voice_message_is_heard_and_answered_with_a_clip(
        voice_gateway: GatewayProcess, api: FakeVoiceAPI, page: Any) -> None:
    await open_chat(page, f"http://127.0.0.1:{voice_gateway.port}/#token={voice_gateway.token}")
    await page.click("#record")
    await page.wait_for_selector("#record.recording")
    await page.wait_for_timeout(1500)  # Chromium's fake microphone plays a beep meanwhile
    await page.click("#record")
    await page.wait_for_selector(".msg.user >> text=Voice message")
    # The stand-in agent echoes its prompt: the page shows the transcript the gateway put in it.
    await page.wait_for_selector(".msg.assistant >> text=summarise my inbox", timeout=20_000)
    assert api.transcriptions and api.transcriptions[-1]["model"] == "whisper-1"
    clip = await page.wait_for_selector(".turn audio", timeout=20_000)
    src = await clip.get_attribute("src")
    # MP3, which Safari plays too (OGG/Opus is for Telegram and Discord voice notes)
    assert src and src.startswith("data:audio/mpeg;base64,")
    assert base64.b64decode(src.split(",", 1)[1])[:3] == b"ID3"
    duration = await page.evaluate("""() => new Promise((ok) => { const a = document.querySelector('.turn audio');
        if (a.readyState >= 1) ok(a.duration); else a.addEventListener('loadedmetadata', () => ok(a.duration)); })""")
    assert duration > 0.5  # Chromium itself decodes the clip
    await page.screenshot(path=str(voice_gateway.state_dir / "webchat-voice.png"))
    assert page.errors == []
