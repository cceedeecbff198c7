"""A voice note as the free answer to a pending ``ask_user`` question, on the loopback Telegram.

The run's side is the real MCP shim; the voice note is real OGG/Opus audio the gateway downloads from the fake
Bot API and transcribes through the openai SDK against the fake voice API. Its transcript must come back to the
shim as the answer, and a voice note that cannot be heard must leave the question pending, saying so.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.voice import codec
from tests.gateway.approvals.test_approvals_chat import edited, route, said, sent
from tests.mcp_shim import conftest as shim_fixtures
from tests.mcp_shim.conftest import ShimFactory
from tests.support.fake_telegram import FakeTelegram, cli_runs, module_fake, telegram_gateway
from tests.support.fake_voice import FakeVoiceAPI, tone_wav
from tests.support.gateway_proc import GatewayProcess

pytestmark = pytest.mark.timeout(120)

OWNER = 111
DM_KEY = "agent:main:main"
HEARD = "postgres with the vector extension"
QUESTIONS = [{"id": "db", "header": "Database", "question": "Which database?",
              "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]

fake = module_fake()
start_shim = shim_fixtures.start_shim


@pytest.fixture(scope="module")
def api() -> Iterator[FakeVoiceAPI]:
    with FakeVoiceAPI(transcript=HEARD) as voice_api:
        yield voice_api


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram, api: FakeVoiceAPI) -> Iterator[GatewayProcess]:
    config = {"messages": {"stt": {"provider": "openai", "openai": {"apiKey": "sk-test",
                                                                    "baseUrl": f"{api.url}/v1"}}}}
    with telegram_gateway(tmp_path_factory.mktemp("tg-voice-answer") / "gw", fake, config=config,
                          ownerAllowFrom=[OWNER]) as proc:
        yield proc


def voice_note(fake: FakeTelegram, file_id: str) -> None:
    """The owner sends a voice note (real OGG/Opus audio) in their DM."""
    fake.files[file_id] = codec.to_ogg_opus(tone_wav(0.8)).data
    fake.user_message(chat_id=OWNER, user_id=OWNER,
                      voice={"file_id": file_id, "file_unique_id": file_id.lower(), "duration": 1,
                             "mime_type": "audio/ogg", "file_size": len(fake.files[file_id])})


def payload(result: dict[str, Any]) -> dict[str, Any]:
    assert not result.get("isError"), result
    return json.loads(result["content"][0]["text"])


async def test_a_voice_note_answers_a_pending_question(
    gw: GatewayProcess, fake: FakeTelegram, api: FakeVoiceAPI, start_shim: ShimFactory
) -> None:
    await fake.wait_polling()
    await route(fake, OWNER, OWNER)
    runs = len(cli_runs(gw.state_dir))
    shim = await start_shim(gw, session_key=DM_KEY, channel="telegram", to=str(OWNER), plugin_manifest={"tools": []})
    call = asyncio.create_task(shim.call("ask_user", {"questions": QUESTIONS}, timeout=60))
    await sent(fake, OWNER, "Which database?")
    voice_note(fake, "VA1")
    answered = payload(await call)
    assert answered["answers"] == {"db": [HEARD]} and answered["answeredBy"] == f"telegram:{OWNER}"
    assert api.transcriptions  # heard by the speech-to-text service, not guessed
    await edited(fake, OWNER, f"✅ Answered by telegram:{OWNER}: {HEARD}")
    assert len(cli_runs(gw.state_dir)) == runs  # the answer never became a prompt of its own


async def test_a_voice_note_that_cannot_be_heard_leaves_the_question_open(
    gw: GatewayProcess, fake: FakeTelegram, api: FakeVoiceAPI, start_shim: ShimFactory
) -> None:
    await fake.wait_polling()
    shim = await start_shim(gw, session_key=DM_KEY, channel="telegram", to=str(OWNER), plugin_manifest={"tools": []})
    call = asyncio.create_task(shim.call("ask_user", {"questions": QUESTIONS}, timeout=60))
    await sent(fake, OWNER, "Which database?")
    api.fail("stt", 500)
    try:
        voice_note(fake, "VA2")
        await said(fake, OWNER, "could not take your voice message as the answer")
    finally:
        api.fail("stt", None)
    assert not call.done()
    fake.user_message(chat_id=OWNER, user_id=OWNER, text="2")
    assert payload(await call)["answers"] == {"db": ["SQLite"]}
