"""What every agent under ``runtime: acp`` is checked for, written once and run per agent.

A turn streams (``chat`` deltas before the end) and calls our MCP tool (a child session, the tool in the
transcript under ``mcp__remoteclaw__sessions_spawn``); a second turn resumes the same ACP session with the first
in the model's context; a shell command asks the person (``exec.approval.requested`` with the command) and both
answers come back (allow runs it, deny refuses it); ``chat.abort`` (what /stop does) ends a turn at once and the
next turn still answers.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.gateway.agents.runtimes.flows import (
    approval_asked,
    decided_turn,
    last_reply,
    spawn_child_then_resume,
    start_turn,
)
from tests.support.gateway_proc import GatewayProcess
from tests.support.procs import alive
from tests.support.ws import operator


@dataclass
class AcpFlows:
    requests: Callable[[Any], list[dict]]
    """The fake model API's conversation requests so far."""
    transcript: Callable[[dict], str]
    """The conversation one request carries, as text."""
    shell: Callable[[str], str]
    """The prompt that makes the fake model run a shell command through the agent's own shell tool."""

    async def turn_streams_calls_our_tool_and_resumes(self, gw: GatewayProcess, api: Any) -> None:
        c = await operator(gw.url, gw.token or "")
        key = "agent:main:api:direct:acp"
        deltas: list[str] = []

        async def watch() -> None:
            while True:
                p = (await c.next_event("chat", timeout=120))["payload"]
                if p["sessionKey"] == key and p["state"] == "delta":
                    deltas.append(p["message"]["text"] if isinstance(p["message"].get("text"), str) else "")

        watcher = asyncio.create_task(watch())
        try:
            await spawn_child_then_resume(gw, runtime="acp", key=key, label="acp-kid",
                                          requests=lambda: self.requests(api), transcript=self.transcript)
        finally:
            watcher.cancel()
            await c.close()
        assert deltas, "no live text reached the chat"
        hist_tools = [r for r in self.requests(api) if "sessions_spawn" in self.transcript(r)]
        assert hist_tools

    async def turn_streams_and_calls_our_tool(self, gw: GatewayProcess, api: Any) -> None:
        """The same without the context check of the second turn (an agent that cannot resume its sessions)."""
        c = await operator(gw.url, gw.token or "")
        key = "agent:main:api:direct:acp-noresume"
        try:
            done = await start_turn(c, 'CALL sessions_spawn {"task": "REPLY child says hi", "label": "kid2"}', key)
            deltas = []
            while True:
                p = (await c.next_event("chat", timeout=120))["payload"]
                if p["sessionKey"] != key:
                    continue
                if p["state"] != "delta":
                    break
                deltas.append(p["message"]["text"])
            result = await done
            assert result["status"] == "ok" and "agent:main:subagent:" in result["reply"], result
            assert deltas
            tools = [m["tool"]["name"] for m in (await c.call("chat.history", {"sessionKey": key}))["messages"]
                     if m["role"] == "tool"]
            assert tools == ["mcp__remoteclaw__sessions_spawn"], tools
            again = await (await start_turn(c, "REPLY second turn", key))
            assert again["status"] == "ok", again
            assert await last_reply(c, key) == "second turn"
        finally:
            await c.close()

    async def approval_goes_to_the_person_and_back(self, gw: GatewayProcess, api: Any) -> None:
        c = await operator(gw.url, gw.token or "")
        try:
            key = "agent:main:acp-allow"
            command = "touch made.txt && echo approved-42 && cat /proc/1/comm"
            events, result = await allowed_turn(c, self.shell(command), key)
            # OpenCode asks first about the path outside its project (/proc), then about the command itself
            texts = [e["presentation"]["commandText"] for e in events]
            assert any(t.startswith("Bash") and command in t for t in texts), texts
            assert result["status"] == "ok", result
            reply = await last_reply(c, key)
            assert "approved-42" in reply
            assert "bwrap" in reply  # the agent and its command ran in the run's sandbox (its own PID namespace)
            key = "agent:main:acp-deny"
            _, result = await decided_turn(c, self.shell("touch denied.txt && echo denied-43"), key, "deny")
            assert result["status"] == "ok", result
            assert "denied-43" not in await last_reply(c, key)
        finally:
            await c.close()

    async def stop_cancels_the_turn(self, gw: GatewayProcess, api: Any) -> None:
        c = await operator(gw.url, gw.token or "")
        try:
            key = "agent:main:acp-stop"
            seconds = str(random.randint(600, 999))  # this test's own command (other tests may sleep meanwhile)
            done = await start_turn(c, self.shell(f"touch stop.txt && sleep {seconds} && echo too-late"), key)
            event = await approval_asked(c, key)
            await c.call("exec.approval.resolve", {"id": event["id"], "decision": "allow-once"})
            await asyncio.sleep(2)  # the command runs now
            started = time.monotonic()
            aborted = await c.call("chat.abort", {"sessionKey": key})
            assert aborted["aborted"], aborted
            result = await done
            assert time.monotonic() - started < 15, "the turn did not stop at once"
            assert result["status"] != "ok" or "too-late" not in str(result), result
            await asyncio.sleep(1)
            assert not any(alive(p) for p in _sleepers(seconds)), "the agent's command outlived /stop"
            again = await (await start_turn(c, "REPLY after stop", key))
            assert again["status"] == "ok", again
            assert await last_reply(c, key) == "after stop"
        finally:
            await c.close()


async def allowed_turn(c: Any, message: str, key: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A turn whose every approval request is allowed once: the requests, and the turn's end."""
    done = await start_turn(c, message, key)
    events: list[dict[str, Any]] = []
    while not done.done():
        asked = asyncio.ensure_future(approval_asked(c, key))
        await asyncio.wait({asked, done}, return_when=asyncio.FIRST_COMPLETED)
        if asked.done():
            events.append(asked.result())
            await c.call("exec.approval.resolve", {"id": events[-1]["id"], "decision": "allow-once"})
        else:  # the turn ended: the watch for another request goes, before anyone else reads the events
            asked.cancel()
            await asyncio.gather(asked, return_exceptions=True)
    return events, await done


def _sleepers(seconds: str) -> list[int]:
    """Processes running ``sleep <seconds>`` (the command the stopped turn started)."""
    import os

    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if fh.read().split(b"\0")[:2] == [b"sleep", seconds.encode()]:
                    out.append(int(pid))
        except OSError:
            continue
    return out


def acp_flows(*, requests: Callable[[Any], list[dict]], transcript: Callable[[dict], str],
              shell: Callable[[str], str]) -> AcpFlows:
    return AcpFlows(requests, transcript, shell)
