"""A trajectory as a web page: turn by turn, the action, its result and the screenshots after it.

``GET /__remoteclaw__/desktop/trajectories/<viewKey>/`` and the pictures under it. The address carries 128
random bits and is handed only to the owner (method answers, the ``/record`` reply), but it is no authorization
of its own: the request presents a credential (``Authorization: Bearer``, or ``?token=`` for a browser opening
the link) and is served only when its principal may read the recorded session (``gateway.access.http``). The
page's pictures carry the same ``?token=`` on, so they load. The page has no script and every answer forbids one
(``content-security-policy``).
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from gateway.access.http import request_token

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from starlette.requests import Request

    from gateway.config import Config
    from gateway.desktop.trajectories import TrajectoryStore

__all__ = ["PAGES_PATH", "page_url", "routes", "set_listen"]

PAGES_PATH = "/__remoteclaw__/desktop/trajectories"
_HEADERS = {"content-security-policy": "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox",
            "x-content-type-options": "nosniff", "cache-control": "private, no-store", "referrer-policy": "no-referrer"}
_TURN = re.compile(r"^turn-\d{1,8}$")
_IMAGE = re.compile(r"^[a-z_]{1,40}\.png$")
_listen: Callable[[], tuple[str, int]] | None = None


def set_listen(listen: Callable[[], tuple[str, int]]) -> None:
    global _listen
    _listen = listen


def page_url(config: Config, view_key: str) -> str:
    """The page's address: under ``gateway.publicUrl`` when set, else the address the gateway listens on."""
    base = (config.gateway.publicUrl or "").rstrip("/")
    if not base and _listen is not None:
        host, port = _listen()
        base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '', '::') else host}:{port}"
    return f"{base}{PAGES_PATH}/{view_key}/"


def _render(meta: dict[str, Any], token: str | None) -> str:
    e = html.escape
    key = meta["viewKey"]
    carry = f"?token={quote(token, safe='')}" if token else ""
    rows = []
    for turn in meta.get("turns") or []:
        images = "".join(f'<figure><img src="{PAGES_PATH}/{key}/{e(turn["turn"])}/{e(name)}{e(carry)}" alt="{e(name)}">'
                         f"<figcaption>{e(name)}</figcaption></figure>"
                         for name in turn.get("images") or [] if name in ("screenshot.png", "click.png", "before.png"))
        status = "failed" if turn.get("error") else "ok"
        rows.append(f'<section><h2>{e(turn["turn"])}: {e(str(turn.get("tool")))} <small>({status})</small></h2>'
                    f"<pre>{e(json.dumps(turn.get('arguments'), indent=1))}</pre>"
                    f"<p>{e(str(turn.get('resultSummary') or ''))}</p><div>{images}</div></section>")
    asked = "".join(f"<li>{e(str(a.get('text')))}</li>" for a in meta.get("asked") or [])
    calls = "".join(f"<li><code>{e(str(c.get('toolName')))}</code>"
                    f"{' ⚠ ' + e(str(c['error'])) if c.get('error') else ''}</li>" for c in meta.get("toolCalls") or [])
    return (f"<!doctype html><html><head><meta charset=utf-8><meta name=viewport content='width=device-width'>"
            f"<title>Trajectory {e(meta['trajectoryId'])}</title><style>body{{font-family:sans-serif;margin:1em;"
            f"max-width:60em}}img{{max-width:100%;border:1px solid #ccc}}figure{{display:inline-block;margin:.3em}}"
            f"pre{{background:#f4f4f4;padding:.4em;overflow:auto}}</style></head><body>"
            f"<h1>Trajectory {e(meta['trajectoryId'])}</h1><p>Node {e(str(meta.get('nodeName')))}, "
            f"{len(meta.get('turns') or [])} turn(s).</p>"
            f"{'<h2>Asked</h2><ul>' + asked + '</ul>' if asked else ''}"
            f"{'<h2>Tools called</h2><ol>' + calls + '</ol>' if calls else ''}"
            f"{''.join(rows) or '<p>No action was recorded.</p>'}</body></html>")


def _refused(status: int) -> Response:
    if status == 401:
        return PlainTextResponse("unauthorized: open the link with ?token=<gateway token or your sign-in>, or send "
                                 "Authorization: Bearer", status_code=401, headers={"www-authenticate": "Bearer"})
    return PlainTextResponse("this trajectory is of a conversation you may not read", status_code=403)


def routes(store: TrajectoryStore, decide: Callable[[Request, str], Awaitable[int]]) -> list[Route]:
    """The page and its pictures; ``decide(request, session_key)``: the access model's answer (200, 401, 403)."""

    async def page(request: Request) -> Response:
        meta = await asyncio.to_thread(store.by_view_key, request.path_params["key"])
        if meta is None:
            return PlainTextResponse("no such trajectory", status_code=404)
        status = await decide(request, str(meta.get("sessionKey") or ""))
        if status != 200:
            return _refused(status)
        return HTMLResponse(_render(meta, request_token(request, query=True)), headers=_HEADERS)

    async def image(request: Request) -> Response:
        meta = await asyncio.to_thread(store.by_view_key, request.path_params["key"])
        turn, name = request.path_params["turn"], request.path_params["name"]
        if meta is None or not _TURN.match(turn) or not _IMAGE.match(name):
            return PlainTextResponse("not found", status_code=404)
        status = await decide(request, str(meta.get("sessionKey") or ""))
        if status != 200:
            return _refused(status)
        folder = store.folder(meta["trajectoryId"])
        path = folder / turn / name if folder is not None else None
        if path is None or not path.is_file():
            return PlainTextResponse("not found", status_code=404)
        return Response(await asyncio.to_thread(path.read_bytes), media_type="image/png", headers=_HEADERS)

    return [Route(PAGES_PATH + "/{key}/", page, methods=["GET"]),
            Route(PAGES_PATH + "/{key}/{turn}/{name}", image, methods=["GET"])]
