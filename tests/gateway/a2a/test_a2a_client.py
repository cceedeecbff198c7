"""Our A2A client against a2a-sdk's own minimal server (``sdk_agent.py``, a real process on 127.0.0.1):
``remoteclaw a2a card`` and ``remoteclaw a2a send`` as commands, and ``a2a.send`` (the ``a2a_send`` tool's
method) from a real gateway whose ``a2a.peers[]`` names it, with the credential kept as a config secret."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from tests.gateway.a2a.conftest import PEER_TOKEN
from tests.support import FAKE_CLI, ROOT
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = pytest.mark.timeout(120)


def remoteclaw(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway.cli", "a2a", *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)


def test_the_cli_reads_the_card_and_streams_the_reply(sdk_server: str) -> None:
    card = remoteclaw("card", sdk_server)
    assert card.returncode == 0, card.stderr
    assert json.loads(card.stdout)["name"] == "sdk-echo"
    sent = remoteclaw("send", sdk_server, "hello there", "--credential", PEER_TOKEN)
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.strip() == "sdk says: hello there"
    assert "[completed] task " in sent.stderr
    assert httpx.get(sdk_server + "/seen").json()["authorization"] == f"Bearer {PEER_TOKEN}"
    refused = remoteclaw("send", sdk_server, "hello", "--credential", "wrong")
    assert refused.returncode == 1 and "401" in refused.stderr, refused.stderr


async def test_a2a_send_calls_a_configured_peer(sdk_server: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "a2a": {"peers": [{"name": "echo", "url": sdk_server, "credential": PEER_TOKEN}]}}
    with GatewayProcess(tmp_path_factory.mktemp("a2a-client"), config=config) as gw:
        owner = await operator(gw.url, gw.token or "")
        try:
            out = await owner.call("a2a.send", {"peer": "echo", "message": "from the gateway"}, timeout=60)
            assert out["reply"] == "sdk says: from the gateway" and out["state"] == "completed", out
            assert out["taskId"] and out["contextId"]
            unknown = await owner.req("a2a.send", {"peer": "nobody", "message": "x"})
            assert not unknown["ok"] and unknown["error"]["details"]["field"] == "peer", unknown
            shown = await owner.call("config.get", {})
            assert PEER_TOKEN not in json.dumps(shown)  # the peer's credential is a secret in config
        finally:
            await owner.close()
