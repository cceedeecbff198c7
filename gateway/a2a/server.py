"""The A2A server: each served agent at ``/a2a/<agentId>`` (JSON-RPC, A2A 1.0 and 0.3's method names), its Agent
Card at ``/a2a/<agentId>/.well-known/agent-card.json``, the default agent's also at ``/.well-known/agent-card.json``.

The protocol is the SDK's: its JSON-RPC dispatcher and request handler (``a2a-sdk``'s ``DefaultRequestHandler``:
tasks, streams over SSE, resubscribe, cancel) over our executor (``gateway.a2a.turns``) and task store
(``gateway.a2a.tasks``). In front of it, this door decides who calls before the SDK reads the request:

1. the bearer becomes a caller as at every HTTP door (``HttpCredentials.caller``: the gateway token, a person's
   sign-in, a ``/mcp`` token made for a person); none, or a dead one: 401 with ``WWW-Authenticate: Bearer``;
2. the peer is the person behind it (the gateway token: the owner). Guests, agent runs and nodes are refused (403);
   a person whose agent is not open to them (``agents.list[].people``), or an agent not served (``a2a.agents``),
   is refused (403, 404) before anything is stored;
3. each peer has ``a2a.requestsPerMinute`` (429 past it), and bodies are at most ``a2a.maxRequestBytes`` (413);
4. a message whose text is a slash command is refused (-32602): chat commands are for the person's own chat; so
   is one with a file by URL (never fetched) or files past the web chat's limits (``gateway.a2a.files``);
5. the peer's turns are run by a caller of its own (``turn_caller``): the person, confined to their own
   conversations, allowed ``chat.send`` and ``chat.abort`` only, at the tier their role gives (the owner's tier only
   for the owner). The task store and the executor decide with its principal, through ``gateway.access``.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway import __version__
from gateway.a2a.card import A2A_PREFIX, agent_card
from gateway.a2a.files import message_parts
from gateway.a2a.files import refusal as file_refusal
from gateway.a2a.tasks import GatewayTaskStore, PeerContext, PeerUser
from gateway.a2a.turns import GatewayExecutor
from gateway.composition.services import Key
from gateway.dispatch.callers import READ, WRITE, Caller, SessionScope
from gateway.people.service import person_key
from gateway.server.origins import origin_allowed

if TYPE_CHECKING:
    from starlette.types import Message

    from gateway.access.principals import Principal
    from gateway.composition.hosts import CapabilityHost
    from gateway.config import AgentConfig

__all__ = ["A2A_SERVER", "A2aServer", "turn_caller"]

log = structlog.get_logger("gateway.a2a")

CARD_PATH = "/.well-known/agent-card.json"
A2A_CLIENT = "remoteclaw-a2a"
TURN_METHODS = frozenset({"chat.send", "chat.abort"})
SEND_METHODS = frozenset({"SendMessage", "SendStreamingMessage", "message/send", "message/stream"})
INVALID_REQUEST, INVALID_PARAMS = -32600, -32602


def _error(status: int, code: int, message: str, req_id: Any = None, headers: dict[str, str] | None = None,
           field: str | None = None) -> Response:
    error: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        error["data"] = {"field": field}
    return Response(orjson.dumps({"jsonrpc": "2.0", "id": req_id, "error": error}), status_code=status,
                    media_type="application/json", headers=headers)


def turn_caller(caller: Caller, principal: Principal, agent_id: str) -> Caller:
    """Who runs a peer's turns: the gateway token (or the owner's own ``/mcp`` token) as itself; a person as
    themselves, confined to their own conversations and to the two methods a turn needs."""
    person = principal.person_id
    if person is None:
        return caller
    return Caller(conn_id=caller.conn_id.replace("http-", "a2a-", 1), role="operator",
                  scopes=frozenset({READ, WRITE}), client_id=A2A_CLIENT, client_mode="backend", remote=caller.remote,
                  display_name=f"a2a:{person}", methods=TURN_METHODS,
                  confined_to=SessionScope(person_key(agent_id, person), person_id=person), person_id=person)


class RateLimit:
    """At most ``n`` requests a minute per peer (a sliding window of their last requests' times)."""

    def __init__(self) -> None:
        self._seen: dict[str, deque[float]] = {}

    def allow(self, peer: str, per_minute: int) -> float | None:
        """None when the request may go on; else the seconds until it may."""
        now = time.monotonic()
        times = self._seen.setdefault(peer, deque())
        while times and now - times[0] >= 60:
            times.popleft()
        if len(times) >= per_minute:
            return 60 - (now - times[0])
        times.append(now)
        if len(self._seen) > 10_000:  # bound memory: forget peers idle for a minute
            for name in [k for k, v in self._seen.items() if not v or now - v[-1] >= 60]:
                del self._seen[name]
        return None


class _ContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, carrying the peer this door decided (``PeerContext``) and nothing it did not."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        peer = request.scope.get("a2a.peer")
        headers = context.state.get("headers") or {}  # the SDK reads A2A-Version there; the bearer stays here
        context.state["headers"] = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        if isinstance(peer, PeerContext):
            context.state["a2a.peer"] = peer
            context.user = PeerUser(peer.peer)
        return context


def _sent_parts(body: Any) -> list[Any] | None:
    """The parts of the message a send method carries, if the body is one."""
    if not isinstance(body, dict) or body.get("method") not in SEND_METHODS:
        return None
    return message_parts(body)


def _slash_command(parts: list[Any]) -> str | None:
    """The field of a message text that is a slash command, if any (``message.parts[0].text``)."""
    for i, part in enumerate(parts):
        text = part.get("text") if isinstance(part, dict) else None
        if isinstance(text, str) and text.lstrip().startswith("/"):
            return f"params.message.parts[{i}].text"
    return None


class A2aServer:
    """The A2A routes of one gateway start."""

    def __init__(self, host: CapabilityHost) -> None:
        self._host = host
        self.store = GatewayTaskStore(host.db, host.access)
        self.executor = GatewayExecutor(host, self.base_url)
        default = self._served(None)
        card = agent_card(default, host.config.a2a, "http://127.0.0.1", __version__) if default else None
        self.handler = DefaultRequestHandler(agent_executor=self.executor, task_store=self.store,
                                             agent_card=card)  # type: ignore[arg-type]
        self.dispatcher = JsonRpcDispatcher(request_handler=self.handler, context_builder=_ContextBuilder(),
                                            enable_v0_3_compat=True)
        self.limits = RateLimit()

    def routes(self) -> list[Route]:
        return [
            Route(CARD_PATH, self.default_card, methods=["GET"]),
            Route(A2A_PREFIX + "/{agent_id}" + CARD_PATH, self.card, methods=["GET"]),
            Route(A2A_PREFIX + "/{agent_id}", self.endpoint, methods=["POST"]),
        ]

    # -- what is served ----------------------------------------------------------------------------

    def base_url(self, request: Request | None = None) -> str:
        public = self._host.config.gateway.publicUrl
        if public:
            return public.rstrip("/")
        if request is not None:
            return f"{request.url.scheme}://{request.url.netloc}"
        bind, port = self._host.listen()
        return f"http://{bind}:{port}"

    def _served(self, agent_id: str | None) -> AgentConfig | None:
        """The agent ``agent_id`` (None: the default agent) if A2A serves it."""
        cfg = self._host.config
        wanted = agent_id or self._host.sessions.default_agent_id
        allowed = cfg.a2a.agents
        if allowed is not None and wanted not in allowed:
            return None
        return next((a for a in cfg.agents.list if a.id == wanted), None)

    # -- cards -------------------------------------------------------------------------------------

    def _card(self, request: Request, agent: AgentConfig | None) -> Response:
        if agent is None:
            return JSONResponse({"error": "no such A2A agent here"}, status_code=404)
        card = agent_card(agent, self._host.config.a2a, self.base_url(request), __version__)
        return JSONResponse(agent_card_to_dict(card), headers={"cache-control": "no-cache"})

    async def card(self, request: Request) -> Response:
        return self._card(request, self._served(request.path_params["agent_id"]))

    async def default_card(self, request: Request) -> Response:
        return self._card(request, self._served(None))

    # -- the endpoint ------------------------------------------------------------------------------

    async def _peer(self, request: Request, agent: AgentConfig) -> PeerContext | Response:
        """Who calls, decided (see the module docstring), or the refusal."""
        caller = await self._host.http_credentials.caller(request)
        if caller is None:
            return _error(401, INVALID_REQUEST, "Unauthorized: a valid bearer token is required "
                                                "(Authorization: Bearer <token>)",
                          headers={"www-authenticate": 'Bearer realm="a2a"'})
        principal = self._host.access.principal(caller)
        if principal.kind in ("run", "node") or principal.kind == "guest" \
                or (principal.kind == "token" and principal.person_id is None and not principal.is_owner):
            return _error(403, INVALID_REQUEST, f"Forbidden: a {principal.kind} credential cannot call A2A agents "
                                                "(use the gateway token, a person's sign-in or a token made for "
                                                "a person)")
        person_id = principal.person_id
        if person_id is not None:
            person = await self._host.people.get(person_id)
            if not self._host.people.may_use(person, agent.people):
                return _error(403, INVALID_REQUEST, f"Forbidden: agent '{agent.id}' is not open to {person_id} "
                                                    "(agents.list[].people)", field="agentId")
        runner = turn_caller(caller, principal, agent.id)
        return PeerContext(caller=runner, principal=self._host.access.principal(runner), agent_id=agent.id,
                           peer=person_id or "owner")

    async def endpoint(self, request: Request) -> Response:
        cfg = self._host.config.a2a
        if not origin_allowed(request.headers.get("origin"), request.headers.get("host"),
                              self._host.config.gateway.allowedOrigins):
            return _error(403, INVALID_REQUEST, "Forbidden: cross-origin requests are not accepted")
        agent = self._served(request.path_params["agent_id"])
        if agent is None:
            return _error(404, INVALID_REQUEST, f"no A2A agent '{request.path_params['agent_id']}' here",
                          field="agentId")
        peer = await self._peer(request, agent)
        if isinstance(peer, Response):
            return peer
        wait = self.limits.allow(peer.peer, cfg.requestsPerMinute)
        if wait is not None:
            return _error(429, INVALID_REQUEST, f"Too many requests: at most {cfg.requestsPerMinute} a minute "
                                                f"(a2a.requestsPerMinute)", headers={"retry-after": f"{wait:.0f}"})
        body = await self._read(request, cfg.maxRequestBytes)
        if isinstance(body, Response):
            return body
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            return _error(400, -32700, "Parse error: the body is not JSON")
        parts = _sent_parts(parsed)
        field = _slash_command(parts) if parts is not None else None
        if field is not None:
            return _error(200, INVALID_PARAMS, f"{field}: slash commands are not taken over A2A (they are for the "
                                               "person's own chat)", parsed.get("id"), field=field)
        refused = file_refusal(parts) if parts is not None else None
        if refused is not None:
            return _error(200, INVALID_PARAMS, refused[1], parsed.get("id"), field=refused[0])
        request.scope["a2a.peer"] = peer
        return await self.dispatcher.handle_requests(_replaying(request, body))

    @staticmethod
    async def _read(request: Request, limit: int) -> bytes | Response:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return _error(413, INVALID_REQUEST, f"Payload Too Large: at most {limit} bytes (a2a.maxRequestBytes)")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                return _error(413, INVALID_REQUEST, f"Payload Too Large: at most {limit} bytes (a2a.maxRequestBytes)")
        return bytes(body)

    async def stop(self) -> None:
        await self.handler.aclose()
        await self.store.flush()  # the tasks' states still waiting to be written


def _replaying(request: Request, body: bytes) -> Request:
    """The same request for the SDK's dispatcher, which reads the body again: its ``receive`` gives the bytes
    already read (and then what the client sends next, a disconnect), so no private attribute is set."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await request.receive()

    return Request(request.scope, receive)


A2A_SERVER: Key[A2aServer] = Key("a2a server")
