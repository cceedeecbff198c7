"""OpenClaw's Control UI, served from the gateway's own origin when its files are installed.

The Control UI is a static single-page app shipped inside the ``openclaw`` npm package
(``dist/control-ui/``). Served here at ``gateway.controlUi.basePath`` (``/openclaw`` by default), it is
same-origin with the gateway, so the origin check lets it in without ``gateway.allowedOrigins``, and it
finds its socket where it looks by default: ``ws(s)://<host><basePath>``, which the RPC front answers
like ``/``.

What we add to the shipped files is what OpenClaw's own gateway adds when it serves them: ``index.html``
gets ``data-openclaw-control-ui-base-path`` (the app's router reads it) and its relative asset links made
absolute under the base path, so deep links such as ``/openclaw/settings/general`` load the same page.
Unknown paths fall back to ``index.html`` (the app routes them). Assets are served from their
pre-compressed ``.br``/``.gz`` copies when the browser accepts them.
"""

from __future__ import annotations

import functools
import html
import mimetypes
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

if TYPE_CHECKING:
    from gateway.config import Config
    from gateway.config.model import ControlUiConfig

__all__ = ["DEFAULT_ROOT", "ControlUi", "find_root", "for_config"]

PROJECT = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = Path(".cache/openclaw/cli/node_modules/openclaw/dist/control-ui")
"""Where ``scripts/install-openclaw`` puts the openclaw package, relative to the project."""

_ENCODINGS = (("br", ".br"), ("gzip", ".gz"))
_HTML_TAG = re.compile(r"<html\b", re.IGNORECASE)
_RELATIVE = re.compile(r'(\s(?:src|href))="\./')


def find_root(cfg: ControlUiConfig) -> Path | None:
    """The Control UI folder to serve (one holding ``index.html``), or None when it is off or not installed."""
    if not cfg.enabled:
        return None
    root = Path(cfg.root).expanduser() if cfg.root else PROJECT / DEFAULT_ROOT
    return root.resolve() if (root / "index.html").is_file() else None


class ControlUi:
    """The routes serving one Control UI folder at one base path.

    Args:
        root: the folder (``dist/control-ui``).
        base: the base path, without a trailing slash (``/openclaw``).
        version: our version, reported in ``control-ui-config.json``.
        assistant_name: the default agent's name, for the same file.
    """

    def __init__(self, root: Path, base: str, *, version: str, assistant_name: str) -> None:
        self.root = root
        self.base = base.rstrip("/")
        self.version = version
        self.assistant_name = assistant_name

    @property
    def socket_paths(self) -> frozenset[str]:
        """Where its WebSocket connects: the base path (with or without the slash)."""
        return frozenset({self.base, self.base + "/"})

    @functools.cached_property
    def index_html(self) -> str:
        """``index.html`` as served: base path attribute set, relative links anchored under the base path."""
        text = (self.root / "index.html").read_text(encoding="utf-8")
        attr = f' data-openclaw-control-ui-base-path="{html.escape(self.base)}"'
        text = _HTML_TAG.sub(lambda m: m.group(0) + attr, text, count=1)
        return _RELATIVE.sub(lambda m: f'{m.group(1)}="{self.base}/', text)

    def routes(self) -> list[BaseRoute]:
        return [
            Route(self.base, self._redirect),
            Route(self.base + "/control-ui-config.json", self._config),
            Route(self.base + "/{path:path}", self._serve),
        ]

    async def _redirect(self, _request: Request) -> Response:
        return RedirectResponse(self.base + "/", status_code=302)

    async def _config(self, _request: Request) -> Response:
        """The bootstrap facts the app fetches first (OpenClaw's gateway answers the same path)."""
        body: dict[str, Any] = {"basePath": self.base, "assistantName": self.assistant_name,
                                "serverVersion": self.version, "terminalEnabled": False,
                                "cliAgentsEnabled": True, "communityInvite": False}
        return JSONResponse(body, headers={"Cache-Control": "no-cache"})

    async def _serve(self, request: Request) -> Response:
        rel = request.path_params["path"]
        file = self._file(rel)
        if file is None:
            return HTMLResponse(self.index_html, headers={"Cache-Control": "no-cache", "Referrer-Policy": "no-referrer",
                                                          "X-Content-Type-Options": "nosniff"})
        cache = "public, max-age=31536000, immutable" if rel.startswith("assets/") else "no-cache"
        media = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        accepted = request.headers.get("accept-encoding", "")
        for encoding, suffix in _ENCODINGS:
            packed = file.with_name(file.name + suffix)
            if encoding in accepted and packed.is_file():
                return FileResponse(packed, media_type=media, headers={
                    "Content-Encoding": encoding, "Vary": "Accept-Encoding", "Cache-Control": cache})
        return FileResponse(file, media_type=media, headers={"Cache-Control": cache, "Vary": "Accept-Encoding"})

    def _file(self, rel: str) -> Path | None:
        """The file under the root that ``rel`` names, or None (missing, a folder, ``index.html``, or outside)."""
        if not rel or rel == "index.html" or "\x00" in rel:
            return None
        path = (self.root / rel).resolve()
        if not path.is_relative_to(self.root) or not path.is_file():
            return None
        return path


def for_config(config: Config, version: str) -> ControlUi | None:
    """The Control UI a gateway with ``config`` serves; None when it is off or its files are not found."""
    cfg = config.gateway.controlUi
    root = find_root(cfg)
    if root is None:
        return None
    default = config.agents.default
    name = next((a.name or a.id for a in config.agents.list if a.id == default), default)
    return ControlUi(root, cfg.basePath, version=version, assistant_name=name)
