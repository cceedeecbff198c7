"""What the node's browser adds to the node: the canvas commands and ``browser.proxy``, when it can run.

``BrowserCommands.create`` returns None (with the reason) on a node without Playwright or Chromium, so such
a node declares neither group and the gateway's answer to a call names why (the command is not declared).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from nodes.browser.canvas import CANVAS_COMMANDS, Canvas, Emit
from nodes.browser.chromium import Chromium, find
from nodes.browser.control import BrowserControl, encode_file
from nodes.errors import CommandError

__all__ = ["BROWSER_COMMANDS", "BrowserCommands"]

BROWSER_COMMANDS = ("browser.proxy",)
ERROR_ENVELOPE = "browser-v1"
MAX_FILE_BYTES = 10 * 1024 * 1024
PROXY_MARGIN_S = 2.0
"""Past the request's timeoutMs before the proxy stops a route (inside the gateway's own 5 s margin)."""
_FILE_KEYS = ("path", "imagePath")


def _paths(result: Any) -> list[str]:
    """The files a route's answer names (as OpenClaw's proxy looks for them): sent along, base64."""
    if not isinstance(result, dict):
        return []
    found = [result[k] for k in _FILE_KEYS if isinstance(result.get(k), str)]
    download = result.get("download")
    if isinstance(download, dict) and isinstance(download.get("path"), str):
        found.append(download["path"])
    return found


def _file(path: str, result: dict[str, Any]) -> dict[str, Any]:
    size = Path(path).stat().st_size
    if size > MAX_FILE_BYTES:
        raise CommandError("UNAVAILABLE", f"{path} is {size} bytes, over the 10 MiB a proxied file may be")
    return {"path": path, "base64": encode_file(path),
            "mimeType": result.get("mimeType") if path == result.get("path") else None}


class BrowserCommands:
    """The canvas and browser control of one node, sharing one Chromium."""

    def __init__(self, chromium: Chromium, state: Path, canvas_host: str, emit: Emit) -> None:
        self.chromium = chromium
        self.control = BrowserControl(chromium, state)
        self.canvas = Canvas(chromium, canvas_host, emit)
        self.commands = (*CANVAS_COMMANDS, *BROWSER_COMMANDS)
        self.caps = ("canvas", "browser")

    @classmethod
    def create(cls, state: Path, canvas_host: str, emit: Emit) -> tuple[BrowserCommands | None, str | None]:
        executable, reason = find()
        if executable is None:
            return None, reason
        return cls(Chromium(executable), state, canvas_host, emit), None

    async def close(self) -> None:
        await self.canvas.close()
        await self.control.close()
        await self.chromium.close()

    async def run(self, command: str, params: dict[str, Any]) -> Any:
        if command in CANVAS_COMMANDS:
            return await self.canvas.run(command, params)
        return await self.proxy(params)

    async def proxy(self, params: dict[str, Any]) -> dict[str, Any]:
        """``browser.proxy {method, path, query, body, errorEnvelope}`` -> ``{result, files?}``.

        A route's refusal comes back as ``{error: {status, body}}`` when the caller asked for the
        ``browser-v1`` envelope (both gateways do), else as an error of the invocation.
        """
        method = str(params.get("method") or "GET").upper()
        path = params.get("path")
        if method not in ("GET", "POST", "DELETE"):
            raise CommandError("INVALID_REQUEST", "method must be GET, POST or DELETE")
        if not isinstance(path, str) or not path.strip():
            raise CommandError("INVALID_REQUEST", "path is required (e.g. /tabs)")
        query = params.get("query")
        if query is not None and not isinstance(query, dict):
            raise CommandError("INVALID_REQUEST", "query must be an object")
        # The caller's own timeoutMs bounds the whole route (routes bound their waits too): a request never
        # outlives the gateway's patience, even if its node.invoke.cancel is lost on the way.
        limit_ms = params.get("timeoutMs")
        # A little past it, so a route's own bounded wait (a /wait of timeoutMs) answers first.
        limit = limit_ms / 1000 + PROXY_MARGIN_S \
            if isinstance(limit_ms, int) and not isinstance(limit_ms, bool) and limit_ms > 0 else None
        try:
            status, body = await asyncio.wait_for(self.control.handle(method, path, query, params.get("body")),
                                                  limit)
        except TimeoutError:
            status, body = 504, {"error": f"{method} {path} took longer than timeoutMs ({limit_ms} ms)",
                                 "code": "TIMEOUT"}
        if status >= 400:
            if params.get("errorEnvelope") == ERROR_ENVELOPE:
                return {"error": {"status": status, "body": body}}
            raise CommandError("INVALID_REQUEST" if status < 500 else "UNAVAILABLE",
                             f"{status}: {body.get('error') if isinstance(body, dict) else body}")
        files = [await asyncio.to_thread(_file, path, body) for path in _paths(body)]
        return {"result": body, **({"files": [{k: v for k, v in f.items() if v is not None} for f in files]}
                                   if files else {})}

