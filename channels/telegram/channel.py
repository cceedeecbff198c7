"""Telegram as a channel, through python-telegram-bot (extra ``telegram``).

One ``TelegramChannel`` is one bot. It receives updates by long polling (default) or by webhook:
Telegram posts to ``<publicUrl>/channels/telegram/<accountId>/webhook`` and we check the
``X-Telegram-Bot-Api-Secret-Token`` header before accepting anything. DMs, groups and forum
topics (``message_thread_id``) come in as ``Inbound``; voice notes, photos and files are
downloaded into the state dir. Outbound: text (4096 characters), replies, topic replies, message
effects (``message_effect_id``, private chats), reactions, delete, pin, files by URL or path.

Bot API failures become our errors: ``chat not found`` and friends -> ``TargetNotFound``, 429 ->
``ChannelUnavailable`` with ``retry_after_ms``, 403 -> ``ChannelForbidden``, network -> retryable
``ChannelUnavailable``. ``apiBaseUrl``/``fileBaseUrl`` point the library elsewhere (tests, proxies).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from channels.base import (
    Capability,
    Channel,
    ChannelError,
    ChannelForbidden,
    ChannelNotLinked,
    ChannelUnavailable,
    Inbound,
    InboundHandler,
    Media,
    Sent,
    TargetNotFound,
)
from channels.environment import ChannelEnvironment
from channels.files import upload_of
from channels.pipeline import Payload
from gateway.extras import MissingExtra
from gateway.platforms import ChatType, FileBytes, MediaKind, chat_commands

try:
    import telegram
    from telegram import error as tg_error
    from telegram.constants import ParseMode
    from telegram.ext import Application

    from channels.telegram.format import to_html  # markdown-it-py comes with the same extra
except ImportError:  # pragma: no cover - exercised only without the extra
    telegram = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["TelegramChannel"]

log = structlog.get_logger("channels.telegram")

_CHAT_TYPES: dict[str, ChatType] = {"private": "dm", "group": "group", "supergroup": "group"}
"""Telegram's chat types in our vocabulary; anything else (a broadcast channel) is ``channel``."""

TEXT_LIMIT = 4096
CAPTION_LIMIT = 1024
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
"""The Bot API will not hand out files bigger than this to bots."""
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
_NOT_FOUND = re.compile(r"not found|chat_id is empty|message_id_invalid|message can't be|invalid .*id|"
                        r"peer_id_invalid|user not found|thread not found", re.IGNORECASE)
_KINDS = {
    ".ogg": "voice", ".oga": "voice", ".opus": "voice",
    ".jpg": "photo", ".jpeg": "photo", ".png": "photo", ".webp": "photo",
    ".mp3": "audio", ".m4a": "audio", ".flac": "audio", ".wav": "audio",
    ".mp4": "video", ".mov": "video",
}


def _chat(to: str) -> int | str:
    """Telegram wants numeric ids as numbers, and accepts ``@channelname``."""
    to = to.strip()
    if re.fullmatch(r"-?\d{1,20}", to):
        return int(to)
    if to.startswith("@") and len(to) > 1:
        return to
    raise TargetNotFound(f"telegram: not a chat id: {to!r} (a number, or @name for public chats)",
                         details={"field": "to", "to": to})


