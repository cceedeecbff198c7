"""The real Gemini CLI asks the person before running a command (``permissions: ask``), through ``gemini --acp``.

Gemini runs against the loopback fake Gemini API, which makes it call ``run_shell_command`` (or ``write_file``);
in ``ask`` mode the runtime drives ``gemini --acp`` in Gemini's default approval mode, Gemini sends
``session/request_permission`` to the runtime, the gateway holds the request and an operator decides over the
real gateway. Allow runs the command and its output reaches the model (the fake sees the ``functionResponse``);
Deny gives the model the refusal; a file write is asked with its file; a second turn of the session answers.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.gateway.agents.runtimes.flows import cli_workdir, fake_api
from tests.support.fake_gemini import FakeGemini
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
api = fake_api(FakeGemini)


@pytest.fixture(scope="module")
def gw(api: FakeGemini, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gemini, d = cli_workdir(tmp_path_factory, "gemini")
    env = {"HOME": str(d / "home"), "GOOGLE_GEMINI_BASE_URL": api.url, "GEMINI_API_KEY": "test-key",
           "GEMINI_CLI_NO_RELAUNCH": "true", "NO_COLOR": "1"}
    agent = {"id": "main", "runtime": "gemini", "command": [gemini], "model": "gemini-2.5-flash",
             "permissions": "ask", "env": env}
    config = {"agents": {"list": [agent]}, "approvals": {"timeoutSeconds": 30}}
    with GatewayProcess(d / "gw", config=config) as proc:
        yield proc


async def turn(c: RawClient, message: str, key: str) -> asyncio.Task[Any]:
    acc = await c.call("agent", {"message": message, "sessionKey": key, "idempotencyKey": str(uuid.uuid4())})
    return asyncio.create_task(c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 120_000}, timeout=130))


async def asked(c: RawClient, key: str) -> dict[str, Any]:
    while True:
        event = (await c.next_event("exec.approval.requested", timeout=90))["payload"]
        if event["sourceSessionKey"] == key:
            return event


def responses(api: FakeGemini) -> list[str]:
    """What the model was given back for its function calls."""
    return [json.dumps(part["functionResponse"]) for req in api.requests for msg in req.get("contents") or []
            for part in msg.get("parts") or [] if "functionResponse" in part]


async def last_reply(c: RawClient, key: str) -> str:
    return str((await c.call("chat.history", {"sessionKey": key}))["messages"][-1]["text"])


async def test_allow_runs_the_command_and_deny_refuses(gw: GatewayProcess, api: FakeGemini) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        key = "agent:main:allow"
        done = await turn(c, 'CALL run_shell_command {"command": "touch made.txt && echo approved-42"}', key)
        event = await asked(c, key)
        assert event["presentation"]["commandText"] == "Bash: touch made.txt && echo approved-42"
        await c.call("exec.approval.resolve", {"id": event["id"], "decision": "allow-once"})
        result = await done
        assert result["status"] == "ok", result
        assert "approved-42" in await last_reply(c, key)
        assert any("approved-42" in r for r in responses(api))
        # the same session again: Gemini is asked to load it (session/load); Gemini 0.61 may refuse (it can
        # clobber its own record first, see docs/runtimes.md), and then the turn starts afresh: either way the
        # reply is this turn's alone, never the replayed history
        again = await (await turn(c, "REPLY second turn", key))
        assert again["status"] == "ok", again
        assert await last_reply(c, key) == "second turn"

        key = "agent:main:deny"
        done = await turn(c, 'CALL run_shell_command {"command": "touch denied.txt"}', key)
        event = await asked(c, key)
        await c.call("exec.approval.resolve", {"id": event["id"], "decision": "deny"})
        await done
        assert "canceled by the user" in await last_reply(c, key)
        assert "canceled by the user" in responses(api)[-1]
    finally:
        await c.close()


async def test_a_file_write_is_asked_with_its_file(gw: GatewayProcess, api: FakeGemini) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        key = "agent:main:write"
        done = await turn(c, 'CALL write_file {"file_path": "note.txt", "content": "hello\\nthere\\n"}', key)
        event = await asked(c, key)
        assert event["presentation"]["commandText"] == "Edit: note.txt (new)"
        await c.call("exec.approval.resolve", {"id": event["id"], "decision": "allow-once"})
        result = await done
        assert result["status"] == "ok", result
        assert "Successfully created" in responses(api)[-1]
    finally:
        await c.close()
