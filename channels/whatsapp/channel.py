"""WhatsApp as a channel, through Meta's WhatsApp Cloud API (the Graph API over httpx).

One ``WhatsAppChannel`` is one business phone number. Meta pushes what happens to it to our webhook,
``/channels/whatsapp/<account>/webhook``: a ``GET`` once, when the webhook is set up in the app dashboard
(``hub.verify_token`` checked, ``hub.challenge`` echoed), then a signed ``POST`` per batch of events
(``X-Hub-Signature-256``: HMAC-SHA256 of the raw body with the app secret; anything else is refused before it is
read). Each message goes through the inbound pipeline (``channels.pipeline``: journalled) before Meta is answered
200, so a retried webhook is handled once, and one cut off by a stop is handled at the next start.

Inbound: text, replies (``context.id``), media (downloaded with ``GET /{media-id}`` then the URL it gives, with
the token), voice notes (``audio.voice``: the voice capability transcribes them), reply-button and list answers
(their id is the text a press types: ``/approve <id> allow-once`` and friends), reactions (only when
``inboundReactions`` is on). Outbound through ``POST /{phone-number-id}/messages``: text in WhatsApp's markup,
replies, reactions, media (uploaded first), reply buttons (up to 3) or a list (up to 10), the typing indicator
with a read receipt. The Cloud API cannot delete, edit or pin a business message: those raise
``UnsupportedOperation`` saying so.

WhatsApp's 24-hour rule: a business may send free-form messages only within 24 hours of the person's last
message. The channel remembers when each person last wrote (kept in the state dir) and refuses a send outside the
window with a ``ChannelError`` naming the rule, or sends the configured ``reengageTemplate`` instead; the Graph
API's own refusal (error 131047) is reported the same way.

pywa was considered and not used: its Graph client fixes the host to graph.facebook.com (the loopback fake could
be reached only by writing a private attribute or rewriting URLs in a transport), and its webhook side (its own
verification and in-memory dedupe, handler registry) would sit beside ours rather than in it. The half-dozen
endpoints used here are plain JSON over HTTPS.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import mimetypes
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
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
    UnsupportedOperation,
)
from channels.environment import ChannelEnvironment
from channels.files import upload_of
from channels.pipeline import Payload
from channels.whatsapp.config import WhatsAppAccountConfig, parse_config
from channels.whatsapp.format import to_whatsapp
from gateway.platforms import FileBytes, MediaKind

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["WINDOW_S", "WhatsAppChannel", "WindowClosed"]

log = structlog.get_logger("channels.whatsapp")

TEXT_LIMIT = 4096
CAPTION_LIMIT = 1024
BUTTON_BODY_LIMIT = 1024
MAX_DOWNLOAD_BYTES = 100 * 1024 * 1024
"""The largest file WhatsApp carries (documents); nothing larger is fetched."""
WINDOW_S = 24 * 3600
"""The customer-service window: free-form messages only this long after the person's last message."""
KEEP_S = 30 * 24 * 3600
"""How long a person's last message time is kept (after that the Graph API's 131047 tells the window closed)."""
SIGNATURE_HEADER = "X-Hub-Signature-256"
_REENGAGE = 131047
_RATE_LIMITED = frozenset({4, 80007, 130429, 131056})
_FORBIDDEN = frozenset({10, 200, 131030, 131031})
_NOT_FOUND = frozenset({131026, 131009, 100})
_MEDIA_KINDS: dict[str, MediaKind] = {
    "image": "photo",
    "document": "file",
    "audio": "audio",
    "video": "video",
    "sticker": "sticker",
}
"""WhatsApp's message types that carry a file, in our vocabulary (an audio with ``voice`` set is a voice note)."""
_VOICE_SUFFIXES = frozenset({".ogg", ".oga", ".opus"})


class WindowClosed(ChannelError):
    """Outside the 24-hour customer-service window: WhatsApp takes only an approved template now."""


def _wa_id(to: str) -> str:
    """A WhatsApp id: the person's phone number in international form, digits only."""
    digits = to.strip().removeprefix("+").removeprefix("whatsapp:")
    if re.fullmatch(r"\d{5,20}", digits):
        return digits
    raise TargetNotFound(
        f"whatsapp: not a phone number: {to!r} (international form, digits only, e.g. 15551234567)",
        details={"field": "to", "to": to, "code": "TARGET_NOT_FOUND"},
    )