def _int_id(value: str, field: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ChannelError(f"telegram: {field} must be a number, got {value!r}", details={"field": field}) from None


def _entity_texts(msg: telegram.Message) -> list[tuple[telegram.MessageEntity, str]]:
    """The message's (or caption's) entities with their text, leaving out one whose offsets split a character.

    Telegram's offsets count UTF-16 units; one falling inside a surrogate pair cannot be decoded, and
    ``parse_entities`` would then fail the whole message, which was never answered.
    """
    out = []
    for ent in (msg.entities if msg.text else msg.caption_entities):
        try:
            out.append((ent, msg.parse_entity(ent) if msg.text else msg.parse_caption_entity(ent)))
        except UnicodeDecodeError:
            continue
    return out


class TelegramChannel(Channel):
    """One Telegram bot account."""

    name = "telegram"
    text_limit = TEXT_LIMIT
    typing_lasts_s = 5.0  # sendChatAction: "5 seconds or less"
    capabilities = frozenset({
        Capability.SEND, Capability.REPLY, Capability.THREAD_REPLY, Capability.REACT, Capability.DELETE,
        Capability.ATTACHMENT, Capability.EFFECT, Capability.PIN, Capability.READ, Capability.TYPING, Capability.EDIT,
    })

    def __init__(self, account_id: str, on_inbound: InboundHandler, *, token: str, mode: str = "polling",
                 webhook_url: str | None = None, webhook_secret: str | None = None, api_base: str | None = None,
                 file_base: str | None = None, poll_timeout: int = 30, media_dir: Path | None = None,
                 menu_commands: bool = False, env: ChannelEnvironment | None = None) -> None:
        super().__init__(account_id, on_inbound)
        if telegram is None:
            raise MissingExtra("telegram", "the Telegram channel")
        if not token or not token.strip():
            raise ChannelError("channels.telegram: botToken is required (the token @BotFather gave you)")
        self._token = token.strip()
        self.mode = mode
        self._webhook_url = webhook_url
        # Without a configured secret, derive one from the token: stable across restarts, never guessable.
        self._secret = webhook_secret or hashlib.sha256(b"remoteclaw-webhook:" + self._token.encode()).hexdigest()
        self._api_base = api_base
        self._file_base = file_base
        self._poll_timeout = poll_timeout
        self._media_dir = media_dir
        self._menu_commands = menu_commands
        env = env or ChannelEnvironment.alone(self.name, account_id, on_inbound)
        self._inbound = env.pipeline(self._handle, _conversation)
        self._app: Application | None = None  # type: ignore[type-arg]
        self.username: str | None = None
        self.bot_id: int | None = None

    @staticmethod
    def configured(settings: dict[str, Any]) -> bool:
        return bool(settings.get("botToken"))

    @classmethod
    def from_config(cls, account_id: str, settings: dict[str, Any], env: ChannelEnvironment) -> TelegramChannel:
        """Build from ``channels.telegram`` (or one of its ``accounts``) as a mapping."""
        return cls(account_id, env.receive, token=str(settings.get("botToken") or ""),
                   mode=settings.get("mode", "polling"),
                   webhook_url=settings.get("webhookUrl") or env.webhook_url(),
                   webhook_secret=settings.get("webhookSecret"),
                   api_base=settings.get("apiBaseUrl"), file_base=settings.get("fileBaseUrl"),
                   poll_timeout=int(settings.get("pollTimeoutSeconds", 30)),
                   media_dir=env.media_dir, menu_commands=env.menu_commands, env=env)

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Check the token (``getMe``), then start polling or register the webhook."""
        if self.mode == "webhook" and not self._webhook_url:
            raise ChannelError("channels.telegram: webhook mode needs webhookUrl (or gateway.publicUrl)")
        # httpx logs every request at INFO: one line per long poll would drown the gateway log.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        builder = Application.builder().token(self._token)
        if self._api_base:
            builder = builder.base_url(self._api_base)
        if self._file_base:
            builder = builder.base_file_url(self._file_base)
        # Updates go from the poller (or the webhook) through this queue into the inbound pipeline, not to
        # python-telegram-bot's handlers: the pipeline writes each down, keeps each chat in order, replays.
        builder = builder.update_queue(_ToPipeline(self))
        if self.mode == "webhook":
            builder = builder.updater(None)
        app = builder.build()
        try:
            await app.initialize()
        except tg_error.InvalidToken as exc:
            raise ChannelError(f"telegram account {self.account_id}: the bot token was refused") from exc
        except tg_error.TelegramError as exc:
            raise ChannelUnavailable(f"telegram account {self.account_id}: cannot reach the Bot API: {exc}") from exc
        self.username, self.bot_id = app.bot.username, app.bot.id
        self._app = app
        try:
            await app.start()
            await self._inbound.replay()
            if self.mode == "webhook":
                await app.bot.set_webhook(url=self._webhook_url or "", secret_token=self._secret,
                                          allowed_updates=telegram.Update.ALL_TYPES)
            else:
                assert app.updater is not None
                await app.updater.start_polling(poll_interval=0.0, timeout=self._poll_timeout,
                                                allowed_updates=telegram.Update.ALL_TYPES)
        except Exception:
            await self.stop()
            raise
        if self._menu_commands:  # the "/" menu in Telegram's apps lists the chat commands the gateway answers
            try:
                await app.bot.set_my_commands([(c.name, c.help) for c in chat_commands.specs("session")])
            except tg_error.TelegramError as exc:
                log.warning("telegram command menu not set", account=self.account_id, error=str(exc))
        log.info("telegram bot started", account=self.account_id, username=self.username, mode=self.mode)

    async def stop(self) -> None:
        await self._inbound.stop()  # an update cut off here stays unhandled in the journal: replayed at next start
        app, self._app = self._app, None
        if app is None:
            return
        if app.updater is not None and app.updater.running:
            with contextlib.suppress(Exception):
                await app.updater.stop()
        if app.running:
            with contextlib.suppress(Exception):
                await app.stop()
        with contextlib.suppress(Exception):
            await app.shutdown()

    def _bot(self) -> telegram.Bot:
        if self._app is None:
            raise ChannelNotLinked(f"telegram account {self.account_id} is not running")
        return self._app.bot

    # -- webhook ----------------------------------------------------------------------------------

    async def handle_webhook(self, request: Request) -> Response:
        """Accept one update from Telegram, after checking the secret-token header."""
        from starlette.responses import JSONResponse

        if self.mode != "webhook" or self._app is None:
            return JSONResponse({"ok": False, "error": "webhook mode is off for this account"}, status_code=404)
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), self._secret.encode()):
            log.warning("telegram webhook with a wrong secret token", account=self.account_id)
            return JSONResponse({"ok": False, "error": "bad secret token"}, status_code=403)
        try:
            data = await request.json()
            update = telegram.Update.de_json(data, self._app.bot)
        except Exception:
            return JSONResponse({"ok": False, "error": "body is not a Telegram update"}, status_code=400)
        try:
            await self._app.update_queue.put(update)
        except Exception:  # not written down: Telegram retries an update it did not get a 200 for
            log.exception("telegram webhook update not stored", account=self.account_id)
            return JSONResponse({"ok": False, "error": "update not stored; retry"}, status_code=503)
        return JSONResponse({"ok": True})

    # -- inbound ----------------------------------------------------------------------------------

    async def _handle(self, payload: Payload) -> None:
        """The pipeline's step for one update: a message to the gateway, a button press answered and handed on.
        If this raises (the message could not be stored), the update stays unhandled and is replayed."""
        update = telegram.Update.de_json(payload, self._bot())
        if update is None:
            return
        msg = update.message
        if msg is not None and msg.from_user is not None and msg.from_user.id != self.bot_id:
            await self.on_inbound(await self._to_inbound(msg))
        if update.callback_query is not None:
            await self._on_press(update.callback_query)

    def _mentioned(self, msg: telegram.Message) -> tuple[bool, str]:
        """Whether the bot was addressed, and the text with the @mention taken out."""
        text = msg.text or msg.caption or ""
        me = (self.username or "").lower()
        hit = False
        for ent, value in _entity_texts(msg):
            by_name = ent.type in ("mention", "bot_command") and bool(me) and value.lower().endswith("@" + me)
            by_id = ent.type == "text_mention" and ent.user is not None and ent.user.id == self.bot_id
            hit = hit or by_name or by_id
        reply = msg.reply_to_message
        if reply is not None and reply.from_user is not None and reply.from_user.id == self.bot_id:
            hit = True
        if me:
            text = re.sub(rf"@{re.escape(self.username or '')}\b", "", text, flags=re.IGNORECASE).strip()
        return hit, text

    async def _to_inbound(self, msg: telegram.Message) -> Inbound:
        chat = msg.chat
        chat_type = _CHAT_TYPES.get(chat.type, "channel")
        user = msg.from_user
        assert user is not None
        mentioned, text = self._mentioned(msg)
        thread = str(msg.message_thread_id) if msg.is_topic_message and msg.message_thread_id else None
        reply_to = msg.reply_to_message
        # In forum topics every message "replies" to the topic's first message: not a real reply.
        reply_id = None
        if reply_to is not None and not (thread and reply_to.message_id == msg.message_thread_id):
            reply_id = str(reply_to.message_id)
        return Inbound(
            channel=self.name, account_id=self.account_id, sender_id=str(user.id),
            sender_name=user.full_name or user.username, chat_id=str(chat.id), chat_type=chat_type,
            message_id=str(msg.message_id), text=text, thread_id=thread, reply_to_id=reply_id,
            media=tuple(await self._media(msg)), mentioned=mentioned or chat_type == "dm",
            ts=msg.date.timestamp() if msg.date else 0.0, raw=msg.to_dict(),
        )

    async def _media(self, msg: telegram.Message) -> list[Media]:
        found: list[tuple[MediaKind, Any, str | None, str | None]] = []
        if msg.voice:
            found.append(("voice", msg.voice, msg.voice.mime_type, None))
        if msg.audio:
            found.append(("audio", msg.audio, msg.audio.mime_type, msg.audio.file_name))
        if msg.document:
            found.append(("file", msg.document, msg.document.mime_type, msg.document.file_name))
        if msg.photo:
            found.append(("photo", msg.photo[-1], "image/jpeg", None))  # the largest size comes last
        if msg.video:
            found.append(("video", msg.video, msg.video.mime_type, msg.video.file_name))
        if msg.sticker:
            found.append(("sticker", msg.sticker, None, None))
        out = []
        for kind, obj, mime, name in found:
            out.append(Media(kind=kind, path=await self._download(obj, name), mime=mime, name=name,
                             size=getattr(obj, "file_size", None)))
        return out

    async def _download(self, obj: Any, name: str | None) -> str | None:
        """Fetch a file into the state dir so the agent can read it; None when it cannot be had."""
        if self._media_dir is None or (getattr(obj, "file_size", 0) or 0) > MAX_DOWNLOAD_BYTES:
            return None
        try:
            file = await obj.get_file()
            suffix = Path(name or file.file_path or "").suffix or ".bin"
            path = self._media_dir / f"{obj.file_unique_id}{suffix}"
            await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
            await file.download_to_drive(path)
            return str(path)
        except Exception as exc:
            log.warning("telegram file download failed", account=self.account_id, error=str(exc))
            return None

    # -- outbound ---------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _errors(self, op: str, target: str) -> AsyncIterator[None]:
        """Map Bot API failures to our error family (one place, like PTB's own request wrapper)."""
        try:
            yield
        except tg_error.RetryAfter as exc:
            delay = exc._retry_after.total_seconds()  # the public attribute warns about its int form
            raise ChannelUnavailable(f"telegram rate limit on {op}: retry after {delay:g}s", retryable=True,
                                     retry_after_ms=int(delay * 1000),
                                     details={"channel": "telegram", "operation": op}) from exc
        except tg_error.Forbidden as exc:
            raise ChannelForbidden(f"telegram refused {op} to {target}: {exc.message}",
                                   details={"code": "CHANNEL_FORBIDDEN", "channel": "telegram", "to": target}) from exc
        except tg_error.BadRequest as exc:
            if _NOT_FOUND.search(exc.message):
                raise TargetNotFound(f"telegram {op}: {exc.message} ({target})",
                                     details={"code": "TARGET_NOT_FOUND", "channel": "telegram", "to": target}) from exc
            raise ChannelError(f"telegram refused {op}: {exc.message}",
                               details={"channel": "telegram", "operation": op}) from exc
        except tg_error.InvalidToken as exc:
            raise ChannelUnavailable(f"telegram account {self.account_id}: the bot token is no longer valid") from exc
        except (tg_error.TimedOut, tg_error.NetworkError) as exc:
            raise ChannelUnavailable(f"telegram {op}: cannot reach the Bot API: {exc.message}",
                                     retryable=True) from exc
        except tg_error.TelegramError as exc:
            raise ChannelError(f"telegram {op} failed: {exc.message}") from exc

    def _sent(self, msg: telegram.Message, thread_id: str | None) -> Sent:
        thread = str(msg.message_thread_id) if msg.message_thread_id else thread_id
        return Sent(message_id=str(msg.message_id), chat_id=str(msg.chat.id), thread_id=thread)

    @staticmethod
    def _reply(reply_to_id: str | None) -> Any:
        if reply_to_id is None:
            return None
        # allow_sending_without_reply: a deleted original must not make the whole reply fail.
        return telegram.ReplyParameters(message_id=_int_id(reply_to_id, "replyToId"),
                                        allow_sending_without_reply=True)

    async def send(self, to: str, text: str, *, thread_id: str | None = None, reply_to_id: str | None = None,
                   effect_id: str | None = None, silent: bool = False) -> Sent:
        if len(text) > TEXT_LIMIT:
            raise ChannelError(f"telegram messages are at most {TEXT_LIMIT} characters", details={"field": "message"})
        bot, chat = self._bot(), _chat(to)
        thread = _int_id(thread_id, "threadId") if thread_id else None
        kw: dict[str, Any] = {"message_thread_id": thread, "reply_parameters": self._reply(reply_to_id),
                              "message_effect_id": effect_id}
        if silent:
            kw["disable_notification"] = True
        async with self._errors("sendMessage", to):
            try:  # agents write Markdown: show it formatted
                msg = await bot.send_message(chat, to_html(text), parse_mode=ParseMode.HTML, **kw)
            except tg_error.BadRequest as exc:
                if "can't parse entities" not in exc.message.lower():
                    raise
                log.warning("telegram refused the formatted text; sending it as written", error=exc.message)
                msg = await bot.send_message(chat, text, **kw)
        return self._sent(msg, thread_id)

    async def send_buttons(self, to: str, text: str, buttons: list[tuple[str, str]], *,
                           thread_id: str | None = None) -> Sent | None:
        """An inline keyboard, one button a row; a press is a callback query whose data is the text it types."""
        if any(len(data.encode()) > 64 for _label, data in buttons):  # Telegram's limit on callback_data
            return None
        bot, chat = self._bot(), _chat(to)
        markup = telegram.InlineKeyboardMarkup(
            [[telegram.InlineKeyboardButton(label, callback_data=data)] for label, data in buttons])
        thread = _int_id(thread_id, "threadId") if thread_id else None
        async with self._errors("sendMessage", to):
            msg = await bot.send_message(chat, text, reply_markup=markup, message_thread_id=thread)
        return self._sent(msg, thread_id)

    async def _on_press(self, query: telegram.CallbackQuery) -> None:
        """A button press: answered at once (the spinner stops), then handled as the presser typing its data."""
        try:
            await query.answer()
        except tg_error.TelegramError as exc:
            log.warning("telegram callback not answered", account=self.account_id, error=str(exc))
        msg, user = query.message, query.from_user
        if not isinstance(msg, telegram.Message) or not query.data or user.id == self.bot_id:
            return
        chat_type = _CHAT_TYPES.get(msg.chat.type, "channel")
        thread = str(msg.message_thread_id) if msg.is_topic_message and msg.message_thread_id else None
        await self.on_inbound(Inbound(
            channel=self.name, account_id=self.account_id, sender_id=str(user.id),
            sender_name=user.full_name or user.username, chat_id=str(msg.chat.id), chat_type=chat_type,
            message_id=f"cb-{query.id}", text=query.data, thread_id=thread, mentioned=True,
            ts=msg.date.timestamp() if msg.date else 0.0, raw=query.to_dict()))

    async def draft(self, to: str, draft_id: int, text: str, *, thread_id: str | None = None) -> bool:
        """``sendMessageDraft``: private chats only (a user's numeric id is positive); a refusal means none here."""
        chat = _chat(to)
        if not isinstance(chat, int) or chat <= 0:
            return False
        thread = _int_id(thread_id, "threadId") if thread_id else None
        try:
            async with self._errors("sendMessageDraft", to):
                return bool(await self._bot().send_message_draft(chat, draft_id, text[:TEXT_LIMIT],
                                                                 message_thread_id=thread))
        except ChannelError:
            return False

    async def send_attachment(self, to: str, file: str | FileBytes, *, caption: str | None = None,
                              thread_id: str | None = None) -> Sent:
        bot, chat = self._bot(), _chat(to)
        if caption and len(caption) > CAPTION_LIMIT:
            raise ChannelError(f"telegram captions are at most {CAPTION_LIMIT} characters",
                               details={"field": "caption"})
        if isinstance(file, str) and file.startswith(("http://", "https://")):
            name = Path(file.split("?", 1)[0]).name or "file"
            payload: Any = file
        else:
            upload = await asyncio.to_thread(upload_of, file)  # bytes read once; a run's path is never read again
            name = upload.name
            payload = telegram.InputFile(upload.data, filename=name)
        kind = _KINDS.get(Path(name).suffix.lower(), "document")
        thread = _int_id(thread_id, "threadId") if thread_id else None
        send = getattr(bot, f"send_{kind}")
        async with self._errors(f"send{kind.title()}", to):
            msg = await send(chat, payload, caption=caption, message_thread_id=thread)
        return self._sent(msg, thread_id)

    async def react(self, to: str, message_id: str, emoji: str) -> None:
        bot, chat = self._bot(), _chat(to)
        async with self._errors("setMessageReaction", to):
            await bot.set_message_reaction(chat, _int_id(message_id, "messageId"), reaction=[emoji] if emoji else [])

    async def delete(self, to: str, message_id: str, *, thread_id: str | None = None) -> None:
        bot, chat = self._bot(), _chat(to)  # message ids are per chat, topics included
        async with self._errors("deleteMessage", to):
            await bot.delete_message(chat, _int_id(message_id, "messageId"))

    async def edit(self, to: str, message_id: str, text: str, *, thread_id: str | None = None) -> None:
        if len(text) > TEXT_LIMIT:
            raise ChannelError(f"telegram messages are at most {TEXT_LIMIT} characters", details={"field": "message"})
        bot, chat = self._bot(), _chat(to)
        try:
            async with self._errors("editMessageText", to):
                await bot.edit_message_text(text, chat_id=chat, message_id=_int_id(message_id, "messageId"))
        except ChannelError as exc:
            if "not modified" not in exc.message.lower():  # the same text again is not a failure
                raise

    async def pin(self, to: str, message_id: str) -> None:
        bot, chat = self._bot(), _chat(to)
        async with self._errors("pinChatMessage", to):
            await bot.pin_chat_message(chat, _int_id(message_id, "messageId"), disable_notification=True)

    async def typing(self, to: str, *, thread_id: str | None = None) -> None:
        with contextlib.suppress(Exception):  # an indicator is never worth failing a run
            thread = int(thread_id) if thread_id and thread_id.isdigit() else None
            await self._bot().send_chat_action(_chat(to), "typing", message_thread_id=thread)


def _conversation(payload: Payload) -> Any:
    """The chat an update belongs to (its updates are handled in order); the update itself when it has none."""
    for key in ("message", "edited_message", "channel_post", "edited_channel_post", "business_message"):
        chat = (payload.get(key) or {}).get("chat")
        if chat:
            return chat.get("id")
    press = payload.get("callback_query") or {}
    chat = (press.get("message") or {}).get("chat")
    return chat.get("id") if chat else ("update", payload.get("update_id"))


if telegram is not None:

    class _ToPipeline(asyncio.Queue[object]):
        """The queue python-telegram-bot's poller (and our webhook) put updates in, handing each to the pipeline.

        The poller puts a batch of updates here and only then asks for the next batch with an offset past them,
        which is what acknowledges them to Telegram; the webhook answers 200 only after its put. So an update is
        written down before Telegram considers it delivered, and a redelivered one is dropped. Anything else
        (the library's stop signal) goes into the queue as usual.
        """

        def __init__(self, channel: TelegramChannel) -> None:
            super().__init__()
            self._channel = channel

        async def put(self, item: object) -> None:
            if not isinstance(item, telegram.Update):
                await super().put(item)
                return
            ch = self._channel
            try:
                await ch._inbound.receive(str(item.update_id), item.to_dict())
            except Exception as exc:
                # Not acknowledged: raised as a network error, the poller backs off (up to 30 s) and asks for
                # the same batch again; any other error would stop polling for good.
                log.warning("telegram update not written down; it will be fetched again",
                            account=ch.account_id, update=item.update_id, error=str(exc))
                raise tg_error.NetworkError(f"update {item.update_id} not written down: {exc}") from exc
