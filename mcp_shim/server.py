"""The stdio MCP server: newline-delimited JSON-RPC 2.0 on stdin/stdout, with a small core of our own.

Why not the ``mcp`` SDK: importing its server takes over a second here, and agent CLIs may send
their first model request before that. This core answers ``initialize`` and ``tools/list`` from
local tables on the main thread, before asyncio or websockets are even imported. Tool calls run on
an asyncio loop in a second thread (the "engine"), started after the first ``tools/list`` (or by the
first call), so concurrent calls and cancellation work and the process still starts in milliseconds.

It uses the stdlib ``json`` on this path on purpose: importing orjson loads ``dataclasses``, ``uuid``
and ``json`` anyway (~20 ms). The call path (``mcp_shim.runner``) uses orjson.

Handled, per request (``mcp_shim.protocol`` decides the revision of each one, never of the connection):
the handshake era's ``initialize``, ``notifications/initialized``, ``ping``, ``tools/list``, ``tools/call``
and ``notifications/cancelled``; and 2026-07-28's ``server/discover``, ``tools/list`` and ``tools/call``
with their ``_meta`` envelope. ``server/discover`` without the envelope (it does not exist before
2026-07-28) and anything else get -32601, so a client that probes first and falls back to ``initialize``
on -32601 still does. Notifications are never answered. A call whose request carries a ``progressToken``
gets ``notifications/progress`` every ``PROGRESS_EVERY_S`` while it waits on the gateway.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading

from mcp_shim import protocol
from mcp_shim.catalog import Catalog
from mcp_shim.protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Envelope,
    ProtocolError,
    error_message,
    initialize_result,
)

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from concurrent.futures import Future
    from typing import IO, Any

__all__ = ["PROTOCOL_VERSIONS", "StdioServer", "Writer", "error_message", "initialize_result"]

PROTOCOL_VERSIONS = (*protocol.MODERN_VERSIONS, *protocol.HANDSHAKE_VERSIONS)
"""Every MCP revision we speak, newest first (2026-07-28 per request, the others over ``initialize``)."""

PROGRESS_EVERY_S = 1.0
"""How often a call that asked for progress hears that it is still running (keeps client timeouts at bay)."""

PLUGIN_WAIT_S = 5.0
"""Standalone (no plugin tools file): how long the first ``tools/list`` waits for the gateway's plugin tools.
Many clients list tools once and never act on ``notifications/tools/list_changed``, so the first answer must
hold them; a gateway that cannot be reached is given up on at once (its tools follow with list_changed)."""


class Writer:
    """Writes JSON-RPC messages to the protocol fd, one whole line at a time, from any thread."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._lock = threading.Lock()
        self.broken = False

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        with self._lock:
            if self.broken:
                return
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view):]
            except OSError:  # the client went away; there is nobody left to tell
                self.broken = True


