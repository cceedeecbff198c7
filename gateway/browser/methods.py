"""``browser.request``: a request to the browser control API of a node, as OpenClaw's gateway routes it.

The gateway has no browser of its own: the request goes, as ``browser.proxy``, to a connected node that
offers it (ours, with Chromium, or OpenClaw's node host). Which node: the ``node`` param, else
``nodes.browserNode`` from config, else the only browser node connected (several and no choice is an
error that lists them). A route's refusal keeps its HTTP status in ``details.status``: 4xx answers
``INVALID_REQUEST``, 5xx ``UNAVAILABLE``. Files the node returns are saved on the gateway (``files.py``)
and listed in the answer's ``files`` with the URL they are served at (``serve.py``).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Literal

from pydantic import Field

from gateway.access import Access
from gateway.browser.files import FileEnvelopeError, persist_files
from gateway.browser.serve import BROWSER_FILES
from gateway.dispatch.dispatcher import ADMIN, CallContext, Params, method
from gateway.protocol import InvalidRequest, Unavailable

__all__ = ["BrowserRequestParams", "browser_request"]

PROXY_COMMAND = "browser.proxy"
ERROR_ENVELOPE = "browser-v1"
DEFAULT_TIMEOUT_MS = 30_000
NODE_MARGIN_MS = 5_000
"""Extra time the gateway gives the node beyond the route's own timeout, so the route's error wins."""


class BrowserRequestParams(Params):
    method: Literal["GET", "POST", "DELETE"]
    path: str = Field(min_length=1, max_length=2000, pattern=r"^/")
    query: dict[str, Any] | None = None
    body: Any = None
    timeoutMs: int | None = Field(None, ge=1, le=600_000)
    node: str | None = Field(None, min_length=1, max_length=256,
                             description="The browser node (id, id prefix or name); default: the only one")


async def _target(ctx: CallContext, wanted: str | None) -> dict[str, Any]:
    nodes = ctx.nodes
    if nodes is None:
        raise Unavailable("nodes are not available on this gateway (the node service did not start)")
    wanted = wanted or ctx.config.nodes.browserNode
    capable = [n for n in await nodes.list()
               if n["status"] == "approved" and PROXY_COMMAND in (n.get("commands") or [])]
    if wanted:
        found = await nodes.store.find(wanted)
        if found is None:
            raise InvalidRequest(f"node: no node is called {wanted}", details={"code": "UNKNOWN_NODE",
                                                                               "field": "node"})
        match = next((n for n in capable if n["nodeId"] == found["nodeId"]), None)
        if match is None:
            raise InvalidRequest(f"node: {wanted} does not offer the browser ({PROXY_COMMAND})",
                                 details={"code": "COMMAND_NOT_DECLARED", "field": "node"})
        return match
    connected = [n for n in capable if n.get("connected")]
    if not connected:
        from gateway.extras import install_command

        install = install_command("browser")
        raise Unavailable("no browser-capable node is connected: run `remoteclaw-node run` on a machine with "
                          f"Chromium and the optional part 'browser' (on this one: {install}), then approve it",
                          details={"code": "NO_BROWSER_NODE", "capability": "browser", "extra": "browser",
                                   "install": install})
    if len(connected) > 1:
        names = ", ".join(f"{n['displayName']} ({n['nodeId'][:12]})" for n in connected)
        raise InvalidRequest(f"node: several browser nodes are connected ({names}); pass node or set "
                             f"nodes.browserNode", details={"code": "BROWSER_NODE_AMBIGUOUS", "field": "node"})
    return connected[0]


@method("browser.request", access=Access("node", "exec"),
        params=BrowserRequestParams, scope=ADMIN, aliases=("browser:request",))
async def browser_request(p: BrowserRequestParams, ctx: CallContext) -> Any:
    """Send one request to the browser control API of a node and return the route's answer."""
    target = await _target(ctx, p.node)
    timeout = p.timeoutMs or DEFAULT_TIMEOUT_MS
    answer = await ctx.nodes.invoke(  # type: ignore[union-attr]
        target["nodeId"], PROXY_COMMAND,
        {"method": p.method, "path": p.path, "query": p.query or {}, "body": p.body, "timeoutMs": timeout,
         "errorEnvelope": ERROR_ENVELOPE},
        timeout_ms=timeout + NODE_MARGIN_MS, idempotency_key=uuid.uuid4().hex)
    payload = answer.get("payload")
    if not isinstance(payload, dict):
        raise Unavailable("the browser node answered without a result", details={"nodeId": target["nodeId"]})
    failure = payload.get("error")
    if isinstance(failure, dict) and isinstance(failure.get("status"), int):
        status = failure["status"]
        raw = failure.get("body")
        body: dict[str, Any] = raw if isinstance(raw, dict) else {"error": str(raw)}
        details = {**body, "status": status, "nodeId": target["nodeId"]}
        message = str(body.get("error") or f"HTTP {status}")
        raise (Unavailable(message, details=details) if status >= 500 else InvalidRequest(message, details=details))
    if "result" not in payload:
        raise Unavailable("the browser node answered without a result", details={"nodeId": target["nodeId"]})
    try:
        result, saved = await asyncio.to_thread(persist_files, payload["result"], payload.get("files"),
                                                ctx.state_dir, ctx.caller.run_session)
    except FileEnvelopeError as exc:
        raise Unavailable(str(exc), details={"nodeId": target["nodeId"]}) from None
    if saved and isinstance(result, dict) and "files" not in result:
        # What each saved file is and where an HTTP client fetches it (a remote MCP client cannot read path).
        result["files"] = await asyncio.to_thread(ctx.service(BROWSER_FILES).describe, saved)
    return result
