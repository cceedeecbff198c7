"""A loopback Slack: the Web API methods slack-sdk calls, the file upload and download URLs, and Socket Mode.

Point our channel at it with ``apiBase`` (``fake.config()`` gives the whole ``channels.slack`` block). Every
Web API call is recorded (``calls``: method, the token it carried, its arguments merged from query, form and
JSON); messages the bot posts are kept per conversation (``messages``), with their blocks, so a test can read
the buttons and press one. ``apps.connections.open`` answers a ``ws://`` URL back to this server; envelopes
pushed there (``event``, ``press``) wait for the bot's acknowledgement by ``envelope_id`` (``acked``), as
Slack redelivers unacknowledged ones. For the Events API over HTTP, ``signed`` builds a request the way Slack
signs it (v0 HMAC-SHA256 of ``v0:timestamp:body`` with the signing secret).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import WSMsgType, web

from tests.support.aio_server import serve

__all__ = ["BOT_TOKEN", "SIGNING_SECRET", "Call", "FakeSlack", "module_fake", "signed"]

BOT_TOKEN = "xoxb-fake-bot-token"
APP_TOKEN = "xapp-fake-app-token"
SIGNING_SECRET = "fake-signing-secret-0123"
BOT_USER = "UBOT0001"
BOT_ID = "BBOT0001"
_ts_counter = itertools.count(1)


def new_ts() -> str:
    """A fresh, increasing Slack message timestamp."""
    return f"{int(time.time())}.{next(_ts_counter):06d}"


def signed(body: bytes, secret: str = SIGNING_SECRET, *, at: int | None = None) -> dict[str, str]:
    """The signature headers Slack adds to a request carrying ``body``."""
    stamp = str(at if at is not None else int(time.time()))
    digest = hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


@dataclass
class Call:
    method: str
    token: str
    args: dict[str, Any]


def module_fake() -> Any:
    """A module-scoped ``fake`` fixture: one loopback Slack for a test module."""

    @pytest.fixture(scope="module")
    async def fake() -> AsyncIterator[FakeSlack]:
        server = await FakeSlack().start()
        yield server
        await server.stop()

    return fake


class FakeSlack:
    """The far side: one workspace, one bot, conversations made up on use."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.messages: dict[str, list[dict[str, Any]]] = {}  # conversation id -> messages, oldest first
        self.reactions: dict[tuple[str, str], list[str]] = {}
        self.pins: set[tuple[str, str]] = set()
        self.uploads: dict[str, dict[str, Any]] = {}  # file id -> {"name", "length", "data"}
        self.served: dict[str, tuple[bytes, str]] = {}  # file id -> (bytes, mime) for inbound files
        self.downloads: list[tuple[str, str]] = []  # (file id, Authorization header) of each download
        self.acked: set[str] = set()
        self.connections = 0
        self.users: dict[str, str] = {}  # user id -> name
        self.limited = 0  # how many of the next bot-token calls are answered 429 ratelimited
        self._sockets: list[web.WebSocketResponse] = []
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> FakeSlack:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/socket", self._socket)
        app.router.add_post("/upload/{id}", self._upload)
        app.router.add_get("/files/{id}/{name}", self._file)
        app.router.add_route("*", "/api/{method}", self._api)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        await self.drop()
        if self._runner:
            await self._runner.cleanup()

    async def drop(self) -> None:
        """Close the Socket Mode connections, as Slack does when it moves a connection (the bot reconnects)."""
        for ws in list(self._sockets):
            await ws.close()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self, *, socket: bool = True) -> dict[str, Any]:
        """The ``channels.slack`` block: Socket Mode (app token) or the Events API over HTTP (signing secret)."""
        mode = {"appToken": APP_TOKEN} if socket else {"signingSecret": SIGNING_SECRET}
        return {"botToken": BOT_TOKEN, "apiBase": f"{self.base}/api/", **mode}

    # -- what tests use -----------------------------------------------------------------------------

    async def until(self, found: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
        """Wait until ``found()`` gives something truthy, as calls and messages arrive."""
        async def wait() -> Any:
            async with self._changed:
                while not (got := found()):
                    await self._changed.wait()
                return got
        try:
            return await asyncio.wait_for(wait(), timeout)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}; last calls: {self.calls[-6:]}") from None

    async def posted(self, channel: str, needle: str, timeout: float = 20.0) -> dict[str, Any]:
        """The first message the bot posted in ``channel`` whose text contains ``needle``."""
        return await self.until(
            lambda: next((m for m in self.messages.get(channel, []) if m.get("user") == BOT_USER
                          and needle in m.get("text", "")), None),
            f"a bot message with {needle!r} in {channel}", timeout)

    async def called(self, method: str, match: Callable[[dict[str, Any]], bool] = lambda a: True,
                     timeout: float = 20.0) -> Call:
        return await self.until(lambda: next((c for c in self.calls if c.method == method and match(c.args)), None),
                                f"a {method} call", timeout)

    def buttons(self, channel: str, ts: str) -> list[tuple[str, str]]:
        """(label, value) of the buttons on one of the bot's messages, as it is now."""
        msg = next(m for m in self.messages[channel] if m["ts"] == ts)
        return [(e["text"]["text"], e["value"]) for b in msg.get("blocks") or [] if b.get("type") == "actions"
                for e in b["elements"]]

    def message(self, channel: str, user: str, text: str, *, thread_ts: str | None = None,
                files: list[dict[str, Any]] | None = None, kind: str = "message") -> dict[str, Any]:
        """An ``event_callback`` body for a person's message (kept in the conversation, as Slack would)."""
        ts = new_ts()
        event: dict[str, Any] = {"type": kind, "channel": channel, "user": user, "text": text, "ts": ts,
                                 "event_ts": ts, "team": "TFAKE"}
        if kind == "message":
            event["channel_type"] = "im" if channel.startswith("D") else "channel"
        if thread_ts:
            event["thread_ts"] = thread_ts
        if files:
            event["files"], event["subtype"] = files, "file_share"
        self.messages.setdefault(channel, []).append(dict(event))
        return {"type": "event_callback", "team_id": "TFAKE", "api_app_id": "AFAKE", "event": event,
                "event_id": f"Ev{uuid.uuid4().hex[:10].upper()}", "event_time": int(time.time())}

    def mention_twin(self, channel: str, ts: str) -> dict[str, Any]:
        """The ``app_mention`` event Slack sends beside the ``message`` event of a message mentioning the bot."""
        said = next(m for m in self.messages[channel] if m["ts"] == ts)
        event = {k: v for k, v in said.items() if k != "channel_type"} | {"type": "app_mention"}
        return {"type": "event_callback", "team_id": "TFAKE", "api_app_id": "AFAKE", "event": event,
                "event_id": f"Ev{uuid.uuid4().hex[:10].upper()}", "event_time": int(time.time())}

    def file(self, data: bytes, name: str, mime: str, **extra: Any) -> dict[str, Any]:
        """A shared file's description, its bytes served at its ``url_private`` (bot token required)."""
        fid = f"F{uuid.uuid4().hex[:10].upper()}"
        self.served[fid] = (data, mime)
        url = f"{self.base}/files/{fid}/{name}"
        return {"id": fid, "name": name, "title": name, "mimetype": mime, "size": len(data),
                "url_private": url, "url_private_download": url, **extra}

    def block_actions(self, channel: str, ts: str, value: str, *, user: str, name: str = "alice") -> dict[str, Any]:
        """The ``block_actions`` payload of ``user`` pressing the button with ``value`` on message ``ts``."""
        msg: dict[str, Any] = next((m for m in self.messages.get(channel, []) if m["ts"] == ts), {"ts": ts})
        container: dict[str, Any] = {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": False}
        if msg.get("thread_ts"):
            container["thread_ts"] = msg["thread_ts"]
        elements = [e for b in msg.get("blocks") or [] if b.get("type") == "actions" for e in b["elements"]]
        action: dict[str, Any] = next((e for e in elements if e.get("value") == value), {"action_id": "x"})
        return {"type": "block_actions", "user": {"id": user, "username": name, "name": name, "team_id": "TFAKE"},
                "api_app_id": "AFAKE", "trigger_id": uuid.uuid4().hex, "container": container,
                "channel": {"id": channel, "name": "directmessage" if channel.startswith("D") else "general"},
                "message": msg, "actions": [{**action, "type": "button", "value": value, "action_ts": new_ts()}]}

    async def push(self, kind: str, payload: dict[str, Any], timeout: float = 20.0) -> str:
        """Send an envelope over Socket Mode and wait for the bot's acknowledgement; its ``envelope_id``."""
        envelope_id = str(uuid.uuid4())
        await self.until(lambda: self._sockets, "the bot's Socket Mode connection", timeout)
        frame = {"envelope_id": envelope_id, "type": kind, "payload": payload, "accepts_response_payload": False,
                 "retry_attempt": 0, "retry_reason": ""}
        await self._sockets[-1].send_str(json.dumps(frame))
        await self.until(lambda: envelope_id in self.acked, f"the ack of envelope {envelope_id}", timeout)
        return envelope_id

    async def say(self, channel: str, user: str, text: str, **kw: Any) -> str:
        """A person's message delivered over Socket Mode; its ts."""
        body = self.message(channel, user, text, **kw)
        await self.push("events_api", body)
        return str(body["event"]["ts"])

    async def press(self, channel: str, ts: str, value: str, *, user: str) -> None:
        await self.push("interactive", self.block_actions(channel, ts, value, user=user))

    # -- the wire ---------------------------------------------------------------------------------------

    async def _changed_now(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.append(ws)
        self.connections += 1
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1,
                                      "connection_info": {"app_id": "AFAKE"}}))
        await self._changed_now()
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    with_id = json.loads(msg.data)
                    if with_id.get("envelope_id"):
                        self.acked.add(with_id["envelope_id"])
                        await self._changed_now()
        finally:
            self._sockets.remove(ws)
        return ws

    async def _upload(self, request: web.Request) -> web.Response:
        fid = request.match_info["id"]
        if fid not in self.uploads:
            return web.Response(status=404, text="no such upload")
        data = await request.read()
        self.uploads[fid]["data"] = data
        await self._changed_now()
        return web.Response(text=f"OK - {len(data)}")

    async def _file(self, request: web.Request) -> web.Response:
        fid = request.match_info["id"]
        auth = request.headers.get("Authorization", "")
        self.downloads.append((fid, auth))
        if auth != f"Bearer {BOT_TOKEN}" or fid not in self.served:
            return web.Response(status=404 if fid not in self.served else 403, text="not for you")
        data, mime = self.served[fid]
        return web.Response(body=data, content_type=mime)

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: dict[str, Any] = dict(request.query)
        if request.body_exists:
            if request.content_type == "application/json":
                args.update(await request.json())
            else:
                args.update(await request.post())
        for key in ("blocks", "files", "users"):  # form-encoded calls carry these as JSON text
            if isinstance(args.get(key), str) and args[key][:1] in "[{":
                args[key] = json.loads(args[key])
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self.calls.append(Call(method, token, args))
        if self.limited > 0 and token == BOT_TOKEN:
            self.limited -= 1
            await self._changed_now()
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": "2"})
        try:
            result = self._route(method, token, args)
        finally:
            await self._changed_now()
        return web.json_response(result)

    def _route(self, method: str, token: str, a: dict[str, Any]) -> dict[str, Any]:
        if method == "apps.connections.open":
            if token != APP_TOKEN:
                return {"ok": False, "error": "invalid_auth"}
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket?ticket={uuid.uuid4().hex}"}
        if token != BOT_TOKEN:
            return {"ok": False, "error": "invalid_auth"}
        if method == "auth.test":
            return {"ok": True, "url": "https://fake.slack.com/", "team": "Fake", "user": "rcbot",
                    "team_id": "TFAKE", "user_id": BOT_USER, "bot_id": BOT_ID}
        if method == "users.info":
            uid = str(a.get("user"))
            name = self.users.get(uid, uid.lower())
            return {"ok": True, "user": {"id": uid, "name": name, "real_name": name.title(),
                                         "profile": {"display_name": name}}}
        if method == "conversations.open":
            users = a.get("users")
            uid = users[0] if isinstance(users, list) else str(users).split(",")[0]
            return {"ok": True, "channel": {"id": "D" + uid[1:]}}
        channel = str(a.get("channel") or a.get("channel_id") or "")
        if channel.startswith("CGONE"):
            return {"ok": False, "error": "channel_not_found"}
        msgs = self.messages.setdefault(channel, []) if channel else []
        if method == "chat.postMessage":
            msg = {"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "text": a.get("text", ""), "ts": new_ts(),
                   "channel": channel}
            for key in ("thread_ts", "blocks"):
                if a.get(key):
                    msg[key] = a[key]
            msgs.append(msg)
            return {"ok": True, "channel": channel, "ts": msg["ts"], "message": msg}
        found = next((m for m in msgs if m["ts"] == a.get("ts", a.get("timestamp"))), None)
        if method in ("chat.update", "chat.delete", "reactions.add", "reactions.remove", "pins.add") and not found:
            return {"ok": False, "error": "message_not_found"}
        if method == "chat.update":
            assert found is not None
            found["text"] = a.get("text", found["text"])
            if "blocks" in a:
                found["blocks"] = a["blocks"]
            found["edited"] = {"user": BOT_USER}
            return {"ok": True, "channel": channel, "ts": found["ts"], "text": found["text"]}
        if method == "chat.delete":
            assert found is not None
            msgs.remove(found)
            return {"ok": True, "channel": channel, "ts": a["ts"]}
        if method == "reactions.add":
            names = self.reactions.setdefault((channel, str(a["timestamp"])), [])
            if a["name"] in names:
                return {"ok": False, "error": "already_reacted"}
            names.append(str(a["name"]))
            return {"ok": True}
        if method == "reactions.remove":
            self.reactions.get((channel, str(a["timestamp"])), []).remove(str(a["name"]))
            return {"ok": True}
        if method == "pins.add":
            self.pins.add((channel, str(a["timestamp"])))
            return {"ok": True}
        if method == "conversations.history":
            top = [m for m in msgs if not m.get("thread_ts") or m["thread_ts"] == m["ts"]]
            return {"ok": True, "messages": list(reversed(top))[: int(a.get("limit") or 100)], "has_more": False}
        if method == "conversations.replies":
            root = str(a.get("ts"))
            thread = [m for m in msgs if m["ts"] == root or m.get("thread_ts") == root]
            return {"ok": True, "messages": thread[: int(a.get("limit") or 100)], "has_more": False}
        if method == "files.getUploadURLExternal":
            fid = f"F{uuid.uuid4().hex[:10].upper()}"
            self.uploads[fid] = {"name": a.get("filename"), "length": int(a.get("length") or 0), "data": None}
            return {"ok": True, "upload_url": f"{self.base}/upload/{fid}", "file_id": fid}
        if method == "files.completeUploadExternal":
            files = a.get("files") or []
            out = []
            for f in files:
                up = self.uploads.get(f["id"])
                if up is None or up["data"] is None:
                    return {"ok": False, "error": "file_not_found"}
                up.update(channel=channel, comment=a.get("initial_comment"), thread_ts=a.get("thread_ts"))
                ts = new_ts()
                msgs.append({"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "ts": ts, "subtype": "file_share",
                             "text": a.get("initial_comment") or "", "files": [{"id": f["id"], "name": up["name"]}],
                             **({"thread_ts": a["thread_ts"]} if a.get("thread_ts") else {})})
                out.append({"id": f["id"], "name": up["name"], "title": f.get("title"),
                            "shares": {"private" if channel.startswith("D") else "public": {channel: [{"ts": ts}]}}})
            return {"ok": True, "files": out}
        return {"ok": False, "error": "unknown_method"}
