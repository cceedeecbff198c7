"""The real Gemini CLI asks the person before running a command (``permissions: ask``), through ``gemini --acp``.

Gemini runs against the loopback fake Gemini API, which makes it call ``run_shell_command`` (or ``write_file``);
in ``ask`` mode the runtime drives ``gemini --acp`` in Gemini's default approval mode, Gemini sends
``session/request_permission`` to the runtime, the gateway holds the request and an operator decides over the
real gateway. Allow runs the command and its output reaches the model (the fake sees the ``functionResponse``);
Deny gives the model the refusal; a file write is asked with its file; a second turn of the session answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.gateway.agents.runtimes.flows import cli_workdir, decided_turn, fake_api, last_reply, start_turn
from tests.gateway.agents.runtimes.test_gemini import user_env
from tests.support.fake_gemini import FakeGemini
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
api = fake_api(FakeGemini)


@pytest.fixture(scope="module")
def gw(api: FakeGemini, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gemini, d = cli_workdir(tmp_path_factory, "gemini")
    agent = {"id": "main", "runtime": "gemini", "command": [gemini], "model": "gemini-2.5-flash",
             "permissions": "ask", "env": user_env(d, api.url)}
    config = {"agents": {"list": [agent]}, "approvals": {"timeoutSeconds": 30}}
    with GatewayProcess(d / "gw", config=config) as proc:
        yield proc


def responses(api: FakeGemini) -> list[str]:
    """What the model was given back for its function calls."""
    return [json.dumps(part["functionResponse"]) for req in api.requests for msg in req.get("contents") or []
            for part in msg.get("parts") or [] if "functionResponse" in part]


async def test_allow_runs_the_command_and_deny_refuses(gw: GatewayProcess, api: FakeGemini) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        key = "agent:main:allow"
        command = 'CALL run_shell_command {"command": "touch made.txt && echo approved-42"}'
        event, result = await decided_turn(c, command, key, "allow-once")
        assert event["presentation"]["commandText"] == "Bash: touch made.txt && echo approved-42"
        assert result["status"] == "ok", result
        assert "approved-42" in await last_reply(c, key)
        assert any("approved-42" in r for r in responses(api))
        # the same session again: Gemini is asked to load it (session/load); Gemini 0.61 may refuse (it can
        # clobber its own record first, see docs/runtimes.md), and then the turn starts afresh: either way the
        # reply is this turn's alone, never the replayed history
        again = await (await start_turn(c, "REPLY second turn", key))
        assert again["status"] == "ok", again
        assert await last_reply(c, key) == "second turn"

        key = "agent:main:deny"
        await decided_turn(c, 'CALL run_shell_command {"command": "touch denied.txt"}', key, "deny")
        assert "canceled by the user" in await last_reply(c, key)
        assert "canceled by the user" in responses(api)[-1]
    finally:
        await c.close()


async def test_a_file_write_is_asked_with_its_file(gw: GatewayProcess, api: FakeGemini) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        key = "agent:main:write"
        write = 'CALL write_file {"file_path": "note.txt", "content": "hello\\nthere\\n"}'
        event, result = await decided_turn(c, write, key, "allow-once")
        assert event["presentation"]["commandText"] == "Edit: note.txt (new)"
        assert result["status"] == "ok", result
        assert "Successfully created" in responses(api)[-1]
    finally:
        await c.close()
