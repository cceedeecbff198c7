"""The OpenAI-compatible API (docs/openai-api.md) driven by the real ``openai`` SDK over 127.0.0.1 against a real
gateway process whose agent is the stand-in CLI: models listed, whole and streamed completions, two ``responses``
chained into one session, and the refusals (no credential, another caller's session, an agent the caller may not
use, a malformed body), each leaving nothing stored; images and files in a message given to the agent, and an image by
URL, a Files API id or a file past the limits refused.

The callers: the owner (the gateway token); Alice, a program calling us, modelled as a person (member) holding a
``/mcp`` token made for her (``mcp.tokens.create`` with ``personId``, what ``remoteclaw mcp token create --person``
calls); Bob, a member with his sign-in credential. Agent ``private`` is open to Bob only.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.signin import signin_token
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.timeout(120)

CONFIG = {
    "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]},
                        {"id": "private", "command": [sys.executable, FAKE_CLI], "people": ["bob"]}]},
    "api": {"openai": {"enabled": True, "approvalWaitSeconds": 6, "requestsPerMinute": 60, "burst": 25,
                       "maxRequestBytes": 24 * 1024 * 1024}},  # a file past 10 MB reaches the check of files
    "approvals": {"timeoutSeconds": 60},
}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    base = tmp_path_factory.mktemp("openai-api")
    with GatewayProcess(base / "gw", config=CONFIG, env={"FAKE_CLI_LOG": str(base / "cli.jsonl")}) as proc:
        yield proc


def run_env(gw: GatewayProcess, prompt: str) -> dict[str, str]:
    """The ``REMOTECLAW_*`` environment the stand-in CLI was started with for ``prompt``."""
    log = Path(gw.extra_env["FAKE_CLI_LOG"]).read_text().splitlines()
    runs = [json.loads(line) for line in log if line.strip()]
    return next(r["env"] for r in reversed(runs) if prompt in r["prompt"])


async def owner_call(gw: GatewayProcess, method: str, params: dict[str, Any]) -> Any:
    owner = await operator(gw.url, gw.token or "")
    try:
        return await owner.call(method, params, timeout=30)
    finally:
        await owner.close()


@pytest.fixture(scope="module")
async def tokens(gw: GatewayProcess) -> dict[str, str]:
    """Alice's peer token and Bob's sign-in credential."""
    for person in ("alice", "bob", "carol"):
        await owner_call(gw, "people.create", {"id": person, "name": person.title(), "role": "member"})
    alice = await owner_call(gw, "mcp.tokens.create", {"name": "alice-peer", "personId": "alice"})
    carol = await owner_call(gw, "mcp.tokens.create", {"name": "carol-peer", "personId": "carol"})
    link = (await owner_call(gw, "people.loginLink", {"id": "bob"}))["url"]
    bob = await asyncio.to_thread(signin_token, gw, link)
    return {"alice": alice["token"], "bob": bob, "carol": carol["token"], "owner": gw.token or ""}


def client(gw: GatewayProcess, token: str, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gw.http + "/v1", api_key=token, max_retries=0, default_headers=headers or None,
                              timeout=60)


async def transcript(gw: GatewayProcess, key: str) -> list[tuple[str, str]]:
    history = await owner_call(gw, "chat.history", {"sessionKey": key})
    return [(m["role"], m.get("text") or "") for m in history["messages"] if m["role"] in ("user", "assistant")]


async def session_keys(gw: GatewayProcess) -> set[str]:
    listed = await owner_call(gw, "sessions.list", {"limit": 500})
    return {s["key"] for s in listed["sessions"]}


async def test_models_are_the_agents_the_caller_may_use(gw: GatewayProcess, tokens: dict[str, str]) -> None:
    owner = [m.id async for m in client(gw, tokens["owner"]).models.list()]
    alice = [m.id async for m in client(gw, tokens["alice"]).models.list()]
    bob = [m.id async for m in client(gw, tokens["bob"]).models.list()]
    assert sorted(owner) == ["main", "private"]
    assert alice == ["main"]  # private is open to Bob only
    assert sorted(bob) == ["main", "private"]


async def test_a_whole_and_a_streamed_chat_completion(gw: GatewayProcess, tokens: dict[str, str]) -> None:
    api = client(gw, tokens["alice"], **{"X-Remoteclaw-Conversation": "chat-1"})
    whole = await api.chat.completions.create(
        model="main", messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}])
    assert whole.object == "chat.completion" and whole.model == "main"
    assert whole.choices[0].message.role == "assistant"
    assert whole.choices[0].message.content == "echo: hello there"
    assert whole.choices[0].finish_reason == "stop"
    assert whole.usage is not None and whole.usage.total_tokens > 0
    stream = await api.chat.completions.create(model="main", messages=[{"role": "user", "content": "stream:3"}],
                                               stream=True, stream_options={"include_usage": True})
    chunks = [chunk async for chunk in stream]
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) >= 3, pieces  # it arrived in pieces, as the CLI wrote it
    whole_text = "Part 1 of the answer. Part 2 of the answer. Part 3 of the answer."
    assert " ".join("".join(pieces).split()) == whole_text
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    # the wire ends as OpenAI's does
    async with httpx.AsyncClient(timeout=60) as http:
        raw = await http.post(f"{gw.http}/v1/chat/completions", headers={"authorization": f"Bearer {tokens['alice']}",
                                                                     "X-Remoteclaw-Conversation": "Chat-1"},
                              json={"model": "main", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert raw.text.rstrip().endswith("data: [DONE]"), raw.text[-300:]
    # all three turns are in Alice's own conversation chat-1
    rows = await transcript(gw, "agent:main:person:alice:api:chat-1")
    assert [r for r in rows if r[0] == "user"] == [("user", "hello there"), ("user", "stream:3"), ("user", "hi")]
    assert ("assistant", "echo: hello there") in rows


async def test_two_responses_chain_into_one_session(gw: GatewayProcess, tokens: dict[str, str]) -> None:
    api = client(gw, tokens["alice"])
    first = await api.responses.create(model="main", input="remember the number 7", user="notes")
    assert first.status == "completed" and first.output_text == "echo: remember the number 7"
    assert first.id.startswith("resp_")
    events: list[str] = []
    async with api.responses.stream(model="main", input=[{"role": "user", "content": "what was it?"}],
                                    previous_response_id=first.id) as stream:
        async for event in stream:
            events.append(event.type)
        second = await stream.get_final_response()
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert "response.output_text.delta" in events
    assert second.output_text == "echo: what was it?" and second.previous_response_id == first.id
    # one session, in Alice's name space: the conversation `user` named, continued by previous_response_id
    rows = await transcript(gw, "agent:main:person:alice:api:notes")
    assert rows == [("user", "remember the number 7"), ("assistant", "echo: remember the number 7"),
                    ("user", "what was it?"), ("assistant", "echo: what was it?")]
    # the owner's default conversation is another session altogether
    mine = await client(gw, tokens["owner"]).responses.create(model="main", input="owner here")
    assert mine.output_text == "echo: owner here"
    assert ("user", "owner here") in await transcript(gw, "agent:main:api:default")
    assert ("user", "owner here") not in rows
    # the peer's turn ran at the baseline tier in her session; the owner's at the owner's
    alices_run = run_env(gw, "remember the number 7")
    assert alices_run["REMOTECLAW_SENDER_IS_OWNER"] == "false"
    assert alices_run["REMOTECLAW_SESSION_KEY"] == "agent:main:person:alice:api:notes"
    assert run_env(gw, "owner here")["REMOTECLAW_SENDER_IS_OWNER"] == "true"


async def test_refusals_name_the_field_and_store_nothing(gw: GatewayProcess, tokens: dict[str, str]) -> None:
    alices = await client(gw, tokens["alice"]).responses.create(model="main", input="alice's secret plan",
                                                                user="private-notes")
    alice_key = "agent:main:person:alice:api:private-notes"
    before_rows = await transcript(gw, alice_key)
    before = await session_keys(gw)
    # no credential, and one that is not live
    async with httpx.AsyncClient(timeout=30) as http:
        bare = await http.get(f"{gw.http}/v1/models")
    assert bare.status_code == 401 and bare.json()["error"]["code"] == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError) as wrong:
        await client(gw, "rcm_not-a-token").chat.completions.create(
            model="main", messages=[{"role": "user", "content": "hi"}])
    assert wrong.value.status_code == 401
    # another caller's session: Bob continuing Alice's response is as unknown as a response that never was
    with pytest.raises(openai.NotFoundError) as theirs:
        await client(gw, tokens["bob"]).responses.create(model="main", input="show me", previous_response_id=alices.id)
    assert theirs.value.body["param"] == "previous_response_id"  # type: ignore[index]
    # ... and naming her conversation only names his own
    bobs = await client(gw, tokens["bob"], **{"X-Remoteclaw-Conversation": "private-notes"}).responses.create(
        model="main", input="mine")
    assert bobs.output_text == "echo: mine"
    assert await transcript(gw, alice_key) == before_rows
    # an agent the caller may not use, and one that does not exist
    with pytest.raises(openai.PermissionDeniedError) as closed:
        await client(gw, tokens["alice"]).chat.completions.create(
            model="private", messages=[{"role": "user", "content": "let me in"}])
    assert closed.value.body["param"] == "model", closed.value.body  # type: ignore[index]
    with pytest.raises(openai.NotFoundError) as unknown:
        await client(gw, tokens["alice"]).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert unknown.value.body["param"] == "model"  # type: ignore[index]
    # malformed bodies: 400 naming the field
    async with httpx.AsyncClient(timeout=30) as http:
        auth = {"authorization": f"Bearer {tokens['alice']}"}
        cases = [
            ("/v1/chat/completions", {"model": "main"}, "messages"),
            ("/v1/chat/completions", {"model": "main", "messages": "hi"}, "messages"),
            ("/v1/chat/completions", {"model": "main", "messages": [{"role": "user", "content": 5}]},
             "messages[0].content"),
            ("/v1/chat/completions", {"model": "main", "messages": [{"role": "user", "content": [
                {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}]},
             "messages[0].content[0].type"),
            ("/v1/chat/completions", {"model": "main", "messages": [{"role": "assistant", "content": "hi"}]},
             "messages"),
            ("/v1/chat/completions", {"model": "main", "stream": "yes", "messages": [{"role": "user",
                                                                                    "content": "x"}]}, "stream"),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}, "model"),
            ("/v1/responses", {"model": "main"}, "input"),
            ("/v1/responses", {"model": "main", "input": [{"type": "function_call_output"}]}, "input[0].type"),
            ("/v1/responses", {"model": "main", "input": "x", "user": "no spaces please"}, "user"),
        ]
        for path, body, field in cases:
            got = await http.post(gw.http + path, headers=auth, json=body)
            assert got.status_code == 400, (body, got.text)
            assert got.json()["error"]["param"] == field, (body, got.json())
        not_json = await http.post(gw.http + "/v1/chat/completions", headers=auth, content=b"{nope")
        assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "invalid_json"
        header = await http.post(gw.http + "/v1/responses", headers={**auth, "X-Remoteclaw-Conversation": "a b"},
                                 json={"model": "main", "input": "x"})
        assert header.json()["error"]["param"] == "X-Remoteclaw-Conversation", header.text
    after = await session_keys(gw)
    assert after - before == {"agent:main:person:bob:api:private-notes"}  # Bob's own, above; nothing else
    assert await transcript(gw, alice_key) == before_rows


async def test_a_turn_waiting_for_approval_says_so_and_goes_on(gw: GatewayProcess, tokens: dict[str, str]) -> None:
    api = client(gw, tokens["owner"], **{"X-Remoteclaw-Conversation": "deploys"})
    with pytest.raises(openai.APIStatusError) as waiting:
        await api.chat.completions.create(model="main", messages=[{"role": "user", "content": "ask:make deploy"}])
    assert waiting.value.status_code == 504
    assert waiting.value.body["code"] == "approval_pending", waiting.value.body  # type: ignore[index]
    assert "Bash: make deploy" in waiting.value.message  # it says what it waits for
    assert waiting.value.response.headers["x-should-retry"] == "false"  # the SDK must not send it again
    pending = await owner_call(gw, "exec.approval.list", {})
    mine = [a for a in pending if a.get("sourceSessionKey") == "agent:main:api:deploys"]
    assert mine, pending
    await owner_call(gw, "exec.approval.resolve", {"id": mine[0]["id"], "decision": "allow-once"})
    for _ in range(100):
        rows = await transcript(gw, "agent:main:api:deploys")
        if ("assistant", "approval: allow") in rows:
            break
        await asyncio.sleep(0.2)
    assert ("assistant", "approval: allow") in rows, rows
    # streamed, the same wait ends the stream with the error (the SDK raises it)
    stream = await api.chat.completions.create(model="main", stream=True,
                                               messages=[{"role": "user", "content": "ask:make clean"}])
    with pytest.raises(openai.APIError, match="waiting for an approval"):
        async for _chunk in stream:
            pass


async def test_the_person_decides_on_their_own_page_and_the_caller_gets_the_answer(
        gw: GatewayProcess, tokens: dict[str, str]) -> None:
    page = await RawClient.open(gw.url)  # Bob's web chat page, signed in with his own credential
    try:
        assert (await page.handshake(tokens["bob"]))["ok"]
        api = client(gw, tokens["bob"], **{"X-Remoteclaw-Conversation": "ops"})
        asking = asyncio.create_task(api.chat.completions.create(
            model="main", messages=[{"role": "user", "content": "ask:make test"}]))
        asked = (await page.next_event("exec.approval.requested", timeout=30))["payload"]
        assert asked["presentation"]["commandText"] == "Bash: make test"
        assert asked["sourceSessionKey"] == "agent:main:person:bob:api:ops"  # his conversation, decided by him
        await page.call("exec.approval.resolve", {"id": asked["id"], "decision": "allow-once"})
        answered = await asyncio.wait_for(asking, 30)
    finally:
        await page.close()
    assert answered.choices[0].message.content == "approval: allow"


async def test_each_caller_has_its_own_rate(gw: GatewayProcess, tokens: dict[str, str]) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        answers = [await http.get(f"{gw.http}/v1/models", headers={"authorization": f"Bearer {tokens['carol']}"})
                   for _ in range(40)]
        others = await http.get(f"{gw.http}/v1/models", headers={"authorization": f"Bearer {tokens['bob']}"})
    codes = [a.status_code for a in answers]
    assert codes[:20] == [200] * 20 and 429 in codes, codes
    limited = next(a for a in answers if a.status_code == 429)
    assert limited.json()["error"]["type"] == "rate_limit_error" and int(limited.headers["retry-after-ms"]) > 0
    assert others.status_code == 200  # Carol's bucket is hers


async def test_the_api_is_off_by_default(tmp_path_factory: pytest.TempPathFactory) -> None:
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    with GatewayProcess(tmp_path_factory.mktemp("openai-off"), config=config) as off:
        async with httpx.AsyncClient(timeout=30) as http:
            got = await http.get(f"{off.http}/v1/models", headers={"authorization": f"Bearer {off.token}"})
        assert got.status_code == 404
        refused = await operator(off.url, off.token or "")
        try:
            bad = await refused.req("config.patch", {"raw": '{"api": {"openai": {"enabled": true, "burst": 0}}}',
                                                     "baseHash": (await refused.call("config.get", {}))["hash"]})
        finally:
            await refused.close()
        assert not bad["ok"] and "api.openai.burst" in str(bad["error"]).replace("/", "."), bad



@pytest.mark.parametrize("endpoint", ["chat", "responses"])
async def test_a_client_that_goes_away_mid_stream_stops_its_turn(gw: GatewayProcess, tokens: dict[str, str],
                                                                 endpoint: str) -> None:
    """The stop button of a chat UI closes the stream: the turn stops too (``stopOnDisconnect``), long before its
    CLI would have ended."""
    api = client(gw, tokens["alice"], **{"X-Remoteclaw-Conversation": f"gone-{endpoint}"})
    if endpoint == "chat":
        stream = await api.chat.completions.create(model="main", messages=[{"role": "user", "content": "sleep:30"}],
                                                   stream=True)
        first = await stream.__anext__()
        run_id = first.id.removeprefix("chatcmpl-")
    else:
        stream = await api.responses.create(model="main", input="sleep:30", stream=True)
        first = await stream.__anext__()
        run_id = first.response.id.removeprefix("resp_")
    await stream.close()
    owner = await operator(gw.url, gw.token or "")
    try:
        waited = await owner.call("agent.wait", {"runId": run_id, "timeoutMs": 15_000}, timeout=20)
    finally:
        await owner.close()
    assert waited["status"] == "error" and "abort" in waited.get("error", ""), waited


def cli_run(gw: GatewayProcess, needle: str) -> dict[str, Any]:
    """The stand-in CLI's record of the turn whose prompt has ``needle``: its prompt, and the files it was given."""
    lines = Path(gw.extra_env["FAKE_CLI_LOG"]).read_text().splitlines()
    return next(r for r in reversed([json.loads(line) for line in lines if line.strip()]) if needle in r["prompt"])


