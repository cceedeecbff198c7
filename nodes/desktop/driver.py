"""One ``cua-driver mcp`` process for the node's life, spoken to as an MCP client over stdio.

Cua Driver is an MCP server (newline-delimited JSON-RPC 2.0 on stdin/stdout). The node opens it once,
shakes hands, reads its ``tools/list`` (the tools and their input schemas, as the driver declares them) and
then sends ``tools/call`` requests, several at a time if they come, matched to answers by id. A driver that
dies is started again on the next call (its tool list read again); the calls it was running fail with the
reason. The client is a few dozen lines on purpose: the ``mcp`` SDK would bring anyio, httpx and a second of
imports to every node for the same three requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["CuaDriver", "DriverError", "driver_env"]

PROTOCOL_VERSION = "2025-06-18"
START_TIMEOUT_S = 20.0
"""The driver's handshake and tool list (well under a second here; a loaded machine gets room)."""
LINE_LIMIT = 64 * 1024 * 1024
"""A screenshot of a large display comes back base64 in one line."""
STDERR_KEEP = 40
"""Lines of the driver's stderr kept to explain a crash."""


class DriverError(Exception):
    """The driver could not be started, died, or answered a request with a JSON-RPC error."""


def driver_env(base: Mapping[str, str], *, telemetry: bool) -> dict[str, str]:
    """The driver's environment: the node's own (display, session bus, AT-SPI) with telemetry off unless the
    node's owner turned it on (Cua Driver sends product telemetry by default)."""
    env = dict(base)
    if not telemetry:
        env.update(DO_NOT_TRACK="1", CUA_DRIVER_RS_TELEMETRY_ENABLED="0", CUA_TELEMETRY_ENABLED="0")
    # A desktop node answers for itself: the driver must never relaunch into another daemon on macOS.
    env.setdefault("CUA_DRIVER_MCP_NO_RELAUNCH", "1")
    return env


class CuaDriver:
    """The driver process and the requests in flight on it.

    Args:
        binary: the ``cua-driver`` executable.
        env: its environment (``driver_env``).
    """

    def __init__(self, binary: str, env: dict[str, str]) -> None:
        self.binary = binary
        self.env = env
        self.tools: list[dict[str, Any]] = []
        """The driver's ``tools/list``, as it declared them."""
        self.server_info: dict[str, Any] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None
        self._stderr: asyncio.Task[None] | None = None
        self._stderr_tail: list[str] = []
        self._start_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running and self._proc is not None else None

    async def start(self) -> None:
        """Start the driver if it is not running, and read its tools."""
        async with self._start_lock:
            if self.running:
                return
            await self._spawn()

    async def _spawn(self) -> None:
        self._stderr_tail = []
        try:
            proc = await asyncio.create_subprocess_exec(
                self.binary, "mcp", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=self.env, limit=LINE_LIMIT, start_new_session=True)
        except OSError as exc:
            raise DriverError(f"cannot start {self.binary} mcp: {exc}") from None
        self._proc = proc
        self._reader = asyncio.create_task(self._read(proc), name="cua-driver-reader")
        self._stderr = asyncio.create_task(self._drain_stderr(proc), name="cua-driver-stderr")
        try:
            init = await asyncio.wait_for(self._request("initialize", {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "remoteclaw-node", "version": "1"}}), START_TIMEOUT_S)
            self.server_info = init.get("serverInfo") or {} if isinstance(init, dict) else {}
            await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            listed = await asyncio.wait_for(self._request("tools/list", {}), START_TIMEOUT_S)
        except (TimeoutError, DriverError) as exc:
            await self.close()
            raise DriverError(f"cua-driver mcp did not start: {exc or 'no answer'}{self._tail()}") from None
        tools = listed.get("tools") if isinstance(listed, dict) else None
        self.tools = [t for t in tools or [] if isinstance(t, dict) and isinstance(t.get("name"), str)]

    async def call(self, tool: str, arguments: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """``tools/call``: the driver's ``CallToolResult`` (``content``, ``structuredContent``, ``isError``)."""
        if not self.running:
            await self.start()
        result = await asyncio.wait_for(self._request("tools/call", {"name": tool, "arguments": arguments}),
                                        timeout)
        if not isinstance(result, dict):
            raise DriverError(f"cua-driver answered {tool} without a result object")
        return result

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        req_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[req_id] = fut
        try:
            await self._send({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
            return await fut
        finally:
            self._pending.pop(req_id, None)

    async def _send(self, message: dict[str, Any]) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            raise DriverError(f"cua-driver is not running{self._tail()}")
        async with self._write_lock:
            try:
                proc.stdin.write(orjson.dumps(message) + b"\n")
                await proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise DriverError(f"cua-driver went away: {exc}{self._tail()}") from None

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        try:
            while line := await proc.stdout.readline():
                try:
                    message = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue  # not protocol: the driver only writes protocol to stdout, but be lenient
                if not isinstance(message, dict) or "id" not in message or "method" in message:
                    continue  # a notification or a request of the server's own (none are needed here)
                fut = self._pending.get(message["id"]) if isinstance(message["id"], int) else None
                if fut is None or fut.done():
                    continue
                if "error" in message:
                    error = message["error"] if isinstance(message["error"], dict) else {}
                    fut.set_exception(DriverError(str(error.get("message") or "error")))
                else:
                    fut.set_result(message.get("result"))
        except (ValueError, asyncio.LimitOverrunError):
            print("node-host: cua-driver wrote a line over the size limit; restarting it", file=sys.stderr)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        finally:
            with contextlib.suppress(Exception):
                await proc.wait()
            reason = f"cua-driver exited (code {proc.returncode}){self._tail()}"
            for fut in list(self._pending.values()):
                if not fut.done():
                    fut.set_exception(DriverError(reason))

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        with contextlib.suppress(ValueError, asyncio.LimitOverrunError):
            while line := await proc.stderr.readline():
                self._stderr_tail.append(line.decode("utf-8", "replace").rstrip())
                del self._stderr_tail[:-STDERR_KEEP]

    def _tail(self) -> str:
        lines = [x for x in self._stderr_tail if x.strip()][-3:]
        return f": {' | '.join(lines)[:600]}" if lines else ""

    async def close(self) -> None:
        """End the driver (its stdin closed first, as an MCP client ends a stdio server; then signals)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(Exception):
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 2)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 15)
                try:
                    await asyncio.wait_for(proc.wait(), 2)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, 9)
                    await proc.wait()
        for task in (self._reader, self._stderr):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
