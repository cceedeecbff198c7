"""``approval_prompt`` and ``ask_user`` through the real shim, decided by an operator over the real gateway.

The shim runs as Claude Code would run it (stdin/stdout, MCP), the gateway is a real process, and the decision
comes from a second operator connection, as OpenClaw's Control UI sends it. Effects are checked where they land:
the answer the shim gives its client, the events operators see, the history and the rules in the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_shim.conftest import ShimFactory
from tests.mcp_shim.shim import Shim
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.timeout(120)

CONFIG = {"approvals": {"timeoutSeconds": 5}}


@pytest.fixture(scope="module")
def approvals_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with GatewayProcess(tmp_path_factory.mktemp("gw"), config=CONFIG) as gw:
        yield gw


@pytest.fixture
async def reviewer(approvals_gateway: GatewayProcess) -> AsyncIterator[RawClient]:
    """An operator with only ``operator.approvals`` and ``operator.questions``, as a phone's reviewer app."""
    client = await operator(
        approvals_gateway.url, approvals_gateway.token or "", scopes=["operator.approvals", "operator.questions"]
    )
    yield client
    await client.close()


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    """The permission-prompt answer: one text block holding JSON (what Claude Code parses)."""
    assert not result.get("isError"), result
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text"
    return json.loads(result["content"][0]["text"])


async def prompt(shim: Shim, command: str) -> asyncio.Task[dict[str, Any]]:
    args = {"tool_name": "Bash", "input": {"command": command, "description": "run it"}, "tool_use_id": "toolu_1"}
    return asyncio.create_task(shim.call("approval_prompt", args, timeout=60))


async def requested(client: RawClient, command: str) -> dict[str, Any]:
    while True:
        event = (await client.next_event("exec.approval.requested", timeout=15))["payload"]
        if event["presentation"]["commandText"] == f"Bash: {command}":
            return event


async def test_allow_once_then_a_second_decision_is_refused(
    approvals_gateway: GatewayProcess, start_shim: ShimFactory, reviewer: RawClient
) -> None:
    shim = await start_shim(approvals_gateway, plugin_manifest={"tools": []})
    call = await prompt(shim, "make deploy")
    pending = await requested(reviewer, "make deploy")
    assert pending["status"] == "pending" and pending["sourceSessionKey"] == "agent:main:main"
    assert pending["presentation"]["allowedDecisions"] == ["allow-once", "allow-always", "deny"]
    listed = await reviewer.call("exec.approval.list")
    assert [a["id"] for a in listed] == [pending["id"]]
    resolved = await reviewer.call(
        "exec.approval.resolve",
        {
            "id": pending["id"],
            "decision": "allow-once",
            "reviewer": {"channel": "telegram", "accountId": "default", "senderId": "42"},
        },
    )
    assert resolved["approval"]["status"] == "allowed"
    assert verdict(await call) == {
        "behavior": "allow",
        "updatedInput": {"command": "make deploy", "description": "run it"},
    }
    event = (await reviewer.next_event("exec.approval.resolved"))["payload"]
    assert event["id"] == pending["id"] and event["decision"] == "allow-once"
    assert event["resolver"] == {"kind": "channel", "id": "telegram:42"}
    second = await reviewer.req("exec.approval.resolve", {"id": pending["id"], "decision": "deny"})
    assert not second["ok"] and second["error"]["details"]["code"] == "ALREADY_RESOLVED"
    assert "allow-once by telegram:42" in second["error"]["message"]
    assert await reviewer.call("exec.approval.list") == []
    history = await reviewer.call("approval.history", {"limit": 10})
    assert pending["id"] in [i["id"] for i in history["items"]]