def data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def given(run: dict[str, Any], suffix: str) -> list[str]:
    """The sha256 of each file the turn was given whose stored name ends with ``suffix``."""
    return [digest for name, digest in run["attachments"].items() if name.endswith(suffix)]


def stored_uploads(gw: GatewayProcess) -> list[str]:
    """The names of the uploads the gateway keeps (the web chat's media folder)."""
    folder = gw.state_dir / "media" / "webchat"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


PICTURE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16


async def test_images_and_files_in_a_message_reach_the_agents_workspace(gw: GatewayProcess,
                                                                        tokens: dict[str, str]) -> None:
    """A chat completion with an image and a file as data URLs, and a response whose input is a file alone: the
    agent's turn has them in its workspace's attachments/ with their bytes (the stand-in CLI reads them back)."""
    api = client(gw, tokens["alice"], **{"X-Remoteclaw-Conversation": "files"})
    notes = b"quarterly numbers: 1, 2, 3\n"
    whole = await api.chat.completions.create(model="main", messages=[{"role": "user", "content": [
        {"type": "text", "text": "show attachments"},
        {"type": "image_url", "image_url": {"url": data_url(PICTURE, "image/png"), "detail": "low"}},
        {"type": "file", "file": {"file_data": data_url(notes, "text/plain"), "filename": "notes.txt"}}]}])
    reply = whole.choices[0].message.content or ""
    assert "-notes.txt=b'quarterly numbers: 1, 2, 3\\n'" in reply and "-image.png=b'\\x89PNG" in reply, reply
    run = cli_run(gw, "show attachments")
    assert given(run, "-notes.txt") == [hashlib.sha256(notes).hexdigest()], run["attachments"]
    assert given(run, "-image.png") == [hashlib.sha256(PICTURE).hexdigest()], run["attachments"]
    assert "[attachment: image attachments/" in run["prompt"] and "[attachment: file attachments/" in run["prompt"]
    rows = await transcript(gw, "agent:main:person:alice:api:files")
    assert rows[0][0] == "user" and rows[0][1].startswith("show attachments") and "notes.txt" in rows[0][1]
    # Responses: a file alone, and an image, as input_file and input_image; no text at all is still a turn
    report = b"%PDF-1.4 not really a pdf"
    answered = await api.responses.create(model="main", input=[{"role": "user", "content": [
        {"type": "input_file", "file_data": data_url(report, "application/pdf"), "filename": "report.pdf"},
        {"type": "input_image", "image_url": data_url(PICTURE, "image/png")}]}])
    assert answered.status == "completed" and "report.pdf" in answered.output_text, answered.output_text
    alone = cli_run(gw, "report.pdf")
    assert given(alone, "-report.pdf") == [hashlib.sha256(report).hexdigest()], alone["attachments"]
    assert given(alone, "-image.png") == [hashlib.sha256(PICTURE).hexdigest()], alone["attachments"]