def _message_id(value: str, field: str) -> str:
    if not re.fullmatch(r"wamid\.[\w=+/-]+", value.strip()):
        raise ChannelError(f"whatsapp: {field} must be a message id (wamid....), got {value!r}",
                           details={"field": field})
    return value.strip()


def signature_of(body: bytes, secret: str) -> str:
    """The ``X-Hub-Signature-256`` value Meta sends with ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class WhatsAppChannel(Channel):
    """One WhatsApp business number on the Cloud API."""

    name = "whatsapp"
    text_limit = TEXT_LIMIT
    typing_lasts_s = 25.0  # the indicator shows until the answer or 25 seconds
    capabilities = frozenset(
        {Capability.SEND, Capability.REPLY, Capability.REACT, Capability.ATTACHMENT, Capability.TYPING}
    )

    def __init__(
        self,
        account_id: str,
        on_inbound: InboundHandler,
        settings: WhatsAppAccountConfig,
        *,
        state_dir: Path | None = None,
        media_dir: Path | None = None,
        env: ChannelEnvironment | None = None,
    ) -> None:
        super().__init__(account_id, on_inbound)
        self.settings = settings
        self._state_dir = state_dir
        self._media_dir = media_dir
        self._http: httpx.AsyncClient | None = None
        self._api = f"{settings.apiBaseUrl.rstrip('/')}/{settings.apiVersion}"
        self._last_seen: dict[str, float] = {}  # person -> when they last wrote (the 24-hour window)
        self._last_message: dict[str, str] = {}  # person -> their last message id (read receipts, typing)
        env = env or ChannelEnvironment.alone(self.name, account_id, on_inbound)
        # Each person's messages in order, people side by side.
        self._inbound = env.pipeline(self._handle, lambda payload: str(payload["message"]["from"]))

    @staticmethod
    def configured(settings: dict[str, Any]) -> bool:
        """Any of the account's own keys set: a half-filled account then fails with the missing field named."""
        return any(settings.get(k) for k in ("phoneNumberId", "accessToken", "appSecret", "verifyToken"))

    @classmethod
    def from_config(cls, account_id: str, settings: dict[str, Any], env: ChannelEnvironment) -> WhatsAppChannel:
        return cls(account_id, env.receive, parse_config(settings), state_dir=env.account_dir,
                   media_dir=env.media_dir, env=env)

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Check the number and the token (``GET /{phone-number-id}``), then hand out what was cut off."""
        self._last_seen = await asyncio.to_thread(self._load_window)  # before anything can be sent
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(30.0, connect=10.0),
            headers={"Authorization": f"Bearer {self.settings.accessToken}"},
        )
        try:
            number = await self._graph("GET", self.settings.phoneNumberId, "check the phone number id",
                                       params={"fields": "display_phone_number,verified_name"})
        except (ChannelError, ChannelUnavailable) as exc:
            await self.stop()
            if isinstance(exc, ChannelUnavailable) and exc.retryable:
                raise  # the Graph API unreachable or busy: the manager tries again
            # A refused token or phone number id: said once, not retried until the config changes.
            raise ChannelError(
                f"whatsapp account {self.account_id}: phone number {self.settings.phoneNumberId} refused: "
                f"{exc.message}",
                details={"field": "channels.whatsapp.accessToken"},
            ) from exc
        except Exception:
            await self.stop()
            raise
        await self._inbound.replay()
        log.info("whatsapp number ready", account=self.account_id, number=number.get("display_phone_number"))

    async def stop(self) -> None:
        await self._inbound.stop()  # one cut off here stays unhandled in the journal: replayed at the next start
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()

    def _live(self) -> httpx.AsyncClient:
        if self._http is None:
            raise ChannelNotLinked(f"whatsapp account {self.account_id} is not running")
        return self._http

    # -- the 24-hour window, kept across restarts ----------------------------------------------------

    def _load_window(self) -> dict[str, float]:
        if self._state_dir is None:
            return {}
        try:
            data = json.loads((self._state_dir / "window.json").read_text())
        except (OSError, ValueError):
            return {}
        now = time.time()
        return {str(k): float(v) for k, v in data.items() if now - float(v) < KEEP_S}

    def _save_window(self) -> None:
        if self._state_dir is None:
            return
        now = time.time()
        fresh = {k: v for k, v in self._last_seen.items() if now - v < KEEP_S}
        self._state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self._state_dir / ".window.json.tmp"
        tmp.write_text(json.dumps(fresh))
        os.replace(tmp, self._state_dir / "window.json")

    async def _saw(self, person: str, ts: float, message_id: str) -> None:
        if ts > self._last_seen.get(person, 0.0):
            self._last_seen[person] = ts
            self._last_message[person] = message_id
            await asyncio.to_thread(self._save_window)

    def _window_open(self, person: str) -> bool | None:
        """True inside the window, False outside it, None when this gateway never heard from them (the API
        decides: they may have written before this account's state was kept)."""
        seen = self._last_seen.get(person)
        if seen is None:
            return None
        return time.time() - seen < WINDOW_S

    def _closed(self, person: str, seen: float | None = None) -> WindowClosed:
        ago = f" (their last message was {(time.time() - seen) / 3600:.0f} hours ago)" if seen else ""
        return WindowClosed(
            f"whatsapp: {person} has not written in the last 24 hours{ago}; WhatsApp allows free-form messages only "
            "within 24 hours of the person's last message, and an approved template outside it "
            "(channels.whatsapp.reengageTemplate)",
            details={"code": "WINDOW_CLOSED", "channel": "whatsapp", "to": person, "rule": "24-hour window"},
        )

    # -- webhook ----------------------------------------------------------------------------------

    async def handle_webhook(self, request: Request) -> Response:
        """``GET``: Meta's verification request. ``POST``: events, accepted only with a valid signature."""
        from starlette.responses import JSONResponse, PlainTextResponse

        if request.method in ("GET", "HEAD"):
            q = request.query_params
            token = q.get("hub.verify_token") or ""
            if q.get("hub.mode") != "subscribe" or not hmac.compare_digest(
                token.encode(), self.settings.verifyToken.encode()
            ):
                log.warning("whatsapp webhook verification refused", account=self.account_id)
                return PlainTextResponse("verification refused", status_code=403)
            return PlainTextResponse(q.get("hub.challenge") or "")
        if self._http is None:
            return JSONResponse({"ok": False, "error": "this account is not running"}, status_code=503)
        body = await request.body()
        given = request.headers.get(SIGNATURE_HEADER, "")
        if not hmac.compare_digest(given.encode(), signature_of(body, self.settings.appSecret).encode()):
            log.warning("whatsapp webhook with a bad signature", account=self.account_id)
            return JSONResponse({"ok": False, "error": "bad signature"}, status_code=403)
        try:
            data = json.loads(body)
            messages = list(self._messages(data))
        except (ValueError, TypeError, AttributeError, KeyError):
            return JSONResponse({"ok": False, "error": "body is not a WhatsApp webhook"}, status_code=400)
        try:
            for payload in messages:  # written down before Meta is told they arrived
                await self._inbound.receive(str(payload["message"]["id"]), payload)
        except Exception:  # not acknowledged: Meta sends the batch again, and what was journalled is dropped
            log.exception("whatsapp webhook not stored", account=self.account_id)
            return JSONResponse({"ok": False, "error": "not stored; retry"}, status_code=503)
        return JSONResponse({"ok": True})

    def _messages(self, data: dict[str, Any]) -> Any:
        """Each message of a webhook body for this number, with the sender's profile name beside it."""
        if data.get("object") != "whatsapp_business_account":
            raise ValueError("not a WhatsApp Business Account webhook")
        for entry in data.get("entry") or []:
            for change in entry.get("changes") or []:
                value = change.get("value") or {}
                if change.get("field") != "messages":
                    continue
                if str((value.get("metadata") or {}).get("phone_number_id")) != self.settings.phoneNumberId:
                    continue  # another number of the same app: its own account answers it
                for status in value.get("statuses") or []:  # delivery reports: only failures are worth a line
                    if isinstance(status, dict) and status.get("status") == "failed":
                        log.warning("whatsapp message not delivered", account=self.account_id,
                                    to=status.get("recipient_id"), message=status.get("id"),
                                    errors=status.get("errors"))
                names = {c.get("wa_id"): (c.get("profile") or {}).get("name") for c in value.get("contacts") or []}
                for msg in value.get("messages") or []:
                    if isinstance(msg, dict) and msg.get("id") and msg.get("from"):
                        yield {"message": msg, "name": names.get(msg["from"])}

    async def _handle(self, payload: Payload) -> None:
        """The pipeline's step: one message mapped and handed to the gateway."""
        inbound = await self._to_inbound(payload["message"], payload.get("name"))
        if inbound is not None:
            await self.on_inbound(inbound)

    # -- inbound ----------------------------------------------------------------------------------

    async def _to_inbound(self, msg: dict[str, Any], name: str | None) -> Inbound | None:
        sender, kind = str(msg["from"]), str(msg.get("type") or "")
        ts = float(msg.get("timestamp") or 0) or time.time()
        await self._saw(sender, ts, str(msg["id"]))
        text, media, reply_to = "", [], (msg.get("context") or {}).get("id")
        if kind == "text":
            text = str((msg.get("text") or {}).get("body") or "")
        elif kind == "interactive":  # a reply button or a list row: its id is the text the press types
            inter = msg.get("interactive") or {}
            text = str((inter.get("button_reply") or inter.get("list_reply") or {}).get("id") or "")
            reply_to = None  # the press answers the buttons' message; it is not a quoted reply
        elif kind == "button":  # a template's quick-reply button
            button = msg.get("button") or {}
            text = str(button.get("payload") or button.get("text") or "")
        elif kind == "reaction":
            reaction = msg.get("reaction") or {}
            if not self.settings.inboundReactions:
                log.info("whatsapp reaction not handed to the agent", account=self.account_id, sender=sender,
                         emoji=reaction.get("emoji"))
                return None
            emoji = reaction.get("emoji")
            text = f"[reacted {emoji} to a message]" if emoji else "[removed a reaction]"
            reply_to = reaction.get("message_id")
        elif kind in _MEDIA_KINDS:
            item = msg.get(kind) or {}
            media_kind: MediaKind = "voice" if kind == "audio" and item.get("voice") else _MEDIA_KINDS[kind]
            file_name = item.get("filename")
            path, size = await self._download(str(item.get("id") or ""), item.get("mime_type"), file_name)
            media.append(Media(kind=media_kind, path=path, mime=item.get("mime_type"), name=file_name, size=size))
            text = str(item.get("caption") or "")
        elif kind == "location":
            loc = msg.get("location") or {}
            text = f"[location: {loc.get('latitude')}, {loc.get('longitude')} {loc.get('name') or ''}]".strip()
        else:  # unsupported, contacts, system messages: nothing the agent can act on
            log.info("whatsapp message type not handled", account=self.account_id, type=kind)
            return None
        if not text.strip() and not media:  # e.g. a flow's answer: nothing to hand over
            log.info("whatsapp message without text or media ignored", account=self.account_id, type=kind)
            return None
        return Inbound(
            channel=self.name,
            account_id=self.account_id,
            sender_id=sender,
            sender_name=name,
            chat_id=sender,
            chat_type="dm",
            message_id=str(msg["id"]),
            text=text,
            reply_to_id=str(reply_to) if reply_to else None,
            media=tuple(media),
            mentioned=True,
            ts=ts,
            raw=msg,
        )

    async def _download(self, media_id: str, mime: str | None, name: str | None) -> tuple[str | None, int | None]:
        """Fetch a file (``GET /{media-id}`` gives a short-lived URL, fetched with the token) into the state dir;
        (None, size) when it cannot be had."""
        if self._media_dir is None or not re.fullmatch(r"[\w.-]{1,128}", media_id):
            return None, None
        size: int | None = None
        try:
            info = await self._graph("GET", media_id, "media")
            size = int(info["file_size"]) if info.get("file_size") else None
            if (size or 0) > MAX_DOWNLOAD_BYTES:
                return None, size
            async with self._live().stream("GET", str(info["url"])) as resp:
                resp.raise_for_status()
                body = bytearray()
                async for chunk in resp.aiter_bytes():
                    body.extend(chunk)
                    if len(body) > MAX_DOWNLOAD_BYTES:
                        return None, size
            suffix = Path(name or "").suffix or mimetypes.guess_extension((mime or "").split(";")[0].strip()) or ".bin"
            if (mime or "").startswith("audio/ogg"):
                suffix = ".ogg"
            path = self._media_dir / f"{media_id}{suffix}"
            await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
            await asyncio.to_thread(path.write_bytes, bytes(body))
            return str(path), len(body)
        except Exception as exc:
            log.warning("whatsapp media download failed", account=self.account_id, media=media_id, error=str(exc))
            return None, size

    # -- the Graph API --------------------------------------------------------------------------------

    async def _graph(self, method: str, path: str, op: str, *, target: str = "", **kw: Any) -> dict[str, Any]:
        """One Graph API call; its refusals mapped to our error family."""
        try:
            resp = await self._live().request(method, f"{self._api}/{path}", **kw)
        except httpx.HTTPError as exc:
            raise ChannelUnavailable(f"whatsapp {op}: cannot reach the Graph API: {exc}", retryable=True) from exc
        try:
            data = resp.json()
        except ValueError:
            data = {}
        if resp.status_code < 400 and isinstance(data, dict) and "error" not in data:
            return data
        err = (data.get("error") if isinstance(data, dict) else None) or {}
        raise self._error(op, resp.status_code, err, target)

    def _error(self, op: str, status: int, err: dict[str, Any], target: str) -> Exception:
        code = int(err.get("code") or 0)
        detail = str((err.get("error_data") or {}).get("details") or "")
        message = f"{err.get('message') or f'HTTP {status}'}{f': {detail}' if detail else ''}"
        details = {"channel": "whatsapp", "operation": op, "to": target, "errcode": code}
        if code == _REENGAGE:
            return self._closed(target)
        if code in _RATE_LIMITED or status == 429:
            return ChannelUnavailable(f"whatsapp rate limit on {op}: {message}", retryable=True,
                                      retry_after_ms=60_000, details=details)
        if code == 190 or status == 401:
            return ChannelUnavailable(f"whatsapp account {self.account_id}: the access token was refused ({message})",
                                      details=details)
        if code in _FORBIDDEN or status == 403:
            return ChannelForbidden(f"whatsapp refused {op} to {target}: {message}",
                                    details={**details, "code": "CHANNEL_FORBIDDEN"})
        if code in _NOT_FOUND or status == 404:
            return TargetNotFound(f"whatsapp {op}: {message} ({target})",
                                  details={**details, "code": "TARGET_NOT_FOUND"})
        if status >= 500:
            return ChannelUnavailable(f"whatsapp {op}: the Graph API failed: {message}", retryable=True,
                                      details=details)
        return ChannelError(f"whatsapp {op} failed: {message}", details=details)

    async def _post(self, to: str, op: str, body: dict[str, Any], *, reply_to_id: str | None = None) -> Sent:
        """``POST /{phone-number-id}/messages``, after checking the 24-hour window."""
        person = _wa_id(to)
        payload: dict[str, Any] = {"messaging_product": "whatsapp", "recipient_type": "individual", "to": person,
                                   **body}
        if reply_to_id:
            payload["context"] = {"message_id": _message_id(reply_to_id, "replyToId")}
        if body.get("type") not in ("reaction", "template") and self._window_open(person) is False:
            if not self.settings.reengageTemplate:
                raise self._closed(person, self._last_seen.get(person))
            return await self._reengage(person)
        got = await self._graph("POST", f"{self.settings.phoneNumberId}/messages", op, target=person, json=payload)
        ids = [m.get("id") for m in got.get("messages") or [] if isinstance(m, dict)]
        if not ids:
            raise ChannelError(f"whatsapp {op}: the Graph API answered no message id", details={"operation": op})
        return Sent(message_id=str(ids[0]), chat_id=person)

    async def _reengage(self, person: str) -> Sent:
        """Outside the window: the configured template, inviting the person to write (which reopens it)."""
        log.info("whatsapp window closed: template sent instead", account=self.account_id, to=person,
                 template=self.settings.reengageTemplate)
        template = {"name": self.settings.reengageTemplate, "language": {"code": self.settings.reengageLanguage}}
        return await self._post(person, "template", {"type": "template", "template": template})

    # -- outbound ---------------------------------------------------------------------------------

    async def send(self, to: str, text: str, *, thread_id: str | None = None, reply_to_id: str | None = None,
                   effect_id: str | None = None, silent: bool = False) -> Sent:
        body = to_whatsapp(text)
        if len(body) > TEXT_LIMIT:
            raise ChannelError(f"whatsapp messages are at most {TEXT_LIMIT} characters", details={"field": "message"})
        # Links show a preview card, as in the app; the text goes as written when it has no markup to show.
        return await self._post(to, "send", {"type": "text", "text": {"body": body, "preview_url": "://" in body}},
                                reply_to_id=reply_to_id)

    async def send_buttons(self, to: str, text: str, buttons: list[tuple[str, str]], *,
                           thread_id: str | None = None) -> Sent | None:
        """Up to 3 options: reply buttons; up to 10: a list behind one "Choose" button; more, or an id longer
        than WhatsApp takes: None (the caller sends the text, whose options are numbered)."""
        body = to_whatsapp(text)
        if not buttons or len(buttons) > 10 or len(body) > BUTTON_BODY_LIMIT:
            return None
        id_limit = 256 if len(buttons) <= 3 else 200  # a reply button's id, a list row's id
        if any(len(data) > id_limit or not data for _label, data in buttons):
            return None
        if len(buttons) <= 3:
            action: dict[str, Any] = {"buttons": [
                {"type": "reply", "reply": {"id": data, "title": _short(label, 20)}} for label, data in buttons
            ]}
            interactive = {"type": "button", "body": {"text": body}, "action": action}
        else:
            rows = [{"id": data, "title": _short(label, 24)} for label, data in buttons]
            interactive = {"type": "list", "body": {"text": body},
                           "action": {"button": "Choose", "sections": [{"title": "Options", "rows": rows}]}}
        return await self._post(to, "sendButtons", {"type": "interactive", "interactive": interactive})

    async def send_attachment(self, to: str, file: str | FileBytes, *, caption: str | None = None,
                              thread_id: str | None = None) -> Sent:
        if caption and len(caption) > CAPTION_LIMIT:
            raise ChannelError(f"whatsapp captions are at most {CAPTION_LIMIT} characters",
                               details={"field": "caption"})
        person = _wa_id(to)
        url = file if isinstance(file, str) and file.startswith(("http://", "https://")) else None
        upload: FileBytes | None = None
        if url is not None:
            name = Path(url.split("?", 1)[0]).name or "file"
        else:
            upload = await asyncio.to_thread(upload_of, file)  # read once, by descriptor
            name = upload.name
        voice = Path(name).suffix.lower() in _VOICE_SUFFIXES
        mime = "audio/ogg" if voice else mimetypes.guess_type(name)[0] or "application/octet-stream"
        kind = _out_kind(mime)
        if upload is None:
            item: dict[str, Any] = {"link": url}  # WhatsApp fetches it itself
        else:
            data = upload.data
            if self._window_open(person) is False:  # refused before anything is uploaded
                if not self.settings.reengageTemplate:
                    raise self._closed(person, self._last_seen.get(person))
                return await self._reengage(person)
            got = await self._graph(
                "POST", f"{self.settings.phoneNumberId}/media", "upload", target=person,
                data={"messaging_product": "whatsapp", "type": mime}, files={"file": (name, data, mime)},
            )
            item = {"id": str(got["id"])}
        if kind == "document":
            item["filename"] = name
        if voice:
            item["voice"] = True  # shown as a voice message, not a music file
        if caption and kind != "audio":  # audio takes no caption: it goes as a message of its own after it
            item["caption"] = to_whatsapp(caption)
        sent = await self._post(person, "sendAttachment", {"type": kind, kind: item})
        if caption and kind == "audio":
            await self.send(person, caption)
        return sent

    async def react(self, to: str, message_id: str, emoji: str) -> None:
        await self._post(to, "react", {"type": "reaction", "reaction": {
            "message_id": _message_id(message_id, "messageId"), "emoji": emoji}})

    async def delete(self, to: str, message_id: str, *, thread_id: str | None = None) -> None:
        raise _unsupported("delete", "the WhatsApp Cloud API cannot delete a message a business sent")

    async def edit(self, to: str, message_id: str, text: str, *, thread_id: str | None = None) -> None:
        raise _unsupported("edit", "the WhatsApp Cloud API cannot edit a message a business sent")

    async def pin(self, to: str, message_id: str) -> None:
        raise _unsupported("pin", "the WhatsApp Cloud API cannot pin messages")

    async def typing(self, to: str, *, thread_id: str | None = None) -> None:
        """Read receipt and typing indicator together (the API shows typing only as part of marking the
        person's last message read); nothing when they never wrote or it is off."""
        with contextlib.suppress(Exception):  # an indicator is never worth failing a run
            person = _wa_id(to)
            last = self._last_message.get(person)
            if last is None or not self.settings.readReceipts or self._window_open(person) is False:
                return
            await self._graph("POST", f"{self.settings.phoneNumberId}/messages", "typing", target=person, json={
                "messaging_product": "whatsapp", "status": "read", "message_id": last,
                "typing_indicator": {"type": "text"}})


def _short(label: str, limit: int) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _out_kind(mime: str) -> str:
    """WhatsApp's message type for a file: what it can show inline, anything else as a document."""
    if mime in ("image/jpeg", "image/png"):
        return "image"
    if mime.startswith("audio/"):
        return "audio"
    if mime in ("video/mp4", "video/3gpp"):
        return "video"
    return "document"


def _unsupported(op: str, why: str) -> UnsupportedOperation:
    return UnsupportedOperation(f"whatsapp does not support {op}: {why}",
                                details={"code": "UNSUPPORTED", "channel": "whatsapp", "operation": op})
