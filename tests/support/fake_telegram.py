"""A loopback fake of the Telegram Bot API: the far side for the real python-telegram-bot library.

Serves ``/bot<token>/<method>`` (form-encoded or multipart, as PTB sends) and
``/file/bot<token>/<path>`` in its own thread and event loop, so a test can block (e.g. while the
gateway starts) without stalling the bot's long polls. Tests push updates (``user_message``),
script failures (``fail``), and assert on what the bot did (``calls``, ``wait_call``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.asgi_thread import ThreadedServer
from tests.support.gateway_proc import GatewayProcess, free_port

BOT_ID = 7000001
BOT_USERNAME = "remoteclaw_test_bot"
TOKEN = f"{BOT_ID}:AAFakeTokenForLoopbackTestsOnly"
FAKE_CLI = str(Path(__file__).resolve().parent / "fake_cli.py")


def module_fake() -> Any:
    """A module-scoped ``fake`` fixture: one loopback Bot API for a test module.

    In the module: ``fake = module_fake()``; tests then take ``fake: FakeTelegram``.
    """
    @pytest.fixture(scope="module")
    def fake() -> Iterator[FakeTelegram]:
        server = FakeTelegram().start()
        yield server
        server.stop()
    return fake


def module_gateway(**channel: Any) -> Any:
    """A module-scoped ``gw`` fixture: a gateway whose Telegram bot talks to the module's ``fake``.

    In the module: ``gw = module_gateway(ownerAllowFrom=[111])``; the keywords go to ``telegram_gateway``.
    """
    @pytest.fixture(scope="module")
    def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram) -> Iterator[GatewayProcess]:
        with telegram_gateway(tmp_path_factory.mktemp("tg") / "gw", fake, **channel) as proc:
            yield proc
    return gw


def telegram_gateway(state_dir: Path, fake: FakeTelegram, *, channels: dict[str, Any] | None = None,
                     config: dict[str, Any] | None = None, env: dict[str, str] | None = None,
                     **telegram: Any) -> GatewayProcess:
    """A (not yet started) gateway whose Telegram bot talks to ``fake`` and whose agent is the stand-in CLI.

    The CLI appends each run's argv, prompt and ``REMOTECLAW_*`` env to ``<state_dir>/cli.log``; ``env`` adds
    to the gateway's (and so the CLI's) environment.
    """
    cfg = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
           "channels": {**(channels or {}), "telegram": fake.channel_config(**telegram)}}
    cfg.update(config or {})  # other top-level sections (e.g. "session")
    proc = GatewayProcess(state_dir, config=cfg, env={"FAKE_CLI_LOG": str(state_dir / "cli.log"), **(env or {})})
    return proc


def cli_runs(state_dir: Path) -> list[dict[str, Any]]:
    """Every run of the stand-in CLI so far: ``{argv, prompt, env}``."""
    path = state_dir / "cli.log"
    return [orjson.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def files_named_in(prompt: str, state_dir: Path) -> list[bytes]:
    """The contents of the saved files a prompt points the agent at (paths relative to its workspace)."""
    names = {Path(word.strip("[]")).name for word in prompt.split() if "/" in word}
    return [p.read_bytes() for p in state_dir.rglob("*") if p.name in names and p.is_file()]


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    result: Any = None  # what the fake answered (e.g. the sent message, with its message_id)
    t: float = field(default_factory=time.monotonic)  # when it came in


class FakeTelegram:
    """The fake server plus the knobs tests turn."""

    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.port = free_port()
        self.calls: list[Call] = []
        self.updates: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.file_delays: dict[str, float] = {}  # file id -> seconds the download takes
        self.missing_chats: set[str] = set()
        self._failures: dict[str, list[dict[str, Any]]] = {}
        self._outages: dict[str, tuple[float, dict[str, Any]]] = {}  # method -> (monotonic end, error body)
        self._update_ids = itertools.count(1)
        self.last_update_id = 0  # of the newest pushed update (``updates`` drops those the bot confirmed)
        self._message_ids = itertools.count(500)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._new_update: asyncio.Event | None = None
        self._server: ThreadedServer | None = None

    # -- addresses for the bot's config ---------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"

    @property
    def file_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/file/bot"

    def channel_config(self, **extra: Any) -> dict[str, Any]:
        return {"botToken": self.token, "apiBaseUrl": self.base_url, "fileBaseUrl": self.file_base_url,
                "pollTimeoutSeconds": 1, **extra}

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> FakeTelegram:
        app = Starlette(routes=[
            Route("/bot{token}/{method}", self._api, methods=["GET", "POST"]),
            Route("/file/bot{token}/{path:path}", self._file, methods=["GET"]),
        ])

        def on_loop(loop: asyncio.AbstractEventLoop) -> None:
            self._loop = loop
            self._new_update = asyncio.Event()

        self._server = ThreadedServer(app, self.port, "fake-telegram", on_loop)
        self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    # -- test knobs -----------------------------------------------------------------------------

    def fail(self, method: str, code: int, description: str, *, retry_after: int | None = None) -> None:
        """Make the next call of ``method`` fail the way the Bot API does."""
        err: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
        if retry_after is not None:
            err["parameters"] = {"retry_after": retry_after}
        self._failures.setdefault(method, []).append(err)

    def outage(self, methods: tuple[str, ...], seconds: float, code: int = 429, *,
               retry_after: int | None = None) -> None:
        """Make every call of ``methods`` fail with ``code`` for the next ``seconds`` (a platform that is down or
        rate-limiting for a while, not just once); 429s carry ``retry_after`` as the Bot API does."""
        err: dict[str, Any] = {"ok": False, "error_code": code,
                               "description": f"Too Many Requests: retry after {retry_after}" if code == 429
                               else "Bad Gateway"}
        if retry_after is not None:
            err["parameters"] = {"retry_after": retry_after}
        until = time.monotonic() + seconds
        for method in methods:
            self._outages[method] = (until, err)

    def push(self, update: dict[str, Any]) -> dict[str, Any]:
        return self.push_many([update])[0]

    def push_many(self, updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Push updates at once (numbered in order): the bot's next ``getUpdates`` gets them all together."""
        numbered = [{"update_id": next(self._update_ids), **u} for u in updates]
        if numbered:
            self.last_update_id = numbered[-1]["update_id"]
        self.updates.extend(numbered)  # one step: a poll answered meanwhile sees none or all of them
        if self._loop is not None and self._new_update is not None:
            self._loop.call_soon_threadsafe(self._new_update.set)
        return numbered

    def user_message(self, *, chat_id: int, user_id: int, text: str = "", chat_type: str = "private",
                     first_name: str = "Ada", thread_id: int | None = None,
                     entities: list[dict[str, Any]] | None = None,
                     reply_to: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
        """Push an update with a message from a user; returns the message object."""
        chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
        if chat_type == "private":
            chat["first_name"] = first_name
        else:
            chat["title"] = "Test group"
            if thread_id is not None:
                chat["is_forum"] = True
        msg: dict[str, Any] = {
            "message_id": next(self._message_ids), "date": int(time.time()), "chat": chat,
            "from": {"id": user_id, "is_bot": False, "first_name": first_name},
        }
        if text:
            msg["text"] = text
        if entities:
            msg["entities"] = entities
        if thread_id is not None:
            msg["message_thread_id"] = thread_id
            msg["is_topic_message"] = True
        if reply_to is not None:
            msg["reply_to_message"] = reply_to
        msg.update(extra)
        self.push({"message": msg})
        return msg

    def press(self, *, message: dict[str, Any], user_id: int, data: str, first_name: str = "Ada") -> dict[str, Any]:
        """Push a ``callback_query``: ``user_id`` pressed the inline button with ``data`` under the bot's
        ``message`` (the ``result`` of its ``sendMessage`` call)."""
        query = {"id": f"cb{next(self._message_ids)}", "chat_instance": "ci1", "data": data, "message": message,
                 "from": {"id": user_id, "is_bot": False, "first_name": first_name}}
        self.push({"callback_query": query})
        return query

    @staticmethod
    def buttons(call: Call) -> list[tuple[str, str]]:
        """The inline keyboard a ``sendMessage`` call carried: ``(label, callback_data)`` in order."""
        markup = call.params.get("reply_markup")
        markup = json.loads(markup) if isinstance(markup, str) else markup or {}
        return [(b["text"], b["callback_data"]) for row in markup.get("inline_keyboard", []) for b in row]

    def mention(self, text: str) -> tuple[str, list[dict[str, Any]]]:
        """Text that @mentions the bot, with the entity Telegram would attach."""
        handle = f"@{BOT_USERNAME}"
        full = f"{handle} {text}"
        return full, [{"type": "mention", "offset": 0, "length": len(handle)}]

    def calls_of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    async def wait_call(self, method: str, pred: Any = None, timeout: float = 15.0) -> Call:
        """Wait until the bot made a matching call (``pred(call) -> bool``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for c in list(self.calls):
                if c.method == method and (pred is None or pred(c)):
                    return c
            await asyncio.sleep(0.05)
        seen = [(c.method, c.params) for c in self.calls if c.method != "getUpdates"][-10:]
        raise AssertionError(f"no {method} call matched within {timeout}s; last calls: {seen}")

    async def wait_polling(self, timeout: float = 20.0) -> None:
        await self.wait_call("getUpdates", timeout=timeout)

    # -- the API --------------------------------------------------------------------------------

    async def _params(self, request: Request) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        params: dict[str, Any] = {}
        files: dict[str, dict[str, Any]] = {}
        ctype = request.headers.get("content-type", "")
        if "json" in ctype:
            body = await request.body()
            return (orjson.loads(body) if body else {}), files
        form = await request.form()
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                data = await value.read()
                files[key] = {"filename": value.filename, "size": len(data), "data": data}
                continue
            text = str(value)
            if text[:1] in "[{":
                try:
                    params[key] = orjson.loads(text)
                    continue
                except orjson.JSONDecodeError:
                    pass
            params[key] = text
        for key, value in list(params.items()):
            if isinstance(value, str) and value.startswith("attach://"):
                params[key] = files.get(value[len("attach://"):], value)
        return params, files

    def _message(self, params: dict[str, Any], **content: Any) -> dict[str, Any]:
        chat_id = int(params["chat_id"]) if str(params["chat_id"]).lstrip("-").isdigit() else params["chat_id"]
        msg: dict[str, Any] = {
            "message_id": next(self._message_ids), "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if isinstance(chat_id, int) and chat_id > 0 else "supergroup"},
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "Test Bot", "username": BOT_USERNAME},
            **content,
        }
        if params.get("message_thread_id"):
            msg["message_thread_id"] = int(params["message_thread_id"])
            msg["is_topic_message"] = True
        if params.get("message_effect_id"):
            msg["effect_id"] = params["message_effect_id"]
        return msg

    async def _api(self, request: Request) -> Response:
        if request.path_params["token"] != self.token:
            return JSONResponse({"ok": False, "error_code": 401, "description": "Unauthorized"}, status_code=401)
        method = request.path_params["method"]
        params, files = await self._params(request)
        call = Call(method, params, files)
        self.calls.append(call)
        if self._failures.get(method):
            err = self._failures[method].pop(0)
            return JSONResponse(err, status_code=err["error_code"])
        if method in self._outages and time.monotonic() < self._outages[method][0]:
            err = self._outages[method][1]
            return JSONResponse(err, status_code=err["error_code"])
        if "chat_id" in params and str(params["chat_id"]) in self.missing_chats:
            return JSONResponse({"ok": False, "error_code": 400, "description": "Bad Request: chat not found"},
                                status_code=400)
        call.result = await self._result(method, params, files)
        return JSONResponse({"ok": True, "result": call.result})

    async def _result(self, method: str, params: dict[str, Any], files: dict[str, dict[str, Any]]) -> Any:
        if method == "getMe":
            return {"id": BOT_ID, "is_bot": True, "first_name": "Test Bot", "username": BOT_USERNAME,
                    "can_join_groups": True, "can_read_all_group_messages": False, "supports_inline_queries": False}
        if method == "getUpdates":
            return await self._get_updates(params)
        if method == "sendMessage":
            return self._message(params, text=params["text"])
        if method in ("sendVoice", "sendDocument", "sendPhoto", "sendAudio", "sendVideo"):
            field_name = method[4:].lower()
            upload = files.get(field_name) or params.get(field_name)
            size = upload["size"] if isinstance(upload, dict) else 0
            media: Any = {"file_id": f"F{next(self._message_ids)}", "file_unique_id": "u1",
                                     "file_size": size}
            if field_name == "voice":
                media["duration"] = 1
            if field_name == "photo":
                media = [{**media, "width": 1, "height": 1}]
            if field_name in ("audio", "video"):
                media["duration"] = 1
                if field_name == "video":
                    media.update(width=1, height=1)
            content: dict[str, Any] = {field_name: media}
            if params.get("caption"):
                content["caption"] = params["caption"]
            return self._message(params, **content)
        if method == "getFile":
            fid = params["file_id"]
            return {"file_id": fid, "file_unique_id": f"u-{fid}", "file_size": len(self.files.get(fid, b"")),
                    "file_path": f"files/{fid}.oga"}
        if method in ("setMessageReaction", "deleteMessage", "pinChatMessage", "sendChatAction", "setWebhook",
                      "deleteWebhook", "unpinChatMessage"):
            return True
        if method in ("close", "logOut"):
            return True
        return True

    async def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        if offset > 0:  # as Telegram does: an offset confirms every update before it, which is then gone
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
        deadline = time.monotonic() + timeout
        while True:
            ready = [u for u in self.updates if u["update_id"] >= offset]
            remaining = deadline - time.monotonic()
            if ready or remaining <= 0:
                return ready
            assert self._new_update is not None
            self._new_update.clear()
            try:
                await asyncio.wait_for(self._new_update.wait(), remaining)
            except TimeoutError:
                return []

    async def _file(self, request: Request) -> Response:
        path = request.path_params["path"]
        fid = path.rsplit("/", 1)[-1].split(".", 1)[0]
        if request.path_params["token"] != self.token or fid not in self.files:
            # As Telegram's file server: a JSON error body (python-telegram-bot parses it; an empty one it logs
            # as "Can not load invalid JSON data").
            return JSONResponse({"ok": False, "error_code": 404, "description": "Not Found"}, status_code=404)
        await asyncio.sleep(self.file_delays.get(fid, 0.0))
        return Response(self.files[fid], media_type="application/octet-stream")
