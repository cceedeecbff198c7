"""Secrets never come back in an answer (issue #34, security checks): a real gateway holding a gateway token,
a Telegram bot token and a voice provider's API key is pushed into every error path that could echo one
(invalid config writes at and beside secret paths, JSON5 that does not parse, a Telegram login the Bot API
refuses, a voice provider that quotes the key back as OpenAI does, a URL with a key in it), and no frame it
sends (error message, details, a channel's last error) nor its log file holds the secrets' text.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gateway.mcp_http.test_remote_mcp import HEADERS, initialize, url
from tests.support import ROOT
from tests.support.fake_http import FakeHTTPServer, Reply, json_reply
from tests.support.fake_telegram import FakeTelegram
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, connect_params, operator

GW_TOKEN = "gw-secret-token-3e7a91c05b24d8f6"
BOT_TOKEN = "7000001:AAsecretBotTokenTheFakeRefuses42"  # not the fake's token: getMe answers 401
TTS_KEY = "sk-secret-tts-key-0c9d8e7f6a5b4c3d"
SECRETS = (GW_TOKEN, BOT_TOKEN, TTS_KEY)


class EchoingVoiceAPI(FakeHTTPServer):
    """An OpenAI-style speech API that refuses the key and quotes it back, as OpenAI's 401 does."""

    def respond(self, method: str, path: str, raw: bytes) -> Reply | None:
        return json_reply({"error": {"message": f"Incorrect API key provided: {TTS_KEY}.", "code": 401}}, 401)


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    fake = FakeTelegram().start()
    with EchoingVoiceAPI() as voice:
        telegram = {**fake.channel_config(), "botToken": BOT_TOKEN}
        config = {"gateway": {"auth": {"token": GW_TOKEN}}, "logging": {"level": "debug"},
                  "channels": {"telegram": telegram},
                  "messages": {"tts": {"provider": "openai",
                                       "openai": {"apiKey": TTS_KEY, "baseUrl": f"{voice.url}/v1"}}}}
        try:
            with GatewayProcess(tmp_path_factory.mktemp("secrets"), config=config, token=None) as proc:
                yield proc
        finally:
            fake.stop()


class Recorder:
    """Every frame one client receives, as text."""

    def __init__(self, client: RawClient) -> None:
        self.client = client
        self.frames: list[str] = []

    async def req(self, method: str, params: Any = None) -> dict[str, Any]:
        frame = await self.client.req(method, params)
        self.frames.append(json.dumps(frame))
        return frame

    def drain_events(self) -> None:
        while not self.client.events.empty():
            self.frames.append(json.dumps(self.client.events.get_nowait()))


def leaked(text: str) -> list[str]:
    return [s[:12] + "..." for s in SECRETS if s in text]


