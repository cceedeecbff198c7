"""The gateway's front: WebSocket RPC on ``/`` and ``/ws``, and the Starlette app for ``/healthz`` and the pages.

The RPC sockets go over our own socket driver (``gateway.server.rpc_socket``, given to uvicorn as its ``ws=``
protocol by ``RpcFront.socket_class``) to ``gateway.server.rpc_serve``, which runs the connect exchange and the
requests. Every other request goes through Starlette, on the routes ``build_app`` lists.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import cached_property, partial

import structlog
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import Receive, Scope, Send

from gateway.composition.gateway import Gateway
from gateway.people.signin import SIGNIN_PATH, redeem_endpoint
from gateway.server import control_ui
from gateway.server.connection import CLOSE_POLICY
from gateway.server.origins import origin_allowed
from gateway.server.rpc_serve import serve_socket
from gateway.server.rpc_socket import RpcSocket, rpc_socket_class
from gateway.webchat.files import FILES_PATH, serve_file

__all__ = ["RpcFront", "build_app", "route_paths"]

log = structlog.get_logger("gateway.server.app")

RPC_PATHS = frozenset({"/", "/ws"})


class RpcFront:
    """The app uvicorn runs: the RPC sockets on their paths (``socket_class``, uvicorn's ``ws=``), Starlette for
    everything else, and the origin check in front of both.

    Why the RPC socket is not an ASGI route: it is the hot path, and what it needs beside frames (inline answers,
    a per-turn budget, the pre-``connect`` frame cap, a close that does not wait for a peer that stopped reading)
    is done in our own driver over websockets' sans-I/O protocol (``gateway.server.rpc_socket``). HTTP routes,
    and a WebSocket on any other path, keep Starlette's full stack.
    """

    def __init__(self, app: Starlette, serve_socket: Callable[[RpcSocket], Awaitable[None]], gateway: Gateway,
                 rpc_paths: frozenset[str] = RPC_PATHS) -> None:
        self.app = app
        self._serve_socket = serve_socket
        self.gw = gateway
        self.rpc_paths = rpc_paths

    @cached_property
    def socket_class(self) -> type[RpcSocket]:
        """What to give uvicorn as ``ws=``: every upgrade reaches it; the RPC paths are served by ``serve``."""
        return rpc_socket_class(self)

    async def serve(self, socket: RpcSocket) -> None:
        await self._serve_socket(socket)

    def origin_ok(self, origin: str | None, host: str | None, *, path: str, remote: str) -> bool:
        if origin_allowed(origin, host, self.gw.config.gateway.allowedOrigins):
            return True
        log.info("cross-origin request refused", path=path, client=remote)
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("websocket", "http") and not self._origin_ok(scope):
            await self._refuse_origin(scope, send)
            return
        await self.app(scope, receive, send)

    def _origin_ok(self, scope: Scope) -> bool:
        origin = host = None
        for key, value in scope["headers"]:
            if key == b"origin":
                origin = value.decode("latin-1")
            elif key == b"host":
                host = value.decode("latin-1")
        return origin_allowed(origin, host, self.gw.config.gateway.allowedOrigins)

    @staticmethod
    async def _refuse_origin(scope: Scope, send: Send) -> None:
        log.info("cross-origin request refused", path=scope.get("path"), client=(scope.get("client") or ("",))[0])
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": CLOSE_POLICY})  # before accept: HTTP 403
            return
        body = b'{"ok":false,"error":"cross-origin request refused (gateway.allowedOrigins)"}'
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def build_app(gateway: Gateway) -> RpcFront:
    """The app bound to one running gateway (give uvicorn its ``socket_class`` as ``ws=``)."""

    async def healthz(_request: Request) -> Response:
        return JSONResponse(gateway.health())

    async def readyz(_request: Request) -> Response:
        """Readiness, beside liveness: 503 while the database or Redis is unreachable or the gateway drains, so a
        balancer sends new clients elsewhere (``Gateway.readiness``)."""
        answer = await gateway.readiness()
        return JSONResponse(answer, status_code=200 if answer["ready"] else 503)

    async def index(_request: Request) -> Response:
        from gateway.webchat import page

        return HTMLResponse(page.index_html(), headers=page.page_headers())

    async def webchat_file(request: Request) -> Response:
        return await serve_file(request, gateway.db,
                                lambda key: gateway.http_credentials.may_read_session(request, key))

    routes: list[BaseRoute] = [
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/", index),
        Route(FILES_PATH + "/{fid}/{name:path}", webchat_file),
        Route(SIGNIN_PATH, redeem_endpoint(gateway.people), methods=["POST"]),  # a /login link's code (people)
    ]
    routes += gateway.http_routes
    rpc_paths = RPC_PATHS
    ui = control_ui.for_config(gateway.config, gateway.version)
    if ui is not None:  # OpenClaw's Control UI, and its socket at its base path (gateway.server.control_ui)
        routes += ui.routes()
        rpc_paths = rpc_paths | ui.socket_paths
    log.debug("serving", http=route_paths(routes), websocket=sorted(rpc_paths))  # what the origin check guards
    return RpcFront(Starlette(routes=routes), partial(serve_socket, gateway), gateway, rpc_paths)


def route_paths(routes: list[BaseRoute]) -> list[str]:
    """Every HTTP path template served (a mount as ``<prefix>/{path:path}``), for the start log and its tests."""
    found: list[str] = []
    for route in routes:
        path = getattr(route, "path", None)
        if isinstance(route, Mount):
            found.append(f"{route.path}/{{path:path}}")
        elif isinstance(path, str):
            found.append(path)
    return found
