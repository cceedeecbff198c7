"""The gateway's agents as A2A agents, driven by a2a-sdk's own client in a separate process (``sdk_peer.py``)
against a real gateway process with the stand-in agent CLI: the card, a streamed and a blocking message, a task
read back, a task canceled (its run stopped), a dropped stream resubscribed; and the refusals: no credential,
another peer's task and context, an agent the peer may not use, a slash command, a malformed body (nothing
stored); files in a message given to the agent, and a file by URL or past the limits refused. Peers are people with
a token made for them (``mcp.tokens.create --person``)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import FAKE_CLI, ROOT
from tests.support.gateway_proc import GatewayProcess
from tests.support.signin import signin_token
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.timeout(180)

CONFIG = {
    "agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]},
                        {"id": "private", "command": [sys.executable, FAKE_CLI], "people": ["alice"]}]},
    "a2a": {"enabled": True, "requestsPerMinute": 1000},
}


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[GatewayProcess]:
    base = tmp_path_factory.mktemp("a2a")
    with GatewayProcess(base / "gw", config=CONFIG, env={"FAKE_CLI_LOG": str(base / "cli.jsonl")}) as proc:
        yield proc


@pytest.fixture(scope="module")
async def peers(gw: GatewayProcess) -> dict[str, str]:
    """Two peers, each a person with a token made for them by the owner."""
    owner = await operator(gw.url, gw.token or "")
    tokens = {}
    try:
        for person in ("alice", "bob"):
            await owner.call("people.create", {"id": person, "name": person.title(), "role": "member"})
            made = await owner.call("mcp.tokens.create", {"name": f"{person}-a2a", "personId": person})
            tokens[person] = made["token"]
    finally:
        await owner.close()
    return tokens


def peer(url: str, token: str, *args: str, timeout: float = 60, stdin: str | None = None) -> list[dict[str, Any]]:
    """Run the SDK's client once as its own process; its JSON lines."""
    done = subprocess.run([sys.executable, "-m", "tests.gateway.a2a.sdk_peer", url, token, *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, input=stdin)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert lines, done.stderr[-2000:]
    return lines


async def spawn(url: str, token: str, *args: str) -> asyncio.subprocess.Process:
    """The SDK's client as a process whose lines the test reads as they come."""
    return await asyncio.create_subprocess_exec(sys.executable, "-m", "tests.gateway.a2a.sdk_peer", url, token,
                                                *args, stdout=asyncio.subprocess.PIPE, cwd=ROOT)


def final_state(events: list[dict[str, Any]]) -> str:
    states = [e["statusUpdate"]["status"]["state"] if "statusUpdate" in e else e["task"]["status"]["state"]
              for e in events if "statusUpdate" in e or "task" in e]
    return states[-1] if states else ""


def task_rows(gw: GatewayProcess) -> list[tuple[str, str, str, str]]:
    with sqlite3.connect(gw.state_dir / "remoteclaw.db") as db:
        return db.execute("SELECT id, person_id, session_key, state FROM a2a_tasks").fetchall()


async def history(gw: GatewayProcess, key: str) -> list[str]:
    owner = await operator(gw.url, gw.token or "")
    try:
        got = await owner.call("chat.history", {"sessionKey": key})
    finally:
        await owner.close()
    return [m.get("text") or "" for m in got["messages"]]


async def test_the_card_names_the_agent_its_interface_and_bearer(gw: GatewayProcess) -> None:
    card = (await asyncio.to_thread(peer, f"{gw.http}/a2a/main", "-", "card"))[0]
    assert card["name"] == "main" and card["capabilities"]["streaming"] is True
    assert card["supportedInterfaces"] == [{"url": f"{gw.http}/a2a/main", "protocolBinding": "JSONRPC",
                                            "protocolVersion": "1.0"}]
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert [s["id"] for s in card["skills"]] == ["chat"]
    async with httpx.AsyncClient() as http:  # the default agent's card at the root too
        root = (await http.get(f"{gw.http}/.well-known/agent-card.json")).json()
        missing = await http.get(f"{gw.http}/a2a/nobody/.well-known/agent-card.json")
    assert root["name"] == "main" and missing.status_code == 404


async def test_a_streamed_message_is_a_turn_in_the_peers_session(gw: GatewayProcess, peers: dict[str, str]) -> None:
    events = await asyncio.to_thread(peer, f"{gw.http}/a2a/main", peers["alice"], "stream", "hi stream:3", "ctx-one")
    pieces = [e["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in events if "artifactUpdate" in e]
    assert pieces[:3] == ["Part 1 of the answer. ", "Part 2 of the answer. ", "Part 3 of the answer. "], events
    assert final_state(events) == "TASK_STATE_COMPLETED"
    task_id = events[0]["task"]["id"]
    key = "agent:main:person:alice:a2a:ctx-one"
    assert (task_id, "alice", key, "completed") in task_rows(gw)
    said = await history(gw, key)
    assert said[0] == "hi stream:3" and "Part 3 of the answer" in said[-1]
    # GetTask reads it back, with the whole reply as its artifact
    got = (await asyncio.to_thread(peer, f"{gw.http}/a2a/main", peers["alice"], "get", task_id))[0]
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    assert got["artifacts"][0]["parts"][0]["text"].endswith("Part 3 of the answer.")
    # the same contextId again: the same session (the CLI is resumed there)
    again = await asyncio.to_thread(peer, f"{gw.http}/a2a/main", peers["alice"], "send", "second", "ctx-one")
    assert again[0]["task"]["status"]["message"]["parts"][0]["text"] == "echo: second"
    assert (await history(gw, key))[-2:] == ["second", "echo: second"]


async def test_cancel_stops_the_run_and_resubscribe_follows_a_dropped_stream(gw: GatewayProcess,
                                                                            peers: dict[str, str]) -> None:
    url, token = f"{gw.http}/a2a/main", peers["bob"]
    stream = await spawn(url, token, "stream", "sleep:30", "ctx-cancel")
    assert stream.stdout is not None
    first = json.loads(await stream.stdout.readline())
    task_id = first["task"]["id"]
    stream.kill()  # the stream drops; the task goes on
    await stream.wait()
    follow = await spawn(url, token, "subscribe", task_id)
    assert follow.stdout is not None
    resumed = json.loads(await follow.stdout.readline())
    assert resumed.get("task", {}).get("id") == task_id or "statusUpdate" in resumed, resumed
    canceled = (await asyncio.to_thread(peer, url, token, "cancel", task_id))[0]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED", canceled
    out, _ = await asyncio.wait_for(follow.communicate(), 30)
    rest = [json.loads(line) for line in out.decode().splitlines()]
    assert final_state([resumed, *rest]) == "TASK_STATE_CANCELED"
    stored = (await asyncio.to_thread(peer, url, token, "get", task_id))[0]
    run_id = stored["metadata"]["runId"]  # the working status names the run it follows
    owner = await operator(gw.url, gw.token or "")
    try:  # the run itself was stopped, not only the task marked: it ended long before its 30 s sleep
        waited = await owner.call("agent.wait", {"runId": run_id, "timeoutMs": 10_000}, timeout=15)
    finally:
        await owner.close()
    assert waited["status"] == "error" and "abort" in waited.get("error", ""), waited
    assert ("canceled" in {row[3] for row in task_rows(gw) if row[0] == task_id})


async def test_refusals(gw: GatewayProcess, peers: dict[str, str]) -> None:
    url = f"{gw.http}/a2a/main"
    mine = await asyncio.to_thread(peer, url, peers["alice"], "send", "alice's secret", "ctx-private")
    alice_task = mine[0]["task"]["id"]
    before = len(task_rows(gw))
    # no credential: 401 before anything is read
    nobody = (await asyncio.to_thread(peer, url, "-", "send", "hello"))[0]
    assert "401" in nobody["error"] or "Unauthorized" in nobody["error"], nobody
    # another peer's task: as unknown as one that never was, for reading, cancelling and continuing it
    for action in ("get", "cancel", "subscribe"):
        other = (await asyncio.to_thread(peer, url, peers["bob"], action, alice_task))[0]
        assert other.get("type") == "TaskNotFoundError", (action, other)
    cont = await asyncio.to_thread(peer, url, peers["bob"], "send", "continue hers", "ctx-private", alice_task)
    assert cont[0].get("type") == "TaskNotFoundError", cont
    # another peer's contextId: a conversation of bob's own, alice's untouched
    theirs = await asyncio.to_thread(peer, url, peers["bob"], "send", "what did she say?", "ctx-private")
    assert theirs[0]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "what did she say?" not in await history(gw, "agent:main:person:alice:a2a:ctx-private")
    assert "what did she say?" in await history(gw, "agent:main:person:bob:a2a:ctx-private")
    after_bob = len(task_rows(gw))
    assert after_bob == before + 1
    # an agent bob may not use (agents.list[].people): refused, nothing stored
    private = (await asyncio.to_thread(peer, f"{gw.http}/a2a/private", peers["bob"], "send", "let me in"))[0]
    assert "403" in private["error"] or "not open" in private["error"], private
    ok = await asyncio.to_thread(peer, f"{gw.http}/a2a/private", peers["alice"], "send", "hello private")
    assert ok[0]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {peers['bob']}", "a2a-version": "1.0"}) as http:
        # a slash command: refused, naming the field, no turn
        slash = await http.post(url, json={"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "/new"}]}}})
        assert slash.json()["error"]["code"] == -32602 and slash.json()["id"] == 7
        assert slash.json()["error"]["data"]["field"] == "params.message.parts[0].text"
        # malformed bodies: clear JSON-RPC errors
        not_json = await http.post(url, content=b"{not json")
        assert not_json.status_code == 400 and not_json.json()["error"]["code"] == -32700
        no_method = await http.post(url, json={"jsonrpc": "2.0", "id": 8, "params": {}})
        assert no_method.json()["error"]["code"] == -32600
        unknown = await http.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "tasks/explode", "params": {}})
        assert unknown.json()["error"]["code"] == -32601
        bad = await http.post(url, json={"jsonrpc": "2.0", "id": 10, "method": "SendMessage",
                                         "params": {"message": {"parts": "not a list"}}})
        assert bad.json()["error"]["code"] in (-32602, -32600), bad.json()
        huge = await http.post(url, content=b"x" * (2 * 1024 * 1024))
        assert huge.status_code == 413
    assert len(task_rows(gw)) == after_bob + 1  # only alice's message to the private agent was stored
    assert not any("/new" in s for s in await history(gw, "agent:main:person:bob:a2a:ctx-private"))


async def read_until(proc: asyncio.subprocess.Process, done: Any, timeout: float = 60) -> list[dict[str, Any]]:
    """The SDK client's events as they come, until ``done(event)`` holds for one."""
    assert proc.stdout is not None
    got: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while True:
            line = await proc.stdout.readline()
            assert line, f"the client ended before the awaited event: {got}"
            got.append(json.loads(line))
            if done(got[-1]):
                return got


def state_of(event: dict[str, Any]) -> str:
    status = (event.get("statusUpdate") or event.get("task") or {}).get("status") or {}
    return str(status.get("state") or "")


async def test_an_approval_in_the_turn_is_input_required_until_its_person_decides(
        gw: GatewayProcess, peers: dict[str, str]) -> None:
    """The agent asks to run a command: the SDK client sees ``input-required`` saying what waits; Alice, the person
    whose conversation it is, gets the approval on her own web chat page (signed in with her own credential) and
    allows it; the task goes back to ``working`` and completes with the agent's answer."""
    url, key = f"{gw.http}/a2a/main", "agent:main:person:alice:a2a:ctx-approve"
    owner = await operator(gw.url, gw.token or "")
    try:
        link = (await owner.call("people.loginLink", {"id": "alice"}))["url"]
    finally:
        await owner.close()
    page = await RawClient.open(gw.url)  # Alice's web chat page
    stream = await spawn(url, peers["alice"], "stream", "ask:make deploy", "ctx-approve")
    try:
        assert (await page.handshake(await asyncio.to_thread(signin_token, gw, link)))["ok"]
        before = await read_until(stream, lambda e: state_of(e) == "TASK_STATE_INPUT_REQUIRED")
        waiting = before[-1]["statusUpdate"]["status"]["message"]["parts"][0]["text"]
        assert waiting == "waiting for approval: Bash: make deploy", before
        task_id = before[0]["task"]["id"]
        got = (await asyncio.to_thread(peer, url, peers["alice"], "get", task_id))[0]
        assert got["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # stored too: GetTask says so
        asked = (await page.next_event("exec.approval.requested", timeout=30))["payload"]
        assert asked["sourceSessionKey"] == key and asked["presentation"]["commandText"] == "Bash: make deploy"
        await page.call("exec.approval.resolve", {"id": asked["id"], "decision": "allow-once"})
        after = await read_until(stream, lambda e: state_of(e) == "TASK_STATE_COMPLETED")
    finally:
        await page.close()
        if stream.returncode is None:
            stream.kill()
        await stream.wait()
    states = [state_of(e) for e in after if state_of(e)]
    assert states[0] == "TASK_STATE_WORKING" and states[-1] == "TASK_STATE_COMPLETED", after
    assert after[-1]["statusUpdate"]["status"]["message"]["parts"][0]["text"] == "approval: allow"
    assert (await history(gw, key))[-1] == "approval: allow"


async def test_a_file_the_agent_sends_is_an_artifact_the_peer_reads(gw: GatewayProcess, peers: dict[str, str]) -> None:
    """The agent writes a file in its turn, then sends it to the conversation (``message_send_attachment``): the SDK
    client gets an artifact with its name, type and URL, and fetches the file's bytes there with its own bearer."""
    url, key = f"{gw.http}/a2a/main", "agent:main:person:bob:a2a:ctx-file"
    args = json.dumps({"target": key, "file": "report.txt", "caption": "the report"})
    events = await asyncio.to_thread(peer, url, peers["bob"], "stream",
                                     f"edit:report.txt tool:message_send_attachment {args}", "ctx-file")
    assert final_state(events) == "TASK_STATE_COMPLETED", events
    files = [p for e in events if "artifactUpdate" in e for p in e["artifactUpdate"]["artifact"]["parts"]
             if "url" in p]
    assert len(files) == 1, json.dumps(events)[-3000:]
    assert files[0]["filename"] == "report.txt" and files[0]["mediaType"].startswith("text/plain"), files
    task = (await asyncio.to_thread(peer, url, peers["bob"], "get", events[0]["task"]["id"]))[0]
    assert any(p.get("url") == files[0]["url"] for a in task["artifacts"] for p in a["parts"]), task
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {peers['bob']}"}) as http:
        fetched = await http.get(files[0]["url"])
        assert fetched.status_code == 200 and fetched.content == b"line 1\nline 2\nline 3\n", fetched
        anonymous = await http.get(files[0]["url"], headers={"authorization": ""})
    assert anonymous.status_code in (401, 403)


def cli_run(gw: GatewayProcess, needle: str) -> dict[str, Any]:
    """The stand-in CLI's record of the turn whose prompt has ``needle``: its prompt, and the files it was given."""
    lines = Path(gw.extra_env["FAKE_CLI_LOG"]).read_text().splitlines()
    return next(r for r in reversed([json.loads(line) for line in lines if line.strip()]) if needle in r["prompt"])


def raw(data: bytes, filename: str, media_type: str) -> dict[str, str]:
    """A file part with its bytes, as A2A 1.0's JSON has it."""
    return {"raw": base64.b64encode(data).decode(), "filename": filename, "mediaType": media_type}


def given(run: dict[str, Any], name: str) -> str:
    """The sha256 of the file the turn was given under ``<random>-<name>``."""
    found = [digest for file, digest in run["attachments"].items() if file.endswith("-" + name)]
    assert len(found) == 1, run["attachments"]
    return str(found[0])


async def test_files_in_a_message_reach_the_agents_workspace(gw: GatewayProcess, peers: dict[str, str]) -> None:
    """The SDK client sends text, two files with their bytes and a data part: the agent's turn has both files in its
    workspace's attachments/ (the stand-in CLI reads them back), the data part as JSON in its message, and the task
    keeps no file bytes. A message with a file and no text is a turn too."""
    url, key = f"{gw.http}/a2a/main", "agent:main:person:alice:a2a:ctx-files"
    notes, picture = b"hello from the peer\n", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
    parts = [{"text": "show attachments"}, raw(notes, "notes.txt", "text/plain"),
             raw(picture, "dot.png", "image/png"), {"data": {"ticket": 12, "labels": ["a", "b"]}}]
    events = await asyncio.to_thread(peer, url, peers["alice"], "stream-parts", "ctx-files", stdin=json.dumps(parts))
    assert final_state(events) == "TASK_STATE_COMPLETED", events
    reply = events[-1]["statusUpdate"]["status"]["message"]["parts"][0]["text"]
    assert "-notes.txt=b'hello from the peer\\n'" in reply and "-dot.png=b'\\x89PNG" in reply, reply
    run = cli_run(gw, "show attachments")
    assert given(run, "notes.txt") == hashlib.sha256(notes).hexdigest()
    assert given(run, "dot.png") == hashlib.sha256(picture).hexdigest()
    assert '{"labels": ["a", "b"], "ticket": 12}' in run["prompt"], run["prompt"]  # keys sorted
    assert "[attachment: file attachments/" in run["prompt"] and "[attachment: image attachments/" in run["prompt"]
    said = await history(gw, key)
    assert said[0].startswith("show attachments") and "notes.txt" in said[0], said
    task_id = events[0]["task"]["id"]
    with sqlite3.connect(gw.state_dir / "remoteclaw.db") as db:
        body = db.execute("SELECT body FROM a2a_tasks WHERE id = ?", (task_id,)).fetchone()[0]
    assert base64.b64encode(picture).decode()[:40] not in body and "dot.png" in body  # named, its bytes not kept
    # a file alone, no text: still a turn, the file given to the agent
    alone = b"just a file, no words"
    only = await asyncio.to_thread(peer, url, peers["alice"], "send-parts", "ctx-files",
                                   stdin=json.dumps([raw(alone, "only.txt", "text/plain")]))
    assert only[0]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", only
    assert "only.txt" in only[0]["task"]["status"]["message"]["parts"][0]["text"]
    assert given(cli_run(gw, "only.txt"), "only.txt") == hashlib.sha256(alone).hexdigest()


async def test_a_file_by_url_or_past_the_limits_is_refused_and_nothing_stored(
        gw: GatewayProcess, peers: dict[str, str]) -> None:
    """A file part given by URL is never fetched: the SDK client's message is refused naming the part, with no task,
    no session and no transcript entry; so are six files, and a file larger than 10 MB (a2a.maxRequestBytes raised
    so that the body itself is let in)."""
    url, key = f"{gw.http}/a2a/main", "agent:main:person:bob:a2a:ctx-refused"
    before = len(task_rows(gw))
    by_url = [{"text": "read this"}, {"url": "http://169.254.169.254/latest/meta-data", "filename": "creds"}]
    refused = (await asyncio.to_thread(peer, url, peers["bob"], "stream-parts", "ctx-refused",
                                       stdin=json.dumps(by_url)))[0]
    assert "parts[1].url: a file by url is not accepted" in refused["error"], refused
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {peers['bob']}", "a2a-version": "1.0"},
                                 timeout=60) as http:
        async def send(parts: list[dict[str, Any]], method: str = "SendMessage") -> dict[str, Any]:
            got = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {
                "messageId": "m-refused", "role": "ROLE_USER", "contextId": "ctx-refused", "parts": parts}}})
            return dict(got.json()["error"])

        legacy = await send([{"kind": "file", "file": {"uri": "file:///etc/passwd", "name": "passwd"}}],
                            "message/send")  # A2A 0.3's shape: the same refusal
        assert legacy["code"] == -32602 and legacy["data"]["field"] == "params.message.parts[0].file.uri", legacy
        many = await send([raw(b"x", f"f{i}.txt", "text/plain") for i in range(6)])
        assert many["data"]["field"] == "params.message.parts" and "more than 5 files" in many["message"], many
        owner = await operator(gw.url, gw.token or "")
        try:
            h = (await owner.call("config.get", {}))["hash"]
            await owner.call("config.patch", {"patch": {"a2a": {"maxRequestBytes": 24 * 1024 * 1024}}, "baseHash": h})
            large = await send([{"text": "take this"}, raw(b"\0" * (10 * 1024 * 1024 + 1), "big.bin",
                                                            "application/octet-stream")])
        finally:
            h = (await owner.call("config.get", {}))["hash"]
            await owner.call("config.patch", {"patch": {"a2a": {"maxRequestBytes": None}}, "baseHash": h})
            await owner.close()
        assert large["data"]["field"] == "params.message.parts[1].raw" and "larger than 10 MB" in large["message"]
    assert len(task_rows(gw)) == before
    assert key not in {row[2] for row in task_rows(gw)}
    owner = await operator(gw.url, gw.token or "")
    try:
        listed = await owner.call("sessions.list", {"limit": 500})
    finally:
        await owner.close()
    assert key not in {s["key"] for s in listed["sessions"]}