async def test_no_error_answer_nor_log_line_holds_a_secret(gw: GatewayProcess) -> None:
    rec = Recorder(await operator(gw.url, GW_TOKEN))
    h = (await rec.req("config.get"))["payload"]["hash"]
    refused: list[dict[str, Any]] = []

    async def refuse(method: str, params: dict[str, Any]) -> None:
        frame = await rec.req(method, params)
        assert frame["ok"] is False, (method, params, frame)
        refused.append(frame)

    # Config writes at a secret path, beside one, and carrying a secret's text in the wrong place.
    await refuse("config.set", {"key": "channels.telegram.botToken", "value": 12345, "baseHash": h})
    await refuse("config.set", {"key": "channels.telegram.botToken", "value": {"t": BOT_TOKEN}, "baseHash": h})
    await refuse("config.set", {"key": "gateway.auth.token", "value": [GW_TOKEN], "baseHash": h})
    await refuse("config.set", {"key": "gateway.port", "value": GW_TOKEN, "baseHash": h})
    await refuse("config.set", {"key": "logging.level", "value": TTS_KEY, "baseHash": h})
    await refuse("config.set", {"key": "messages.tts.auto", "value": TTS_KEY, "baseHash": h})
    await refuse("config.set", {"key": f"channels.telegram.{BOT_TOKEN}", "value": 1, "baseHash": h})
    await refuse("config.patch", {"patch": {"gateway": {"auth": {"token": 7, "mode": GW_TOKEN}}}, "baseHash": h})
    await refuse("config.patch", {"patch": {"channels": {"telegram": {"pollTimeoutSeconds": BOT_TOKEN}}},
                                  "baseHash": h})
    await refuse("config.patch", {"raw": f'{{channels: {{telegram: {{botToken: "{BOT_TOKEN}" oops}}}}}}',
                                  "baseHash": h})
    await refuse("config.set", {"raw": f'{{gateway: {{auth: {{token: {GW_TOKEN}}}}}}}', "baseHash": h})
    await refuse("config.patch", {"patch": {"logging": {"level": "info"}}, "baseHash": TTS_KEY})
    # A voice provider that quotes the key back; a URL with a key in it.
    spoken = await rec.req("tts.convert", {"text": "hello there"})  # falls back to another provider, or fails
    failed = spoken["payload"]["fallbacks"] if spoken["ok"] else spoken["error"]["details"]["attempts"]
    assert [a["provider"] for a in failed][:1] == ["openai"], spoken
    await refuse("stt.transcribe", {"url": f"http://user:{TTS_KEY}@127.0.0.1:9/voice.ogg"})

    # The Telegram login the Bot API refused: its reason is shown, the token is not.
    for _ in range(100):
        status = await rec.req("channels.status", {})
        if "token was refused" in json.dumps(status):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"the refused login never showed: {status}")
    # Refused logins: a wrong token that contains the real one, the token as a field name, as a password.
    for auth in ({"token": GW_TOKEN + "x"}, {GW_TOKEN: True}, {"token": 7, "password": GW_TOKEN + "y"}):
        bad = await RawClient.open(gw.url)
        frame = await bad.connect_with({**connect_params(None), "auth": auth})
        await bad.close()
        assert frame["ok"] is False, frame
        refused.append(frame)
        rec.frames.append(json.dumps(frame))
    rec.drain_events()
    await rec.client.close()

    assert all(f["error"]["message"] for f in refused)
    for text in rec.frames:
        assert not leaked(text), text
    for _ in range(100):  # the writer thread writes behind the event loop
        log = "".join(p.read_text() for p in sorted((gw.state_dir / "logs").glob("gateway.log*")))
        if "connect refused" in log:
            break
        await asyncio.sleep(0.05)
    assert "connect refused" in log
    assert not leaked(log + gw.output()), leaked(log + gw.output())


async def test_a_hand_broken_config_file_is_reported_without_its_secrets(gw: GatewayProcess) -> None:
    path = gw.state_dir / "remoteclaw.json"
    good = path.read_text()
    client = await operator(gw.url, GW_TOKEN)
    try:
        # A syntax error on the line holding the token: a parser's message would quote that line.
        path.write_text(good.replace(f'"{GW_TOKEN}"', f'"{GW_TOKEN}" oops'))
        for _ in range(100):
            got = await client.call("config.get")
            if not got["valid"]:
                break
            await asyncio.sleep(0.1)
        assert not got["valid"], got
        assert not leaked(json.dumps(got)), got["issues"]
    finally:
        path.write_text(good)
        await client.close()
    log = "".join(p.read_text() for p in sorted((gw.state_dir / "logs").glob("gateway.log*")))
    assert not leaked(log)


async def test_a_tool_error_over_remote_mcp_holds_no_secret(gw: GatewayProcess) -> None:
    """The same scrub for tool calls that reach the gateway in-process, from a remote MCP client."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    made = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "gateway.cli", "mcp", "token", "create", "--name", "owner", "--owner",
                         "--url", gw.url, "--token", GW_TOKEN], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=60)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip().splitlines()[-1]
    async with httpx.AsyncClient(timeout=30) as client:
        sid = await initialize(client, gw, token)
        headers = {**HEADERS, "accept": "application/json", "authorization": f"Bearer {token}", "mcp-session-id": sid}
        answer = await client.post(url(gw), headers=headers, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "gateway_config_patch", "arguments": {"patches": {"channels": {"telegram": {
                BOT_TOKEN: 1}}}}}})
    result = answer.json()["result"]
    assert result["isError"] and "unexpected property" in json.dumps(result), result
    assert not leaked(answer.text), answer.text


def test_no_file_the_gateway_writes_beside_the_config_repeats_a_secret(gw: GatewayProcess) -> None:
    """Besides the config file, nothing the gateway writes in plain text in its state dir repeats a secret."""
    texts = [p for p in Path(gw.state_dir).rglob("*")
             if p.is_file() and p.suffix in (".log", ".txt", ".json", ".jsonl") and p.name != "remoteclaw.json"
             and p.name != "stdout.log"]
    for p in texts:
        assert not leaked(p.read_text(errors="replace")), p