class Engine:
    """The asyncio side: a loop in a daemon thread that runs tool calls."""

    def __init__(self, catalog: Catalog, writer: Writer) -> None:
        self.catalog = catalog
        self.writer = writer
        self.loop: Any = None
        self.runner: Any = None
        self._warming: Any = None  # the task opening the gateway connection ahead of the first call
        self._ready = threading.Event()
        self._calls: dict[Any, Future[Any]] = {}
        self._lock = threading.Lock()
        self.plugins_ready = threading.Event()
        """Set once the first try to fetch the gateway's plugin tools is over (fetched or not)."""
        self.listing_lock = threading.Lock()
        """Held while the tool table changes or a ``tools/list`` answer is built from it."""
        self.listed = False
        """Whether a ``tools/list`` answer went out (only then is a change worth a list_changed)."""
        self._thread = threading.Thread(target=self._main, name="mcp-engine", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        import asyncio

        from mcp_shim.runner import Runner

        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.runner = Runner(self.catalog)
        self._warming = self.loop.create_task(self.runner.warm(), name="warm-gateway-connection")
        self._ready.set()
        self.loop.run_forever()

    def _submit(self, coro: Any) -> Future[Any]:
        import asyncio

        self._ready.wait()
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, req_id: Any, name: str, arguments: Any, *, envelope: Envelope | None = None,
             progress: Any = None) -> None:
        """Start a tool call; its response is written when it finishes (not at all if cancelled).

        With a ``progress`` token, ``notifications/progress`` goes out every ``PROGRESS_EVERY_S`` while
        the call runs: a node command, a browser action or a wait for another session's reply can take
        longer than a client's request timeout, and progress is what lets a client keep waiting.
        """

        async def run() -> None:
            import asyncio

            from mcp_shim.runner import UnknownTool

            task = asyncio.ensure_future(self.runner.call(name, arguments))
            try:
                if progress is not None:
                    started = self.loop.time()
                    step = 0
                    while not (await asyncio.wait({task}, timeout=PROGRESS_EVERY_S))[0]:
                        step += 1
                        elapsed = self.loop.time() - started
                        self.writer.send(protocol.progress_notification(
                            progress, step, f"{name}: still running ({elapsed:.0f} s)"))
                result = await task
            except UnknownTool:
                self.writer.send(error_message(req_id, INVALID_PARAMS, f"Unknown tool: {name}"))
                return
            finally:
                task.cancel()  # a cancelled request takes its call with it; a finished task ignores this
            self.writer.send({"jsonrpc": "2.0", "id": req_id, "result": protocol.finish(result, envelope)})

        future = self._submit(run())
        with self._lock:
            self._calls[req_id] = future
        future.add_done_callback(lambda _f: self._forget(req_id, future))

    def _forget(self, req_id: Any, future: Future[Any]) -> None:
        with self._lock:
            if self._calls.get(req_id) is future:
                del self._calls[req_id]

    def cancel(self, req_id: Any) -> None:
        with self._lock:
            future = self._calls.get(req_id)
        if future is not None:
            future.cancel()  # cancels the task on the loop; no response is sent for it

    def refresh_plugins(self) -> None:
        """Fetch the gateway's plugin tools; a client that already has a list hears that it changed."""

        async def apply(listed: Any) -> None:
            with self.listing_lock:
                changed = self.catalog.set_plugins(listed)
                notify = changed and self.listed
            if notify:
                self.writer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

        async def run() -> None:
            try:
                listed = await self.runner.fetch_plugins(patient=False)
                if listed is not None:
                    await apply(listed)
            finally:
                self.plugins_ready.set()
            if listed is None:  # unreachable for now: keep trying in the background
                listed = await self.runner.fetch_plugins(patient=True)
                if listed is not None:
                    await apply(listed)

        self._submit(run())

    def stop(self, grace: float) -> None:
        """Give running calls and pending hooks up to ``grace`` seconds, then stop the loop."""
        import asyncio

        if not self._ready.wait(timeout=grace):
            return

        async def drain() -> None:
            running = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if running:
                await asyncio.wait(running, timeout=grace / 2)
            await self.runner.close(grace / 2)

        with contextlib.suppress(Exception):  # timed out or failed: we are leaving anyway
            asyncio.run_coroutine_threadsafe(drain(), self.loop).result(timeout=grace + 0.5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=0.5)


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class StdioServer:
    """Reads requests from ``stdin`` on the calling thread until EOF."""

    def __init__(self, catalog: Catalog, writer: Writer) -> None:
        self.catalog = catalog
        self.writer = writer
        self.engine: Engine | None = None
        if catalog.plugins_from_gateway:
            self._engine()  # standalone: ask the gateway for its plugin tools now, while the client starts

    def _engine(self) -> Engine:
        if self.engine is None:
            self.engine = Engine(self.catalog, self.writer)
            if self.catalog.plugins_from_gateway:
                self.engine.refresh_plugins()
        return self.engine

    def serve(self, stdin: IO[bytes]) -> None:
        """Serve until EOF. ``KeyboardInterrupt``/``SystemExit`` from signal handlers pass through."""
        for line in iter(stdin.readline, b""):
            if line.strip():
                self.handle_line(line)

    def handle_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self.writer.send(error_message(None, PARSE_ERROR, "Parse error: not JSON"))
            return
        if not isinstance(message, dict):
            self.writer.send(error_message(None, INVALID_REQUEST, "Invalid request: expected one JSON object"))
            return
        method = message.get("method")
        if not isinstance(method, str):
            return  # a response to a request we never sent, or junk without an id to answer
        if "id" not in message:
            self._notification(method, message.get("params"))
            return
        req_id = message["id"]
        if not _valid_id(req_id):
            self.writer.send(error_message(None, INVALID_REQUEST, "Invalid request: id must be a string or an integer"))
            return
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            self.writer.send(error_message(req_id, INVALID_PARAMS, "Invalid params: must be an object"))
            return
        self._request(req_id, method, params or {})

    def _notification(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled" and isinstance(params, dict) and self.engine is not None:
            self.engine.cancel(params.get("requestId"))
        # notifications/initialized and anything else: nothing to do, and never an answer.

    def _request(self, req_id: Any, method: str, params: dict[str, Any]) -> None:
        envelope: Envelope | None = None
        if method != "initialize":  # the handshake is the handshake, whatever its _meta says
            try:
                envelope = protocol.modern_envelope(params)
            except ProtocolError as exc:
                self.writer.send(error_message(req_id, exc.code, exc.message, exc.data))
                return
        if method == "tools/call":
            name = params.get("name")
            if not isinstance(name, str):
                self.writer.send(error_message(req_id, INVALID_PARAMS, "Invalid params: 'name' must be a string"))
                return
            self._engine().call(req_id, name, params.get("arguments"), envelope=envelope,
                                progress=protocol.progress_token(params))
            return
        if method == "tools/list":
            result = protocol.tools_list_result(self._listing(), envelope)
        elif method == "server/discover" and envelope is not None:
            result = protocol.discover_result()
        elif method == "initialize":
            result = initialize_result(params)
        elif method == "ping" and envelope is None:  # 2026-07-28 has no ping
            result = {}
        else:
            self.writer.send(error_message(req_id, METHOD_NOT_FOUND, f"Method not found: {method}"))
            return
        self.writer.send({"jsonrpc": "2.0", "id": req_id, "result": result})
        if method == "tools/list":
            self._engine()  # warm up the call path now that the client has what it needs

    def _listing(self) -> list[dict[str, Any]]:
        engine = self.engine
        if engine is None:
            return self.catalog.listing()
        if self.catalog.plugins_from_gateway:
            engine.plugins_ready.wait(PLUGIN_WAIT_S)
        with engine.listing_lock:
            engine.listed = True
            return self.catalog.listing()

    def close(self, grace: float) -> None:
        if self.engine is not None:
            self.engine.stop(grace)


def stop_on_signals() -> None:
    """SIGTERM (and SIGINT, Python's default) end ``serve`` with an exception on the main thread."""
    import signal

    def handler(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
