"""Drive the real ``remoteclaw-mcp`` process over its stdin/stdout, as an MCP client would."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.support.gateway_proc import ROOT, GatewayProcess

SHIM_CMD = [sys.executable, "-m", "mcp_shim"]
LATEST = "2025-11-25"


def shim_env(gw: GatewayProcess | None, tmp: Path, *, owner: bool = True, profile: str | None = None,
             channel: str | None = "webchat", to: str | None = "agent:main:main", session_key: str = "agent:main:main",
             plugin_manifest: dict[str, Any] | None = None, **extra: str) -> dict[str, str]:
    """The env the executor would give the shim. ``plugin_manifest`` is written to a file and passed along."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    env.update({
        "REMOTECLAW_GATEWAY_URL": gw.url if gw else "ws://127.0.0.1:9/",
        "REMOTECLAW_GATEWAY_TOKEN": (gw.token or "") if gw else "no-token",
        "REMOTECLAW_SESSION_KEY": session_key,
        "REMOTECLAW_SIDE_EFFECTS_FILE": str(tmp / "side-effects.ndjson"),
        "REMOTECLAW_SENDER_IS_OWNER": "true" if owner else "false",
    })
    if channel:
        env["REMOTECLAW_CHANNEL"] = channel
    if to:
        env["REMOTECLAW_TO"] = to
    if profile:
        env["REMOTECLAW_TOOL_PROFILE"] = profile
    if plugin_manifest is not None:
        path = tmp / "plugin-tools.json"
        path.write_text(json.dumps(plugin_manifest))
        env["REMOTECLAW_PLUGIN_TOOLS_FILE"] = str(path)
    env.update(extra)
    return env


def side_effects(tmp: Path) -> list[dict[str, Any]]:
    path = tmp / "side-effects.ndjson"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


class Shim:
    """One shim process. ``junk`` collects any stdout line that is not a JSON-RPC message."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.ids = itertools.count(1)
        self.pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.notifications: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.unmatched: list[dict[str, Any]] = []
        self.junk: list[bytes] = []
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, env: dict[str, str]) -> Shim:
        proc = await asyncio.create_subprocess_exec(
            *SHIM_CMD, cwd=ROOT, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, limit=2**24)
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                self.junk.append(line)
                continue
            if "method" in msg:
                await self.notifications.put(msg)
            elif msg.get("id") in self.pending:
                self.pending.pop(msg["id"]).set_result(msg)
            else:
                self.unmatched.append(msg)

    async def send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(data + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: Any = None, *, id: Any = None, timeout: float = 15) -> dict[str, Any]:
        req_id = next(self.ids) if id is None else id
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[req_id] = fut
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": req_id, "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(msg)
        return await asyncio.wait_for(fut, timeout)

    async def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(msg)

    async def initialize(self, version: str = LATEST) -> dict[str, Any]:
        res = await self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                                "clientInfo": {"name": "tests", "version": "1"}})
        await self.notify("notifications/initialized")
        return res["result"]

    async def tools(self) -> list[dict[str, Any]]:
        return (await self.request("tools/list"))["result"]["tools"]

    async def call(self, name: str, arguments: dict[str, Any] | None = None, *, timeout: float = 40) -> dict[str, Any]:
        res = await self.request("tools/call", {"name": name, "arguments": arguments or {}}, timeout=timeout)
        assert "result" in res, res
        return res["result"]

    async def call_ok(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """Call a tool that must succeed; returns its JSON payload."""
        result = await self.call(name, arguments)
        assert not result.get("isError"), result
        return json.loads(result["content"][0]["text"])

    async def close(self, timeout: float = 5) -> int:
        """Close stdin (EOF) and wait for the process to exit; returns its exit code."""
        assert self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            code = await asyncio.wait_for(self.proc.wait(), timeout)
        finally:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
            await asyncio.wait_for(self.reader, 5)
        return code

    async def stderr(self) -> str:
        assert self.proc.stderr is not None
        return (await self.proc.stderr.read()).decode(errors="replace")


def error_text(result: dict[str, Any]) -> str:
    assert result.get("isError") is True, result
    return str(result["content"][0]["text"])
