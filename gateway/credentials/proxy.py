"""``/model/<upstream>/<path>``: a run's model requests, with its stand-in swapped for the real credential.

The stand-in (``x-api-key``, ``Authorization: Bearer``, ``x-goog-api-key`` or ``?key=``, as its CLI sends it)
must be live: its run has not ended. The request goes to the upstream's base URL plus ``<path>`` with aiohttp
(its HTTP parser is C: relaying an answer costs the gateway a third of the CPU httpx's pure-Python one did), its
headers passed except the credential ones and hop-by-hop ones; the answer comes back as it arrives (status,
headers and body bytes unchanged: an SSE stream byte for byte). A client that goes away cancels the upstream
request at once (a second task waits for ``http.disconnect``). Usage is read from the passing bytes (``wire``)
and a run whose budget is spent is stopped: refused before the request, or cut mid-stream with an error event
its CLI shows. A subscription login's bearer refused with 401 is refreshed once and the request retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

import structlog

from gateway.credentials.oauth import RefreshFailed
from gateway.credentials.standins import PREFIX
from gateway.credentials.wire import Meter

if TYPE_CHECKING:
    from aiohttp import ClientResponse
    from starlette.types import Receive, Scope, Send

    from gateway.credentials.clis import Upstream
    from gateway.credentials.service import ModelGateway
    from gateway.credentials.standins import StandIn

__all__ = ["MOUNT", "ModelRoute"]

log = structlog.get_logger("gateway.credentials")

_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
                  "host", "content-length", "proxy-authorization", "proxy-authenticate"})
_CREDENTIAL = frozenset({"x-api-key", "authorization", "x-goog-api-key", "api-key", "chatgpt-account-id",
                         "accept-encoding"})
_MAX_BODY = 64 * 1024 * 1024
_MODEL_CALLS = {
    "anthropic": re.compile(r"(^|/)v1/(messages(/count_tokens)?|models(/[^/]+)?)$"),
    "openai": re.compile(r"(^|/)(responses(/compact)?|chat/completions|completions|embeddings|models(/[^/]+)?)$"),
    "gemini": re.compile(r"(^|/)v1(beta|alpha)?/models(/[^/:]+(:(generateContent|streamGenerateContent|countTokens|"
                         r"embedContent|batchEmbedContents))?)?$|(^|/)v1internal(:[A-Za-z]+|/operations/[^/]+)$"),
}
"""What a stand-in may ask for: the model APIs' own calls (a message, a response, a count, the model list; Code
Assist's methods, the API of Gemini CLI's Google login alone). The
rest of an API the real key opens (an account's files, batches, fine-tunes, admin endpoints) stays shut."""
_NO_AUTO_HEADERS = frozenset({"User-Agent", "Content-Type", "Accept"})
"""aiohttp adds these when a request lacks them: the upstream sees the CLI's own headers, none of ours."""
MOUNT = "/model"
"""Where the route is mounted on the gateway's port: a run's base URL is ``<gateway>/model/<upstream>``."""


def _error(wire: str, status: int, message: str) -> bytes:
    """An error answer in the upstream's own shape, so its CLI shows ``message``."""
    if wire == "anthropic":
        kind = "authentication_error" if status == 401 else "invalid_request_error"
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    return json.dumps({"error": {"message": message, "code": status, "type": "invalid_request_error",
                                 "status": "PERMISSION_DENIED" if status == 403 else "INVALID_ARGUMENT"}}).encode()


def _sse_error(wire: str, message: str) -> bytes:
    """A stream's last event saying why it was cut."""
    if wire == "anthropic":
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        return f"event: error\ndata: {json.dumps(body)}\n\n".encode()
    if wire == "openai":
        body = {"type": "response.failed", "response": {"status": "failed", "error": {
            "code": "budget_exceeded", "message": message}}}
        return f"event: response.failed\ndata: {json.dumps(body)}\n\n".encode()
    return f"data: {json.dumps({'error': {'code': 400, 'message': message, 'status': 'INVALID_ARGUMENT'}})}\n\n"\
        .encode()


def _given(headers: dict[str, str], query: list[tuple[str, str]]) -> str | None:
    """The stand-in, wherever the CLI put it (a CLI may send an empty or unrelated value in another header)."""
    auth = headers.get("authorization", "")
    found = [auth[7:].strip() if auth[:7].lower() == "bearer " else "",
             *(headers.get(name, "").strip() for name in ("x-api-key", "x-goog-api-key", "api-key")),
             *(v for k, v in query if k == "key")]
    return next((v for v in found if v.startswith(PREFIX)), None)


class ModelRoute:
    """The ASGI app mounted at ``/model``."""

    def __init__(self, models: ModelGateway) -> None:
        self._models = models

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"].removeprefix(MOUNT)
        name, _, rest = path.lstrip("/").partition("/")
        raw = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]
        headers = dict(raw)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        client = scope.get("client")
        grant = await self._models.find(_given(headers, query), str(client[0]) if client else "")
        upstream = grant.upstreams.get(name) if grant is not None else None
        wire = upstream.wire if upstream is not None else ("anthropic" if "x-api-key" in headers else "openai")
        if grant is None:
            return await _answer(send, 401, _error(wire, 401, "not a live run's credential (the model gateway "
                                                               "accepts a run's stand-in while its run lasts)"))
        if upstream is None:
            return await _answer(send, 404, _error(wire, 404, f"this run has no upstream {name!r}"))
        if not _MODEL_CALLS[upstream.wire].search(rest):
            log.warning("model gateway: a run asked for more than a model call", run_id=grant.run_id, path=rest)
            return await _answer(send, 403, _error(wire, 403, f"/{rest} is not a model call: the model gateway "
                                                               "forwards only those"))
        stopped = grant.stopped or self._models.over_budget(grant)
        if stopped:
            return await _answer(send, 400, _error(wire, 400, stopped))
        body = bytearray()
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            body += msg.get("body", b"")
            if len(body) > _MAX_BODY:
                return await _answer(send, 413, _error(wire, 413, "request too large"))
            if not msg.get("more_body"):
                break
        refused = self._model_refused(grant, rest, bytes(body))
        if refused:
            return await _answer(send, 403, _error(wire, 403, refused))
        out = [(k, v) for k, v in raw if k not in _HOP and k not in _CREDENTIAL and k not in upstream.headers]
        for extra, value in upstream.headers.items():  # the real credential's headers, joined to the CLI's own
            own = [v for k, v in raw if k == extra]
            out.append((extra, ",".join([*own, value])))
        out.append(("accept-encoding", "identity"))  # usage is read from the bytes as they pass
        url = f"{upstream.base_url}/{rest}"
        kept = [(k, v) for k, v in query if k != "key"]
        if kept:
            url += "?" + urlencode(kept)
        task = asyncio.current_task()
        assert task is not None
        gone = asyncio.create_task(_until_gone(receive, task))
        try:
            await self._forward(scope["method"], url, out, bytes(body), upstream, grant, send)
        except asyncio.CancelledError:
            if not gone.done():
                raise
            log.debug("model gateway: the run went away; the upstream request is cancelled", run_id=grant.run_id)
        finally:
            gone.cancel()
            if grant.shared is not None:  # another replica's run: what this answer used goes to its row
                await self._models.settle(grant)

    def _model_refused(self, grant: StandIn, path: str, body: bytes) -> str | None:
        """Why this run may not ask for this model (``modelGateway.othersModels``, for anyone but the owner)."""
        allowed = self._models.others_models
        if grant.owner or not allowed:
            return None
        model = path.split("/models/", 1)[1].split(":", 1)[0] if "/models/" in path else None  # Gemini
        if model is None:
            try:
                model = str(json.loads(body).get("model") or "")
            except (ValueError, AttributeError):
                model = ""
        if any(fnmatch.fnmatchcase(model, pat) for pat in allowed):
            return None
        return f"model {model or '(none named)'} is not open to this conversation (modelGateway.othersModels)"

    async def _forward(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes, upstream: Upstream,
                       grant: StandIn, send: Send) -> None:
        import aiohttp  # the first model request pays its import, not every gateway's start

        client = self._models.upstream_client()
        refused: str | None = None
        for _attempt in range(2):
            try:
                added, bearer = await self._credential(upstream, refused)
            except RefreshFailed as exc:
                return await _answer(send, 401, _error(upstream.wire, 401, str(exc)))
            try:
                resp = await client.request(method, url, headers=[*headers, *added], data=body,
                                            allow_redirects=False, skip_auto_headers=_NO_AUTO_HEADERS,
                                            proxy=self._models.proxy_for(url))
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                return await _answer(send, 502, _error(upstream.wire, 502,
                                                       f"the model API did not answer: {exc or type(exc).__name__}"))
            if resp.status == 401 and upstream.credential.login is not None and refused is None:
                resp.release()
                refused = bearer
                continue
            break
        try:
            await self._relay(resp, upstream, grant, send)
        finally:
            resp.close()

    async def _credential(self, upstream: Upstream, refused: str | None) -> tuple[list[tuple[str, str]], str | None]:
        cred = upstream.credential
        value = cred.value
        added: list[tuple[str, str]] = []
        if cred.login is not None:
            value, beside = await self._models.refresher.credential(cred.login, self._models.shape(cred.login_kind),
                                                                    refused=refused)
            added += beside.items()
        if value:
            if cred.how == "x-api-key":
                added.append(("x-api-key", value))
            elif cred.how == "bearer":
                added.append(("authorization", f"Bearer {value}"))
            elif cred.how == "x-goog-api-key":
                added.append(("x-goog-api-key", value))
        return added, value

    async def _relay(self, resp: ClientResponse, upstream: Upstream, grant: StandIn, send: Send) -> None:
        ctype = resp.headers.get("content-type", "")
        meter = Meter(upstream.wire, ctype)
        answer_headers = [(k, v) for k, v in resp.raw_headers if k.lower().decode("latin-1") not in _HOP
                          or (k.lower() == b"content-length" and not meter.sse)]
        await send({"type": "http.response.start", "status": resp.status, "headers": answer_headers})
        seen: dict[str, int] = {}
        cut: str | None = None
        try:
            async for chunk in resp.content.iter_any():
                if meter.feed(chunk) and meter.sse:
                    seen = self._account(grant, meter)
                    cut = self._models.over_budget(grant)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if cut:
                    break
            if meter.finish():
                seen = self._account(grant, meter)
        finally:
            if meter.usage and meter.usage != seen:
                self._account(grant, meter)
            _add(grant.usage, meter.usage)
        tail = _sse_error(upstream.wire, cut) if cut and meter.sse else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})

    def _account(self, grant: StandIn, meter: Meter) -> dict[str, int]:
        """This answer's cost so far added to its run's (a run may stream several answers at once)."""
        grant.model = meter.model or grant.model
        priced = self._models.price(meter.model or grant.model, meter.usage)
        grant.cost_usd += priced - meter.priced
        meter.priced = priced
        return dict(meter.usage)


def _add(into: dict[str, int], more: dict[str, int]) -> None:
    for key, value in more.items():
        into[key] = into.get(key, 0) + value


async def _until_gone(receive: Receive, task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` when the client disconnects (the CLI's turn was cancelled)."""
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            task.cancel()
            return


async def _answer(send: Send, status: int, body: bytes) -> None:
    with contextlib.suppress(OSError):
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
