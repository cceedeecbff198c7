"""A loopback Discord: enough REST and gateway WebSocket for discord.py 2.x to log in and work.

Point discord.py at it with ``discord.http.Route.BASE = fake.api_base`` and
``DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(fake.gateway_url)`` (our channel does that from its
``apiBase``/``gatewayUrl`` config). The fake records every REST request (``requests``), keeps the
messages it was asked to create, answers unknown channels and messages with Discord's 404 errors,
and lets a test push gateway events (``dispatch``) such as ``MESSAGE_CREATE``. A message made with
``message_payload`` and never dispatched is one that arrived while the bot was away: it is only in the
channel's history (``GET /channels/{id}/messages?after=``, newest first as Discord answers), and
``GET /channels/{id}`` describes a channel as ``fetch_channel`` expects.

Failure modes a test can switch on: ``rate_limit(n)`` answers the next ``n`` REST calls with a 429 and a
``retry_after``, as Discord does; ``outage(seconds, status)`` answers every message post with a 429 or a 5xx
for a while (each refused post is recorded with its ``status``); ``forbidden`` channels answer 403 Missing
Permissions; ``drop_gateway()`` closes the gateway socket the way Discord does on a server restart, and
events dispatched while the bot is away are replayed when it RESUMEs with its last sequence number.

Buttons: a message sent with components keeps them (``buttons(message_id)`` lists ``(label, custom_id)``;
an edit with ``components: []`` takes them away); ``press`` dispatches the ``INTERACTION_CREATE`` of a
click by a given user (in the guild or a DM), and the bot's answer to it (``POST
/interactions/{id}/{token}/callback``, no bot token needed, as on Discord) is kept in ``callbacks``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import WSMsgType, web

from tests.support.gateway_proc import GatewayProcess

__all__ = ["FakeDiscord", "Recorded", "discord_gateway", "module_fake"]

DISCORD_EPOCH_MS = 1420070400000
_counter = itertools.count(1)


def snowflake() -> str:
    """A fresh id that decodes to 'now' (discord.py reads message age from ids)."""
    return str(((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22) | (next(_counter) & 0xFFF))


def _now_iso() -> str:
    return datetime.now(UTC).isoformat()


def user(uid: str, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {"id": uid, "username": name, "discriminator": "0", "global_name": name, "avatar": None, "bot": bot,
            "public_flags": 0}


def _json(data: Any, status: int = 200) -> web.Response:
    # discord.py decodes a body only when Content-Type is exactly application/json (no charset).
    return web.Response(body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"})


@dataclass
class Recorded:
    method: str
    path: str
    json: Any = None
    form: dict[str, Any] = field(default_factory=dict)
    files: list[tuple[str, bytes]] = field(default_factory=list)
    query: dict[str, str] = field(default_factory=dict)
    status: int = 200  # what the fake answered (429/5xx during an ``outage``)
    t: float = field(default_factory=time.monotonic)  # when it came in


def module_fake() -> Any:
    """A module-scoped ``fake`` fixture: one loopback Discord for a test module (``fake = module_fake()``)."""
    @pytest.fixture(scope="module")
    async def fake() -> AsyncIterator[FakeDiscord]:
        server = await FakeDiscord().start()
        yield server
        await server.stop()
    return fake


@contextlib.asynccontextmanager
async def discord_gateway(fake: FakeDiscord, state_dir: Path, config: dict[str, Any],
                          env: dict[str, str] | None = None) -> AsyncIterator[GatewayProcess]:
    """A running gateway with ``config``, handed over once its bot has identified at ``fake``."""
    proc = GatewayProcess(state_dir, config=config, env=env)
    await asyncio.to_thread(proc.start)
    try:
        await asyncio.wait_for(fake.identified.wait(), 20)
        yield proc
    finally:
        await asyncio.to_thread(proc.stop)


class FakeDiscord:
    """The far side. ``guild``/``text_channel``/``thread`` ids are fixed per instance for tests to use."""

    def __init__(self, *, token: str = "fake-bot-token") -> None:
        self.token = token
        self.bot = user(snowflake(), "remoteclaw-bot", bot=True)
        self.app_id = snowflake()
        self.guild_id = snowflake()
        self.text_channel_id = snowflake()
        self.thread_id = snowflake()
        self.dm_channels: dict[str, str] = {}  # user id -> DM channel id
        self.channels: set[str] = {self.text_channel_id, self.thread_id}
        self.messages: dict[str, dict[str, Any]] = {}
        self.reactions: dict[str, set[str]] = {}
        self.pins: set[str] = set()
        self.cdn: dict[str, bytes] = {}  # attachment id -> bytes of inbound attachments, served like Discord's CDN
        self.cdn_delays: dict[str, float] = {}  # attachment id -> seconds its download takes
        self.requests: list[Recorded] = []
        self.identified = asyncio.Event()
        self.identifies = 0
        self.resumes = 0
        self.forbidden: set[str] = set()
        self.callbacks: dict[str, dict[str, Any]] = {}  # interaction id -> the bot's callback body
        self._rate_limited = 0
        self._retry_after = 0.0
        self._outage: tuple[float, int, float] = (0.0, 200, 0.0)  # (monotonic end, status, retry_after)
        self._sockets: list[web.WebSocketResponse] = []
        self._seq = itertools.count(1)
        self._events: list[dict[str, Any]] = []  # every dispatch, for replay on RESUME
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> FakeDiscord:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/attachments/{channel}/{id}/{name}", self._attachment)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner:
            await self._runner.cleanup()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    def config(self) -> dict[str, Any]:
        """The ``channels.discord`` config block that points our channel here."""
        return {"token": self.token, "apiBase": self.api_base, "gatewayUrl": self.gateway_url}

    # -- what tests use -----------------------------------------------------------------------------

    async def wait_for(self, method: str, path_part: str, timeout: float = 10.0) -> Recorded:
        """The first recorded request matching ``method`` whose path contains ``path_part``."""
        async def find() -> Recorded:
            async with self._changed:
                while True:
                    for r in self.requests:
                        if r.method == method and path_part in r.path:
                            return r
                    await self._changed.wait()
        return await asyncio.wait_for(find(), timeout)

    async def wait_posted(self, channel_id: str, needle: str, timeout: float = 10.0) -> Recorded:
        """The first message the bot posted in ``channel_id`` whose text contains ``needle``."""
        path = f"/channels/{channel_id}/messages"

        def found() -> Recorded | None:
            return next((r for r in self.requests if r.method == "POST" and r.path == path
                         and needle in ((r.json or {}).get("content") or "")), None)

        async def wait() -> Recorded:
            async with self._changed:
                await self._changed.wait_for(lambda: found() is not None)
            rec = found()
            assert rec is not None
            return rec
        return await asyncio.wait_for(wait(), timeout)

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send an event to the connected bot; with none connected it waits for the RESUME replay."""
        frame = {"op": 0, "t": event, "s": next(self._seq), "d": data}
        self._events.append(frame)
        for ws in list(self._sockets):
            await ws.send_str(json.dumps(frame))

    def buttons(self, message_id: str) -> list[tuple[str, str]]:
        """The ``(label, custom_id)`` of every button on one of the bot's messages, row by row."""
        rows = self.messages[message_id].get("components") or []
        return [(b.get("label", ""), b.get("custom_id", "")) for row in rows for b in row.get("components", [])]

    async def press(self, message_id: str, custom_id: str, *, user_id: str, user_name: str = "alice",
                    guild: bool = True) -> str:
        """Dispatch the ``INTERACTION_CREATE`` (type 3, a button) of ``user_id`` clicking on one of the bot's
        messages; in the guild the presser comes as a ``member``, in a DM as a ``user``. Answers its id."""
        message = self.messages[message_id]
        iid = snowflake()
        cid = message["channel_id"]
        data: dict[str, Any] = {
            "id": iid, "application_id": self.app_id, "type": 3, "token": f"tok-{iid}", "version": 1,
            "data": {"custom_id": custom_id, "component_type": 2}, "channel_id": cid, "channel": self._channel(cid),
            "message": message, "locale": "en-US", "entitlements": [], "attachment_size_limit": 26214400,
            "app_permissions": "1071698660929",
        }
        if guild:
            data.update(guild_id=self.guild_id, guild_locale="en-US", context=0,
                        authorizing_integration_owners={"0": self.guild_id},
                        member={"user": user(user_id, user_name), "roles": [], "joined_at": _now_iso(),
                                "deaf": False, "mute": False, "flags": 0, "nick": None,
                                "permissions": "1071698660929"})
        else:
            data.update(user=user(user_id, user_name), context=1,
                        authorizing_integration_owners={"1": user_id})
        await self.dispatch("INTERACTION_CREATE", data)
        return iid

    async def wait_callback(self, interaction_id: str, timeout: float = 10.0) -> dict[str, Any]:
        """The bot's answer to an interaction (``{"type": 6}`` for a deferred update)."""
        async def wait() -> dict[str, Any]:
            async with self._changed:
                await self._changed.wait_for(lambda: interaction_id in self.callbacks)
            return self.callbacks[interaction_id]
        return await asyncio.wait_for(wait(), timeout)

    def rate_limit(self, count: int, retry_after: float = 0.2) -> None:
        """The next ``count`` REST requests get 429 Too Many Requests with this ``retry_after``."""
        self._rate_limited, self._retry_after = count, retry_after

    def outage(self, seconds: float, status: int = 502, retry_after: float = 1.0) -> None:
        """For ``seconds``, every message post (``POST /channels/{id}/messages``) gets ``status``: a 429 carrying
        ``retry_after``, or a 5xx (Discord's API down for a while)."""
        self._outage = (time.monotonic() + seconds, status, retry_after)

    async def drop_gateway(self, code: int = 4000) -> None:
        """Close the bot's gateway socket with a resumable close code and wait until it is gone."""
        for ws in list(self._sockets):
            await ws.close(code=code, message=b"fake restart")
        for _ in range(100):
            if not self._sockets:
                return
            await asyncio.sleep(0.02)

    async def wait_connected(self, *, resumes: int, timeout: float = 15.0) -> None:
        """Until the bot has RESUMEd ``resumes`` times in all and is connected."""
        async def resumed() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: self.resumes >= resumes and bool(self._sockets))
        await asyncio.wait_for(resumed(), timeout)

    def attachment(self, filename: str, data: bytes, content_type: str) -> dict[str, Any]:
        """An attachment object for ``message_payload``, its bytes downloadable from the fake CDN."""
        aid = snowflake()
        self.cdn[aid] = data
        url = f"http://127.0.0.1:{self.port}/attachments/{self.text_channel_id}/{aid}/{quote(filename)}"
        return {"id": aid, "filename": filename, "size": len(data), "url": url, "proxy_url": url,
                "content_type": content_type}

    def message_payload(self, *, content: str, author_id: str, author_name: str = "alice",
                        channel_id: str | None = None, guild: bool = False, mention_bot: bool = False,
                        reply_to: str | None = None, attachments: list[dict[str, Any]] | None = None,
                        bot_author: bool = False) -> dict[str, Any]:
        """A MESSAGE_CREATE payload as Discord sends it."""
        mid = snowflake()
        data: dict[str, Any] = {
            "id": mid, "channel_id": channel_id or self.text_channel_id, "type": 0 if not reply_to else 19,
            "author": user(author_id, author_name, bot=bot_author), "content": content, "timestamp": _now_iso(),
            "edited_timestamp": None, "tts": False, "mention_everyone": False,
            "mentions": [self.bot] if mention_bot else [], "mention_roles": [], "attachments": attachments or [],
            "embeds": [], "pinned": False, "flags": 0,
        }
        if guild:
            data["guild_id"] = self.guild_id
            data["member"] = {"roles": [], "joined_at": _now_iso(), "deaf": False, "mute": False, "flags": 0}
        if reply_to:
            data["message_reference"] = {"message_id": reply_to, "channel_id": data["channel_id"]}
            if reply_to in self.messages:
                data["referenced_message"] = self.messages[reply_to]
        self.messages[mid] = data
        self.channels.add(data["channel_id"])
        return data

    # -- gateway ------------------------------------------------------------------------------------

    def _guild_create(self) -> dict[str, Any]:
        gid = self.guild_id
        return {
            "id": gid, "name": "Test Guild", "icon": None, "owner_id": self.bot["id"], "features": [],
            "member_count": 2, "large": False, "unavailable": False, "joined_at": _now_iso(),
            "roles": [{"id": gid, "name": "@everyone", "permissions": "1071698660929", "position": 0, "color": 0,
                       "hoist": False, "managed": False, "mentionable": False, "flags": 0}],
            "emojis": [], "stickers": [], "members": [], "voice_states": [], "presences": [],
            "channels": [{"id": self.text_channel_id, "type": 0, "guild_id": gid, "name": "general",
                          "position": 0, "permission_overwrites": [], "nsfw": False, "parent_id": None,
                          "topic": None, "last_message_id": None, "rate_limit_per_user": 0}],
            "threads": [{"id": self.thread_id, "type": 11, "guild_id": gid, "parent_id": self.text_channel_id,
                         "owner_id": self.bot["id"], "name": "a thread", "message_count": 0, "member_count": 1,
                         "rate_limit_per_user": 0, "flags": 0, "last_message_id": None,
                         "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                                             "archive_timestamp": _now_iso(), "locked": False}}],
        }

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None}))
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                op = frame.get("op")
                if op == 1:
                    await ws.send_str(json.dumps({"op": 11, "d": None, "s": None, "t": None}))
                elif op == 2:
                    self.identifies += 1
                    await self._ready(ws)
                elif op == 6:
                    await self._resume(ws, frame["d"])
        finally:
            self._sockets.remove(ws)
        return ws

    async def _ready(self, ws: web.WebSocketResponse) -> None:
        ready = {
            "v": 10, "user": self.bot, "guilds": [{"id": self.guild_id, "unavailable": True}],
            "session_id": "fake-session", "resume_gateway_url": self.gateway_url, "private_channels": [],
            "relationships": [], "application": {"id": self.app_id, "flags": 0},
        }
        await ws.send_str(json.dumps({"op": 0, "t": "READY", "s": next(self._seq), "d": ready}))
        await ws.send_str(json.dumps({"op": 0, "t": "GUILD_CREATE", "s": next(self._seq),
                                      "d": self._guild_create()}))
        self.identified.set()

    async def _resume(self, ws: web.WebSocketResponse, d: dict[str, Any]) -> None:
        if d.get("token") != self.token or d.get("session_id") != "fake-session":
            await ws.send_str(json.dumps({"op": 9, "d": False, "s": None, "t": None}))  # invalid session
            return
        for frame in self._events:
            if frame["s"] > (d.get("seq") or 0):
                await ws.send_str(json.dumps(frame))
        await ws.send_str(json.dumps({"op": 0, "t": "RESUMED", "s": next(self._seq), "d": {}}))
        async with self._changed:
            self.resumes += 1
            self._changed.notify_all()

    async def _attachment(self, request: web.Request) -> web.Response:
        aid = request.match_info["id"]
        data = self.cdn.get(aid)
        asked = time.monotonic()
        while time.monotonic() - asked < self.cdn_delays.get(aid, 0.0):  # noqa: ASYNC110 - a delay taken back ends it
            await asyncio.sleep(0.05)
        return web.Response(body=data) if data is not None else web.Response(status=404)

    # -- REST ---------------------------------------------------------------------------------------

    @staticmethod
    def _error(status: int, message: str, code: int) -> web.Response:
        return _json({"message": message, "code": code}, status=status)

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        rec = Recorded(request.method, path, query=dict(request.query))
        if request.content_type == "application/json" and request.can_read_body:
            rec.json = await request.json()
        elif request.content_type.startswith("multipart/"):
            reader = await request.multipart()
            async for part in reader:
                if part.filename:  # type: ignore[union-attr]
                    rec.files.append((part.filename, bytes(await part.read())))  # type: ignore[union-attr]
                else:
                    rec.form[part.name or ""] = (await part.text())  # type: ignore[union-attr]
            if "payload_json" in rec.form:
                rec.json = json.loads(rec.form["payload_json"])
        async with self._changed:
            self.requests.append(rec)
            parts = path.strip("/").split("/")
            if len(parts) == 4 and parts[0] == "interactions" and parts[3] == "callback" and request.method == "POST":
                # Interaction callbacks are authorised by the interaction's token, not the bot's.
                if parts[2] != f"tok-{parts[1]}":
                    return self._error(401, "Invalid interaction token", 50027)
                self.callbacks[parts[1]] = rec.json or {}
                self._changed.notify_all()
                return _json({"interaction": {"id": parts[1], "type": 3, "response_message_loading": False,
                                              "response_message_ephemeral": False},
                              "resource": {"type": (rec.json or {}).get("type", 6)}})
            self._changed.notify_all()
        if request.headers.get("Authorization") != f"Bot {self.token}":
            return self._error(401, "401: Unauthorized", 0)
        end, status, outage_wait = self._outage
        refused = (time.monotonic() < end and request.method == "POST" and path.startswith("/channels/")
                   and path.endswith("/messages"))
        if refused and status != 429:
            rec.status = status
            return web.Response(status=status, text="<html><body>502 Bad Gateway</body></html>",
                                content_type="text/html")
        if self._rate_limited > 0 or refused:
            if refused:
                rec.status = 429
            else:
                self._rate_limited -= 1
            wait = outage_wait if refused else self._retry_after
            return web.Response(
                status=429, headers={"Content-Type": "application/json", "Retry-After": str(wait), "Via": "1.1 google",
                                     "X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0",
                                     "X-RateLimit-Reset-After": str(wait), "X-RateLimit-Bucket": "fake-bucket",
                                     "X-RateLimit-Scope": "user"},
                body=json.dumps({"message": "You are being rate limited.", "retry_after": wait,
                                 "global": False}).encode())
        return self._route(rec)

    def _route(self, rec: Recorded) -> web.StreamResponse:
        parts = rec.path.strip("/").split("/")
        m = rec.method
        if parts == ["users", "@me"] and m == "GET":
            return _json(self.bot)
        if parts == ["oauth2", "applications", "@me"]:
            return _json({"id": self.app_id, "name": "remoteclaw", "icon": None, "description": "",
                                      "bot_public": True, "bot_require_code_grant": False, "verify_key": "00",
                                      "owner": user(snowflake(), "owner"), "flags": 0})
        if parts == ["users", "@me", "channels"] and m == "POST":
            uid = str(rec.json["recipient_id"])
            cid = self.dm_channels.setdefault(uid, snowflake())
            self.channels.add(cid)
            return _json({"id": cid, "type": 1, "last_message_id": None,
                                      "recipients": [user(uid, "someone")]})
        if len(parts) < 2 or parts[0] != "channels":
            return self._error(404, "404: Not Found", 0)
        cid = parts[1]
        if cid not in self.channels:
            return self._error(404, "Unknown Channel", 10003)
        if cid in self.forbidden:
            return self._error(403, "Missing Permissions", 50013)
        rest = parts[2:]
        if rest == [] and m == "GET":
            return _json(self._channel(cid))
        if rest == ["messages"] and m == "GET":
            return _json(self._history(cid, rec.query))
        if rest == ["typing"]:
            return web.Response(status=204)
        if rest == ["messages"] and m == "POST":
            return _json(self._create_message(cid, rec))
        if len(rest) >= 2 and rest[0] == "messages" and rest[1] != "pins":
            mid = rest[1]
            if mid not in self.messages:
                return self._error(404, "Unknown Message", 10008)
            if len(rest) == 2 and m == "GET":
                return _json(self._with_reactions(mid))
            if len(rest) == 2 and m == "PATCH":
                body = rec.json or {}
                self.messages[mid] = {**self.messages[mid], "content": body.get("content", ""),
                                      "edited_timestamp": _now_iso()}
                if "components" in body:
                    self.messages[mid]["components"] = body["components"]
                return _json(self.messages[mid])
            if len(rest) == 2 and m == "DELETE":
                del self.messages[mid]
                return web.Response(status=204)
            if len(rest) == 5 and rest[2] == "reactions" and rest[4] == "@me":
                mine = self.reactions.setdefault(mid, set())
                (mine.add if m == "PUT" else mine.discard)(rest[3])
                return web.Response(status=204)
        if len(rest) == 3 and rest[:2] == ["messages", "pins"] and m == "PUT":
            if rest[2] not in self.messages:
                return self._error(404, "Unknown Message", 10008)
            self.pins.add(rest[2])
            return web.Response(status=204)
        return self._error(404, "404: Not Found", 0)

    def _channel(self, cid: str) -> dict[str, Any]:
        """A channel object: the guild's text channel or thread, else a DM channel."""
        guild = self._guild_create()
        for known in (*guild["channels"], *guild["threads"]):
            if known["id"] == cid:
                return known
        uid = next((u for u, c in self.dm_channels.items() if c == cid), snowflake())
        return {"id": cid, "type": 1, "last_message_id": None, "recipients": [user(uid, "someone")]}

    def _history(self, cid: str, query: dict[str, str]) -> list[dict[str, Any]]:
        """``GET /channels/{id}/messages``: newest first; ``after`` keeps the newer ones (as Discord does, the
        ``limit`` messages right after it); REST message objects carry no ``guild_id`` or ``member``."""
        after = int(query.get("after") or 0)
        limit = min(int(query.get("limit") or 50), 100)
        newer = sorted((m for m in self.messages.values() if m["channel_id"] == cid and int(m["id"]) > after),
                       key=lambda m: int(m["id"]))[:limit]
        return [{k: v for k, v in m.items() if k not in ("guild_id", "member")} for m in reversed(newer)]

    def _create_message(self, cid: str, rec: Recorded) -> dict[str, Any]:
        body = rec.json or {}
        mid = snowflake()
        data = {
            "id": mid, "channel_id": cid, "type": 19 if body.get("message_reference") else 0,
            "author": self.bot, "content": body.get("content") or "", "timestamp": _now_iso(),
            "edited_timestamp": None, "tts": False, "mention_everyone": False, "mentions": [],
            "mention_roles": [], "embeds": [], "pinned": False, "flags": 0,
            "attachments": [{"id": snowflake(), "filename": name, "size": len(blob), "url": f"http://127.0.0.1/{name}",
                             "proxy_url": f"http://127.0.0.1/{name}"} for name, blob in rec.files],
        }
        if body.get("message_reference"):
            data["message_reference"] = body["message_reference"]
        if body.get("components"):
            data["components"] = body["components"]
        self.messages[mid] = data
        return data

    def _with_reactions(self, mid: str) -> dict[str, Any]:
        data = dict(self.messages[mid])
        data["reactions"] = [{"emoji": {"id": None, "name": e}, "count": 1, "me": True,
                              "count_details": {"burst": 0, "normal": 1}, "burst_colors": [], "me_burst": False,
                              "burst_me": False} for e in sorted(self.reactions.get(mid, ()))]
        return data