async def test_an_image_by_url_a_file_id_or_files_past_the_limits_are_refused(gw: GatewayProcess,
                                                                              tokens: dict[str, str]) -> None:
    """The gateway fetches nothing a caller names: an http(s) image, a Files API id and a file URL are refused with
    OpenAI's error naming the field, as are six files and a file past 10 MB; nothing is stored for any of them."""
    api = client(gw, tokens["alice"], **{"X-Remoteclaw-Conversation": "refused-files"})
    key = "agent:main:person:alice:api:refused-files"
    before = await session_keys(gw)
    text = {"type": "text", "text": "look"}
    chat_cases: list[tuple[list[dict[str, Any]], str, str]] = [
        ([text, {"type": "image_url", "image_url": {"url": "http://169.254.169.254/latest/meta-data"}}],
         "messages[0].content[1].image_url.url", "by URL is not accepted"),
        ([text, {"type": "file", "file": {"file_id": "file-abc123"}}], "messages[0].content[1].file.file_id",
         "file_id is not accepted"),
        ([text, {"type": "image_url", "image_url": {"url": "data:image/png;base64,not base64!"}}],
         "messages[0].content[1].image_url.url", "not base64"),
        ([text] + [{"type": "file", "file": {"file_data": data_url(b"x", "text/plain"), "filename": f"{i}.txt"}}
                   for i in range(6)], "messages[0].content", "more than 5 files"),
        ([text, {"type": "file", "file": {"file_data": data_url(b"\0" * (10 * 1024 * 1024 + 1),
                                                                "application/octet-stream"), "filename": "big.bin"}}],
         "messages[0].content[1].file.file_data", "larger than 10 MB"),
    ]
    for content, param, said in chat_cases:
        with pytest.raises(openai.BadRequestError) as refused:
            await api.chat.completions.create(model="main", messages=[{"role": "user", "content": content}])
        body: dict[str, Any] = refused.value.body  # type: ignore[assignment]
        assert body["param"] == param and said in body["message"], (param, body)
    responses_cases: list[tuple[dict[str, Any], str]] = [
        ({"type": "input_image", "image_url": "https://example.com/cat.png"}, "input[0].content[0].image_url"),
        ({"type": "input_image", "file_id": "file-abc123"}, "input[0].content[0].file_id"),
        ({"type": "input_file", "file_url": "https://example.com/report.pdf"}, "input[0].content[0].file_url"),
        ({"type": "input_file", "filename": "nothing.txt"}, "input[0].content[0].file_data"),
    ]
    for part, param in responses_cases:
        with pytest.raises(openai.BadRequestError) as refused:
            await api.responses.create(model="main", input=[{"role": "user", "content": [part]}])
        assert refused.value.body["param"] == param, refused.value.body  # type: ignore[index]
    assert await session_keys(gw) == before and key not in before
    assert not [name for name in stored_uploads(gw) if name.endswith(("big.bin", "0.txt", "5.txt"))]
