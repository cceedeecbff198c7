"""The routes: ``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/responses``.

Each request is admitted the same way: the API is on (``api.openai.enabled``, read per request), the credential
is a live caller (``HttpCredentials.caller``; none: 401), and the caller's bucket has a request left (429). A turn's
body is then checked whole (400 naming the field, nothing stored), its session derived in the caller's own name
space (``conversations``) or found from ``previous_response_id`` (continued only if the access model lets the
caller write to it), and the turn run (``turns``). Whole answers are JSON; ``stream: true`` answers are
server-sent events in OpenAI's shapes (``shapes``), ending with ``data: [DONE]`` for chat completions.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from gateway.access import Obj, may
from gateway.openai_api import conversations, shapes, wire
from gateway.openai_api.errors import ApiError, error_body, response
from gateway.openai_api.turns import Delta, Done, Started, TurnRunner
from gateway.protocol import Forbidden, InvalidRequest
from gateway.sessions.service import parse_key

if TYPE_CHECKING:
    from gateway.access import Principal
    from gateway.access.doors import AccessControl
    from gateway.access.http import HttpCredentials
    from gateway.composition.event_taps import EventTap
    from gateway.config import ConfigStore
    from gateway.dispatch.callers import Caller
    from gateway.openai_api.config import OpenAiApiConfig
    from gateway.people.service import PeopleService
    from gateway.runs import RunQueue
    from gateway.sessions.service import SessionsService

__all__ = ["OpenAiApi"]

log = structlog.get_logger("gateway.openai_api")

KEEPALIVE_S = 15.0
"""An SSE comment this often while a turn is silent, so proxies and clients see a live stream."""
_IDEMPOTENCY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
SSE_HEADERS = {"cache-control": "no-store", "x-accel-buffering": "no"}


def _json(data: dict[str, Any], status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json")


async def _with_keepalive(items: AsyncIterator[Any], every: float) -> AsyncIterator[Any]:
    """``items``, with None yielded whenever ``every`` seconds pass without one."""
    nxt: asyncio.Future[Any] | None = None
    try:
        while True:
            if nxt is None:
                nxt = asyncio.ensure_future(items.__anext__())
            done, _ = await asyncio.wait({nxt}, timeout=every)
            if not done:
                yield None
                continue
            try:
                item = nxt.result()
            except StopAsyncIteration:
                return
            nxt = None
            yield item
    finally:
        if nxt is not None and not nxt.done():
            nxt.cancel()
            with contextlib.suppress(BaseException):
                await nxt
        with contextlib.suppress(Exception):
            await items.aclose()  # type: ignore[attr-defined]


class OpenAiApi:
    """The OpenAI-compatible door of one gateway start."""

    def __init__(self, config: ConfigStore, credentials: HttpCredentials, access: AccessControl,
                 people: PeopleService, sessions: SessionsService, runs: RunQueue, runner: TurnRunner) -> None:
        self._config = config
        self._credentials = credentials
        self._access = access
        self._people = people
        self._sessions = sessions
        self._runs = runs
        self._runner = runner
        self._rates = conversations.CallerRates()
        self._stopping: set[asyncio.Task[None]] = set()
        """Turns being stopped because their stream's client went away (held until done)."""
        self._created = int(time.time())
        """What ``/v1/models`` says each model was created at: when this gateway started."""

    def routes(self) -> list[Route]:
        return [Route("/v1/models", self._door(self.models), methods=["GET"]),
                Route("/v1/chat/completions", self._door(self.chat_completions), methods=["POST"]),
                Route("/v1/responses", self._door(self.responses), methods=["POST"])]

    @property
    def settings(self) -> OpenAiApiConfig:
        return self._config.config.api.openai

    # -- admission -------------------------------------------------------------------------------

    def _door(self, handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                caller, p = await self._admit(request)
                answer: Response = await handler(request, caller, p)
                return answer
            except ApiError as exc:
                return response(exc)
        return endpoint

    async def _admit(self, request: Request) -> tuple[Caller, Principal]:
        settings = self.settings
        if not settings.enabled:
            raise ApiError(404, "The OpenAI-compatible API is off on this gateway (api.openai.enabled).",
                           code="api_disabled")
        caller = await self._credentials.caller(request)
        if caller is None:
            given = request.headers.get("authorization")
            why = ("Incorrect API key provided: it is not a live credential of this gateway." if given else
                   "You didn't provide an API key: send 'Authorization: Bearer <token>' (the gateway token, a "
                   "person's sign-in, or a token from 'remoteclaw mcp token create --person ID').")
            raise ApiError(401, why, type="invalid_request_error" if not given else "authentication_error",
                           code="invalid_api_key")
        p = self._access.principal(caller)
        self._rates.take(conversations.rate_key(p, caller), settings.requestsPerMinute, settings.burst)
        return caller, p

    async def _body(self, request: Request) -> bytes:
        limit = self.settings.maxRequestBytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise ApiError(413, f"The request body is larger than {limit} bytes (api.openai.maxRequestBytes).",
                           code="request_too_large")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise ApiError(413, f"The request body is larger than {limit} bytes (api.openai.maxRequestBytes).",
                               code="request_too_large")
        return bytes(body)

    # -- models ----------------------------------------------------------------------------------

    async def models(self, _request: Request, _caller: Caller, p: Principal) -> Response:
        """The agents the caller may talk to, as models (a person: those open to them, ``agents.list[].people``)."""
        person = await self._people.get(p.person_id) if p.person_id is not None else None
        data = [shapes.model_entry(a.id, self._created) for a in self._config.config.agents.list
                if may(p, "read", Obj("agent", key=a.id))
                and (person is None or self._people.may_use(person, a.people))]
        return _json({"object": "list", "data": data})

    # -- turns -----------------------------------------------------------------------------------

    def _agent(self, model: str) -> str:
        try:
            return self._sessions.agent(model, field="model").id
        except InvalidRequest:
            raise ApiError(404, f"The model '{model}' does not exist or you do not have access to it: name an "
                                "agent of this gateway (GET /v1/models).", param="model",
                           code="model_not_found") from None

    async def _session(self, request: Request, p: Principal, caller: Caller, agent: str, user: str | None,
                       previous: str | None) -> str:
        if previous is not None:
            return await self._continued(caller, agent, previous)
        header = self.settings.conversationHeader
        name = conversations.conversation(request.headers.get(header), user, header)
        return conversations.session_key(p, agent, name)

    async def _continued(self, caller: Caller, agent: str, previous: str) -> str:
        """The session of ``previous_response_id``, if the caller may write to it (else as unknown as none)."""
        unknown = ApiError(404, f"Previous response with id '{previous}' not found.", param="previous_response_id",
                           code="previous_response_not_found")
        if not previous.startswith(shapes.RESPONSE_PREFIX):
            raise unknown
        key = await self._runs.session_of(previous[len(shapes.RESPONSE_PREFIX):])
        if key is None:
            raise unknown
        try:
            await self._access.check_session(caller, "write", key, "previous_response_id")
        except Forbidden:
            raise unknown from None
        if parse_key(key)[0] != agent:
            raise ApiError(400, f"Invalid value for 'model': response '{previous}' is a conversation with "
                                f"'{parse_key(key)[0]}'.", param="model", code="invalid_value")
        return key

    def _idempotency(self, request: Request) -> str:
        given = request.headers.get("idempotency-key")
        if given is None:
            return "oai" + uuid.uuid4().hex[:24]
        if not _IDEMPOTENCY.fullmatch(given):
            raise ApiError(400, "Invalid value for 'Idempotency-Key': 1-64 letters, digits, _ and -.",
                           param="Idempotency-Key", code="invalid_value")
        return given

    async def _begin(self, request: Request, caller: Caller, p: Principal, turn: wire.Turn,
                     previous: str | None = None) -> tuple[EventTap, Started]:
        agent = self._agent(turn.agent)
        key = await self._session(request, p, caller, agent, turn.user, previous)
        idempotency = self._idempotency(request)
        tap = self._runner.tap(key)  # before the turn starts: none of its events is missed
        try:
            started = await self._runner.start(conversations.api_caller(caller), key, turn.text, idempotency,
                                               turn.files)
        except BaseException:
            tap.close()
            raise
        log.info("openai turn", session_key=key, run_id=started.run_id, stream=turn.stream)
        return tap, started

    def _follow(self, tap: EventTap, started: Started) -> AsyncIterator[Delta | Done]:
        settings = self.settings
        return self._runner.follow(tap, started, wait_s=settings.waitSeconds,
                                   approval_wait_s=settings.approvalWaitSeconds)

    async def _whole(self, tap: EventTap, started: Started) -> Done:
        with tap:
            async for item in self._follow(tap, started):
                if isinstance(item, Done):
                    return item
        raise ApiError(500, "The turn ended without an answer.", type="server_error", code="turn_failed",
                       retry=False)

    async def chat_completions(self, request: Request, caller: Caller, p: Principal) -> Response:
        req: wire.ChatRequest = wire.parse(wire.ChatRequest, await self._body(request))
        turn = wire.chat_turn(req)
        tap, started = await self._begin(request, caller, p, turn)
        created = int(time.time())
        if not turn.stream:
            done = await self._whole(tap, started)
            return _json(shapes.completion(started.run_id, req.model, created, done.reply, done.usage))
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        return StreamingResponse(self._stop_if_gone(self._chat_stream(tap, started, req.model, created, include_usage),
                                                    caller, started),
                                 media_type="text/event-stream", headers=SSE_HEADERS)

    async def _stop_if_gone(self, chunks: AsyncIterator[bytes], caller: Caller,
                            started: Started) -> AsyncIterator[bytes]:
        """A stream whose client goes away before its end (a stop button, Ctrl-C) stops its turn, as OpenAI's API
        stops generating (``api.openai.stopOnDisconnect``)."""
        ended = False
        try:
            async for chunk in chunks:
                yield chunk
            ended = True
        finally:
            if not ended and self.settings.stopOnDisconnect:
                stop = asyncio.get_running_loop().create_task(
                    self._runner.stop(conversations.api_caller(caller), started))
                self._stopping.add(stop)
                stop.add_done_callback(self._stopping.discard)

    async def _chat_stream(self, tap: EventTap, started: Started, model: str, created: int,
                           include_usage: bool) -> AsyncIterator[bytes]:
        run_id = started.run_id
        with tap:
            yield shapes.sse(shapes.chat_chunk(run_id, model, created, delta={"role": "assistant", "content": ""},
                                               with_usage=include_usage))
            try:
                async for item in _with_keepalive(self._follow(tap, started), KEEPALIVE_S):
                    if item is None:
                        yield b": keepalive\n\n"
                    elif isinstance(item, Delta):
                        yield shapes.sse(shapes.chat_chunk(run_id, model, created, delta={"content": item.text},
                                                           with_usage=include_usage))
                    else:
                        yield shapes.sse(shapes.chat_chunk(run_id, model, created, finish="stop",
                                                           with_usage=include_usage))
                        if include_usage:
                            yield shapes.sse(shapes.chat_chunk(run_id, model, created, usage=item.usage))
            except ApiError as exc:
                yield shapes.sse(error_body(exc))
            yield b"data: [DONE]\n\n"

    async def responses(self, request: Request, caller: Caller, p: Principal) -> Response:
        req: wire.ResponsesRequest = wire.parse(wire.ResponsesRequest, await self._body(request))
        turn = wire.responses_turn(req)
        tap, started = await self._begin(request, caller, p, turn, req.previous_response_id)
        created = int(time.time())
        if not turn.stream:
            done = await self._whole(tap, started)
            return _json(shapes.response_object(started.run_id, req.model, created, status="completed",
                                                text=done.reply, usage=done.usage, previous=req.previous_response_id,
                                                user=req.user))
        return StreamingResponse(self._stop_if_gone(self._responses_stream(tap, started, req, created), caller,
                                                    started), media_type="text/event-stream", headers=SSE_HEADERS)

    async def _responses_stream(self, tap: EventTap, started: Started, req: wire.ResponsesRequest,
                                created: int) -> AsyncIterator[bytes]:
        run_id, seq = started.run_id, 0
        item_id = f"msg_{run_id}"

        def event(name: str, **data: Any) -> bytes:
            nonlocal seq
            out = shapes.sse_event(name, {"type": name, "sequence_number": seq, **data})
            seq += 1
            return out

        def whole(status: str, text: str = "", **extra: Any) -> dict[str, Any]:
            return shapes.response_object(run_id, req.model, created, status=status, text=text,
                                          previous=req.previous_response_id, user=req.user, **extra)

        with tap:
            yield event("response.created", response=whole("in_progress"))
            yield event("response.in_progress", response=whole("in_progress"))
            yield event("response.output_item.added", output_index=0,
                        item=shapes.message_item(run_id, "", "in_progress"))
            yield event("response.content_part.added", item_id=item_id, output_index=0, content_index=0,
                        part={"type": "output_text", "text": "", "annotations": []})
            try:
                async for item in _with_keepalive(self._follow(tap, started), KEEPALIVE_S):
                    if item is None:
                        yield b": keepalive\n\n"
                    elif isinstance(item, Delta):
                        yield event("response.output_text.delta", item_id=item_id, output_index=0, content_index=0,
                                    delta=item.text, logprobs=[])
                    else:
                        part = {"type": "output_text", "text": item.reply, "annotations": []}
                        yield event("response.output_text.done", item_id=item_id, output_index=0, content_index=0,
                                    text=item.reply, logprobs=[])
                        yield event("response.content_part.done", item_id=item_id, output_index=0, content_index=0,
                                    part=part)
                        yield event("response.output_item.done", output_index=0,
                                    item=shapes.message_item(run_id, item.reply, "completed"))
                        yield event("response.completed", response=whole("completed", item.reply, usage=item.usage))
            except ApiError as exc:
                yield event("response.failed", response=whole("failed", error={"code": exc.code,
                                                                              "message": exc.message}))