async def test_deny_returns_the_message_and_nobody_deciding_denies(
    approvals_gateway: GatewayProcess, start_shim: ShimFactory, reviewer: RawClient
) -> None:
    shim = await start_shim(approvals_gateway, plugin_manifest={"tools": []})
    call = await prompt(shim, "rm -rf build")
    pending = await requested(reviewer, "rm -rf build")
    await reviewer.call("approval.resolve", {"id": pending["id"], "kind": "exec", "decision": "deny"})
    answer = verdict(await call)
    assert answer["behavior"] == "deny" and "denied permission to use Bash" in answer["message"]
    # Nobody decides: after approvals.timeoutSeconds (5 s here) it is a deny, saying so.
    call = await prompt(shim, "sleep 1000")
    pending = await requested(reviewer, "sleep 1000")
    answer = verdict(await call)
    assert answer["behavior"] == "deny" and "timeout" in answer["message"]
    got = await reviewer.call("exec.approval.get", {"id": pending["id"]})
    assert got["approval"]["status"] == "expired" and got["approval"]["reason"] == "timeout"
    late = await reviewer.req("exec.approval.resolve", {"id": pending["id"], "decision": "allow-once"})
    assert not late["ok"] and late["error"]["details"]["code"] == "EXPIRED"


async def test_allow_always_persists_across_a_restart_and_can_be_revoked(
    tmp_path: Path, start_shim: ShimFactory
) -> None:
    gw = GatewayProcess(tmp_path / "gw", config=CONFIG)
    with gw:
        client = await operator(gw.url, gw.token or "")
        shim = await start_shim(gw, plugin_manifest={"tools": []})
        call = await prompt(shim, "git status")
        pending = await requested(client, "git status")
        await client.call("exec.approval.resolve", {"id": pending["id"], "decision": "allow-always"})
        assert verdict(await call)["behavior"] == "allow"
        await client.close()
        await shim.close()
        gw.stop()
        gw.start()
        client = await operator(gw.url, gw.token or "")
        rules = (await client.call("approvals.rules.list"))["rules"]
        assert [(r["agentId"], r["pattern"], r["approvalId"]) for r in rules] == [
            ("main", "Bash(git status)", pending["id"])
        ]
        shim = await start_shim(gw, plugin_manifest={"tools": []})
        # The rule answers at once; another command still asks.
        assert verdict(await (await prompt(shim, "git status")))["behavior"] == "allow"
        assert (await client.call("approvals.rules.list"))["rules"][0]["useCount"] == 1
        other = await prompt(shim, "git push")
        pending = await requested(client, "git push")
        await client.call("exec.approval.resolve", {"id": pending["id"], "decision": "deny"})
        assert verdict(await other)["behavior"] == "deny"
        revoked = await client.call("approvals.rules.revoke", {"id": rules[0]["id"]})
        assert revoked == {"outcome": "revoked"}
        assert await client.call("approvals.rules.revoke", {"id": rules[0]["id"]}) == {"outcome": "already-revoked"}
        again = await prompt(shim, "git status")
        pending = await requested(client, "git status")  # asks again
        await client.call("exec.approval.resolve", {"id": pending["id"], "decision": "deny"})
        assert verdict(await again)["behavior"] == "deny"
        await client.close()


QUESTIONS = [
    {
        "id": "db",
        "header": "Database",
        "question": "Which database?",
        "options": [{"label": "Postgres", "description": "server"}, {"label": "SQLite"}],
    }
]


async def test_ask_user_answered_by_an_operator(
    approvals_gateway: GatewayProcess, start_shim: ShimFactory, reviewer: RawClient
) -> None:
    shim = await start_shim(approvals_gateway, plugin_manifest={"tools": []})
    call = asyncio.create_task(shim.call("ask_user", {"questions": QUESTIONS}, timeout=60))
    asked = (await reviewer.next_event("question.requested", timeout=15))["payload"]
    assert asked["questions"][0]["questionId"] == "db" and asked["status"] == "pending"
    assert asked["expiresAtMs"] - asked["createdAtMs"] == 900_000  # the default: 900 s
    listed = await reviewer.call("question.list")
    assert [q["id"] for q in listed["questions"]] == [asked["id"]]
    wrong = await reviewer.req("question.resolve", {"id": asked["id"], "answers": {"answers": {"nope": ["x"]}}})
    assert not wrong["ok"] and "unknown questionId nope" in wrong["error"]["message"]
    done = await reviewer.call(
        "question.resolve",
        {"id": asked["id"], "answers": {"answers": {"db": ["SQLite"]}}, "resolvedBy": "webchat:alice"},
    )
    assert done == {"status": "answered", "answers": {"answers": {"db": ["SQLite"]}}}
    result = await call
    assert not result.get("isError"), result
    payload = json.loads(result["content"][0]["text"])
    assert payload["status"] == "answered" and payload["answers"] == {"db": ["SQLite"]}
    assert payload["answeredBy"] == "webchat:alice"
    event = (await reviewer.next_event("question.resolved"))["payload"]
    assert event == {"id": asked["id"], "status": "answered", "answers": {"answers": {"db": ["SQLite"]}}}
    got = await reviewer.call("question.get", {"id": asked["id"]})
    assert got["question"]["status"] == "answered" and got["question"]["resolvedBy"] == "webchat:alice"


