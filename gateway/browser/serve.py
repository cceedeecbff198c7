"""Browser files for MCP clients: what a screenshot, PDF or download became on the gateway, reachable without
reading the gateway's disk.

``browser.request`` answers name each saved file (``files: [{name, path, mimeType, size, url}]``). A remote MCP
client (``/mcp``) cannot open ``path``, so the browser tool turns each file into MCP content: images through
``browser.file`` (the bytes, base64) as image content, other files as an embedded resource (small ones) or a
resource link to ``url``: ``GET /__remoteclaw__/browser/files/<name>``, which answers to a bearer token whose
principal the access model lets ``exec`` on a node, as ``browser.file`` (the gateway token, an owner MCP token:
the browser tool is owner-only). The route serves files of
``<state dir>/outbound/browser/`` only, as downloads that never run as a page.
"""

from __future__ import annotations

import asyncio
import base64
import mimetypes
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from gateway.access import Access, may
from gateway.access.objects import Obj
from gateway.composition.services import Key
from gateway.dispatch.dispatcher import ADMIN, CallContext, Params, method
from gateway.paths import OUTBOUND
from gateway.protocol import InvalidRequest

if TYPE_CHECKING:
    from collections.abc import Callable

    from starlette.requests import Request

    from gateway.access.doors import AccessControl
    from gateway.access.http import HttpCredentials
    from gateway.composition.hosts import CapabilityHost
    from gateway.config import ConfigStore

__all__ = ["BROWSER_FILES", "FILES_PATH", "MAX_INLINE_BYTES", "BrowserFiles", "browser_file", "start"]

FILES_PATH = "/__remoteclaw__/browser/files"
MAX_INLINE_BYTES = 10 * 1024 * 1024
"""The most ``browser.file`` hands back in one answer (the node sends at most 10 MiB per file anyway)."""
_NAME = re.compile(r"^[\w.\-]{1,200}$")


def _mime(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


class BrowserFiles:
    """The saved browser files: their URLs in answers, the ``browser.file`` bytes, and the HTTP route."""

    def __init__(self, config: ConfigStore, state_dir: Path, listen: Callable[[], tuple[str, int]],
                 access: AccessControl, credentials: HttpCredentials) -> None:
        self._config = config
        self._state_dir = state_dir
        self._listen = listen
        self._access = access
        self._credentials = credentials
        """Where the server listens (known once it is bound, after this is built)."""

    def base_url(self) -> str:
        """Where clients reach this gateway over HTTP: ``gateway.publicUrl``, else the address it listens on."""
        public = self._config.config.gateway.publicUrl
        if public:
            return public.rstrip("/")
        host, port = self._listen()
        host = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
        return f"http://{host}:{port}"

    def file_url(self, name: str) -> str:
        return f"{self.base_url()}{FILES_PATH}/{name}"

    def describe(self, saved: list[str]) -> list[dict[str, Any]]:
        """The ``files`` list of an answer: each saved file's name, path, type, size and fetch URL."""
        out = []
        for path in saved:
            p = Path(path)
            out.append({"name": p.name, "path": path, "mimeType": _mime(p.name), "size": p.stat().st_size,
                        "url": self.file_url(p.name)})
        return out

    def find(self, name: str) -> Path | None:
        if not _NAME.match(name) or name.startswith("."):
            return None
        folders = (self._state_dir / OUTBOUND / "browser").glob("*/")  # one per session (``outbound_dir``)
        return next((f / name for f in folders if (f / name).is_file() and not (f / name).is_symlink()), None)

    async def _decision(self, request: Request) -> int:
        """The access model's answer (``gateway.access``): the browser runs on the owner's machine, so its files
        are an owner's ``exec`` of a node, as ``browser.file`` is declared; 200, 401 (no live credential), 403."""
        caller = await self._credentials.caller(request)
        if caller is None:
            return 401
        return 200 if may(self._access.principal(caller), "exec", Obj("node")) else 403

    def route(self) -> Route:
        async def serve(request: Request) -> Response:
            status = await self._decision(request)
            if status == 401:
                return PlainTextResponse("unauthorized: send Authorization: Bearer <gateway token or owner MCP token>",
                                         status_code=401, headers={"www-authenticate": "Bearer"})
            if status != 200:
                return PlainTextResponse("browser files are the owner's", status_code=403)
            path = self.find(request.path_params["name"])
            if path is None:
                return PlainTextResponse("no such browser file", status_code=404)
            data = await asyncio.to_thread(path.read_bytes)
            return Response(data, media_type=_mime(path.name), headers={
                "content-disposition": f'attachment; filename="{path.name}"', "x-content-type-options": "nosniff",
                "content-security-policy": "sandbox", "cache-control": "private, no-store"})

        return Route(FILES_PATH + "/{name}", serve, methods=["GET"])


BROWSER_FILES: Key[BrowserFiles] = Key("browser files")


class FileParams(Params):
    name: str = Field(min_length=1, max_length=200, description="A file name from browser.request's files[].name")


@method("browser.file", access=Access("node", "exec"), params=FileParams, scope=ADMIN, aliases=("browser:file",))
async def browser_file(p: FileParams, ctx: CallContext) -> dict[str, Any]:
    """A saved browser file's bytes (base64), for tools that hand them to an MCP client as content."""
    path = ctx.service(BROWSER_FILES).find(p.name)
    if path is None:
        raise InvalidRequest(f"name: no browser file {p.name!r} (it may have been pruned: take it again)",
                             details={"field": "name"})
    data = await asyncio.to_thread(path.read_bytes)
    if len(data) > MAX_INLINE_BYTES:
        raise InvalidRequest(f"name: {p.name} is {len(data)} bytes, over {MAX_INLINE_BYTES} (fetch its url)",
                             details={"field": "name"})
    return {"name": path.name, "mimeType": _mime(path.name), "size": len(data),
            "base64": base64.b64encode(data).decode()}


async def start(host: CapabilityHost) -> None:
    """Capability entry: the saved files, and their route."""
    files = BrowserFiles(host.config_store, host.state_dir, host.listen, host.access, host.http_credentials)
    host.services.provide(BROWSER_FILES, files)
    host.add_route(files.route())
