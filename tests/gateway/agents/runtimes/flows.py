"""The flows every real agent CLI goes through, written once and run per CLI.

A CLI's test module supplies only what differs: its runtime name, the agent entry (command, model,
env pointing the CLI at its loopback fake), and how to read the fake's request log. The checks
here are the union of what the per-CLI tests used to assert, so no CLI is checked less strictly.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.agents.runtimes.conftest import cli
from tests.support import SUPPORT
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

SPAWN_TOOL = "mcp__remoteclaw__sessions_spawn"


def fake_api(cls: type) -> Any:
    """A module-scoped fixture serving the fake model API ``cls`` for the whole module."""

    @pytest.fixture(scope="module")
    def api() -> Iterator[Any]:
        with cls() as fake:
            yield fake

    return api


def cli_workdir(tmp_path_factory: pytest.TempPathFactory, name: str) -> tuple[str, Path]:
    """The installed CLI ``name`` (skipped if missing) and a scratch folder for its run, with an empty ``home``."""
    binary = cli(name)
    d = tmp_path_factory.mktemp(name)
    (d / "home").mkdir()
    return binary, d


@contextmanager
def agent_gateway(d: Path, agent: dict[str, Any], *, loop_channel: bool = True,
                  config: dict[str, Any] | None = None) -> Iterator[GatewayProcess]:
    """The real gateway with one agent ``main`` (``agent`` is its entry) and, if asked, the loop test channel.

    With the loop channel, DMs get a session per peer and what the channel sends lands in
    ``proc.outbox`` (NDJSON). ``config``: more settings (its ``agents`` keys join the agent list's).
    """
    extra = dict(config or {})
    cfg: dict[str, Any] = {**extra, "agents": {**extra.get("agents", {}), "list": [{"id": "main", **agent}]}}
    env = {}
    if loop_channel:
        cfg["session"] = {"dmScope": "per-channel-peer"}
        cfg["channels"] = {"loop": {"dmPolicy": "open", "outbox": str(d / "outbox.ndjson")}}
        env["PYTHONPATH"] = str(SUPPORT / "loop_site")
    with GatewayProcess(d / "gw", config=cfg, env=env) as proc:
        proc.outbox = d / "outbox.ndjson"  # type: ignore[attr-defined]
        yield proc


async def ask(c: RawClient, message: str, key: str) -> dict:
    """One agent turn on session ``key``, waited for to the end."""
    acc = await c.call("agent", {"message": message, "sessionKey": key, "idempotencyKey": str(uuid.uuid4())})
    return await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 90_000}, timeout=100)


async def start_turn(c: RawClient, message: str, key: str) -> asyncio.Task[Any]:
    """One agent turn on session ``key``, started; the task waits for its end (meanwhile the test can decide
    what the turn asks the person)."""
    acc = await c.call("agent", {"message": message, "sessionKey": key, "idempotencyKey": str(uuid.uuid4())})
    return asyncio.create_task(c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 120_000}, timeout=130))


async def approval_asked(c: RawClient, key: str) -> dict[str, Any]:
    """The next ``exec.approval.requested`` of session ``key`` (an operator client sees them all)."""
    while True:
        event = (await c.next_event("exec.approval.requested", timeout=90))["payload"]
        if event["sourceSessionKey"] == key:
            return event


async def decided_turn(c: RawClient, message: str, key: str, decision: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A turn that asks the person once, decided ``decision`` by the operator: the request and the turn's end."""
    done = await start_turn(c, message, key)
    event = await approval_asked(c, key)
    await c.call("exec.approval.resolve", {"id": event["id"], "decision": decision})
    return event, await done


async def undecided_turn(c: RawClient, message: str, key: str) -> str:
    """A turn whose request nobody decides: it expires (``approvals.timeoutSeconds``), a late decision is
    refused, and the turn ends anyway; its reply."""
    done = await start_turn(c, message, key)
    event = await approval_asked(c, key)
    await done
    got = await c.call("exec.approval.get", {"id": event["id"]})
    assert got["approval"]["status"] == "expired"
    late = await c.req("exec.approval.resolve", {"id": event["id"], "decision": "allow-once"})
    assert not late["ok"]
    return await last_reply(c, key)


NOTICES = ("🔐 ", "❓ ", "✅ Allowed", "✅ Answered", "⛔ Denied", "⌛ ", "✖️ ")
"""How the approval's request and outcome notices told to the session's chat begin (``gateway.approvals.chat``):
told beside the turn, an outcome may land after a fast reply."""


async def last_reply(c: RawClient, key: str) -> str:
    """The text of the session's last message that is not an approval notice."""
    messages = (await c.call("chat.history", {"sessionKey": key}))["messages"]
    return str(next(m["text"] for m in reversed(messages) if not str(m.get("text", "")).startswith(NOTICES)))


async def spawn_child_then_resume(gw: GatewayProcess, *, runtime: str, key: str, label: str,
                                  requests: Callable[[], list[dict]], transcript: Callable[[dict], str],
                                  spawn_tool: str | None = SPAWN_TOOL, prefix: str = "") -> int:
    """The model calls ``sessions_spawn`` through the shim; then a second turn resumes the same CLI session.

    Returns how many ``requests()`` there were before the second turn (for a CLI's own checks on it).

    Args:
        runtime: the runtime name, also the key of the CLI's id in ``status.cliSessionIds``.
        requests: the fake's conversation requests so far (the ones that offer tools, or all).
        transcript: the conversation a request carries, as text (to see earlier turns replayed).
        spawn_tool: the exact tool name the history must show; ``None`` checks only its suffix.
        prefix: text before the ``CALL`` line of the first prompt.
    """
    c = await operator(gw.url, gw.token or "")
    res = await ask(c, f'{prefix}CALL sessions_spawn {{"task": "REPLY child says hi", "label": "{label}"}}', key)
    assert res["status"] == "ok", res
    assert res["reply"].startswith("done:") and "agent:main:subagent:" in res["reply"], res
    kid = (await c.call("sessions.resolve", {"label": label}))["key"]
    assert (await c.call("status", {"sessionKey": kid}))["parentSessionKey"] == key
    sub = await c.call("sessions.subagents", {"action": "list", "sessionKey": key})
    assert [s["key"] for s in sub["subagents"]] == [kid]
    for _ in range(300):  # the child is a real run of the same CLI
        hist = (await c.call("chat.history", {"sessionKey": kid}))["messages"]
        if hist and hist[-1]["role"] == "assistant":
            break
        await asyncio.sleep(0.2)
    assert hist[-1]["text"] == "child says hi"
    tools = [m["tool"]["name"] for m in (await c.call("chat.history", {"sessionKey": key}))["messages"]
             if m["role"] == "tool"]
    assert len(tools) == 1 and tools[0].endswith("sessions_spawn"), tools
    if spawn_tool is not None:
        assert tools == [spawn_tool]
    # A second turn resumes the same CLI session: the model sees the first turn again.
    first_id = (await c.call("status", {"sessionKey": key}))["cliSessionIds"][runtime]
    before = len(requests())
    res = await ask(c, "REPLY second turn", key)
    assert res["status"] == "ok" and res["reply"] == "second turn", res
    later = [r for r in requests()[before:] if "second turn" in transcript(r)]
    assert later and "sessions_spawn" in transcript(later[0])
    assert (await c.call("status", {"sessionKey": key}))["cliSessionIds"][runtime] == first_id
    await c.close()
    return before


def loop_dm(gw: GatewayProcess, sender: str, msg_id: str, text: str) -> None:
    """A direct message from ``sender`` into the loop channel's webhook (as a chat app would deliver it)."""
    body = {"sender": sender, "id": msg_id, "text": text}
    req = urllib.request.Request(f"{gw.http}/channels/loop/default/webhook", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(req, timeout=10).read()


def loop_sent(gw: GatewayProcess, sender: str) -> list[str]:
    """The texts the gateway sent to ``sender`` on the loop channel so far (its outbox file)."""
    outbox: Path = gw.outbox  # type: ignore[attr-defined]
    lines = outbox.read_text().splitlines() if outbox.exists() else []
    return [s["text"] for s in map(json.loads, lines) if s["op"] == "send" and s["to"] == sender]


async def channel_reply_is_sent_once(gw: GatewayProcess, *, sender: str, msg_id: str, text: str) -> None:
    """A loop-channel DM makes the model send ``text`` with ``message_reply`` and then answer the same text.

    The executor sees the final reply repeats what the tool already sent to this chat and does not send it again.
    """
    c = await operator(gw.url, gw.token or "", scopes=["operator.read"])
    await asyncio.to_thread(loop_dm, gw, sender, msg_id, f'CALL message_reply {{"message": "{text}"}}\nTHEN {text}')
    while True:
        p = (await c.next_event("agent", timeout=90))["payload"]
        if p["data"]["sessionKey"] == f"agent:main:loop:direct:{sender}" and p["data"].get("phase") in ("end", "error"):
            break
    assert p["data"]["phase"] == "end", p
    assert loop_sent(gw, sender) == [text]
    await c.close()