async def test_ask_user_no_answer_at_the_timeout_and_bad_questions_refused(
    approvals_gateway: GatewayProcess, start_shim: ShimFactory
) -> None:
    shim = await start_shim(approvals_gateway, plugin_manifest={"tools": []})
    payload = await shim.call_ok("ask_user", {"questions": QUESTIONS, "timeoutSeconds": 1})
    assert payload["status"] == "no_answer"
    one_option = [{**QUESTIONS[0], "options": [{"label": "only"}]}]
    result = await shim.call("ask_user", {"questions": one_option})
    assert result.get("isError") and "at least 2" in result["content"][0]["text"]
    four = [{**QUESTIONS[0], "id": f"q{i}"} for i in range(4)]
    result = await shim.call("ask_user", {"questions": four})
    assert result.get("isError") and "at most 3" in result["content"][0]["text"]


class CuttableRelay:
    """A TCP relay to the gateway whose live connections can be cut (the shim's socket drops, then reconnects)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"ws://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers += [writer, up_writer]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        for writer in self.writers:
            writer.transport.abort()
        self.writers.clear()

    async def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()


async def test_a_decision_made_while_the_shim_reconnects_still_reaches_it(
    approvals_gateway: GatewayProcess, start_shim: ShimFactory, reviewer: RawClient
) -> None:
    relay = CuttableRelay(approvals_gateway.port)
    url = await relay.start()
    try:
        shim = await start_shim(approvals_gateway, plugin_manifest={"tools": []}, REMOTECLAW_GATEWAY_URL=url)
        call = await prompt(shim, "make test")
        pending = await requested(reviewer, "make test")
        relay.cut()  # the shim's socket is gone while the person decides
        await reviewer.call("exec.approval.resolve", {"id": pending["id"], "decision": "allow-once"})
        assert verdict(await call)["behavior"] == "allow"
    finally:
        await relay.close()


async def test_the_web_chat_page_shows_the_request_and_answers_it_by_typing(
    approvals_gateway: GatewayProcess, start_shim: ShimFactory
) -> None:
    key = "agent:main:webchat:approvals"
    page = await operator(approvals_gateway.url, approvals_gateway.token or "")
    try:
        shim = await start_shim(approvals_gateway, session_key=key, to=key, plugin_manifest={"tools": []})
        call = asyncio.create_task(shim.call("ask_user", {"questions": QUESTIONS}, timeout=60))

        async def shown(text: str) -> dict[str, Any]:
            while True:
                history = await page.call("chat.history", {"sessionKey": key})
                found = [m for m in history["messages"] if text in (m.get("text") or "")]
                if found:
                    return found[-1]
                await asyncio.sleep(0.2)

        prompt = await asyncio.wait_for(shown("Which database?"), 15)
        assert "2. SQLite" in prompt["text"]
        sent = await page.call("chat.send", {"sessionKey": key, "message": "1", "idempotencyKey": "answer-1"})
        assert sent["status"] == "decided"
        payload = json.loads((await call)["content"][0]["text"])
        assert payload["answers"] == {"db": ["Postgres"]}
        call = await prompt_in(shim, key)
        text = (await asyncio.wait_for(shown("asks to use Bash: make web"), 15))["text"]
        approval_id = text.split("/approve ", 1)[1].split()[0]
        await page.call(
            "chat.send",
            {"sessionKey": key, "message": f"/approve {approval_id} allow-always", "idempotencyKey": "approve-1"},
        )
        assert verdict(await call)["behavior"] == "allow"
        await asyncio.wait_for(shown("Allowed always"), 15)
    finally:
        await page.close()


async def prompt_in(shim: Shim, key: str) -> asyncio.Task[dict[str, Any]]:
    args = {"tool_name": "Bash", "input": {"command": "make web"}}
    return asyncio.create_task(shim.call("approval_prompt", args, timeout=60))
