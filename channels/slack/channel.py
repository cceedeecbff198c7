"""Slack as a channel, through slack-sdk (extra ``slack``).

One ``SlackChannel`` is one Slack app's bot in one workspace. Events reach it one of two ways, chosen by the
config: ``appToken`` set, Socket Mode (``apps.connections.open`` gives a WebSocket URL; each envelope is
acknowledged by its ``envelope_id`` before it is handled; no public URL needed); otherwise the Events API over
HTTP, at the gateway's ``/channels/slack/<account>/webhook`` (each request's ``X-Slack-Signature`` checked
against the signing secret, ``url_verification`` answered with its challenge). Button presses come the same
way: an ``interactive`` envelope, or a form POST with ``payload=``.

What is handed to the agent: every DM (``im``); in channels (public, private, group DMs) a message that
mentions the bot, or any message in a thread the bot takes part in (it was mentioned there or posted there).
A thread is its own session (``thread_ts`` is the thread id). ``message`` and ``app_mention`` events for the
same message are handled once: each event goes through the inbound pipeline (``channels.pipeline``) keyed by
channel and ``ts``, so Slack's redeliveries are dropped and a restart replays what was cut off.

Outbound: Markdown converted to mrkdwn; replies go into the thread of the message replied to (Slack has no
other kind); reactions by emoji name; ``chat.update``/``chat.delete``; ``pins.add``; files through
``files.getUploadURLExternal`` + upload + ``files.completeUploadExternal``; buttons as a Block Kit ``actions``
block whose press comes back as the presser typing the button's value. Slack has no typing indicator for
bots, so there is none. Web API refusals become our errors: ``channel_not_found`` and the like ->
``TargetNotFound``, ``missing_scope``/``not_in_channel``-like -> ``ChannelForbidden``, ``ratelimited`` ->
``ChannelUnavailable`` with ``retry_after_ms``, network errors -> retryable.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import mimetypes
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

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
from channels.slack.config import SlackAccountConfig, parse_config
from channels.slack.format import to_mrkdwn
from gateway.extras import MissingExtra
from gateway.platforms import ChatType, FileBytes, MediaKind

try:
    import aiohttp
    from slack_sdk.errors import SlackApiError, SlackClientError
    from slack_sdk.signature import SignatureVerifier
    from slack_sdk.socket_mode.aiohttp import SocketModeClient
    from slack_sdk.socket_mode.request import SocketModeRequest
    from slack_sdk.socket_mode.response import SocketModeResponse
    from slack_sdk.web.async_client import AsyncWebClient
except ImportError:  # pragma: no cover - exercised only without the extra
    AsyncWebClient = None  # type: ignore[assignment,misc]

__all__ = ["SlackChannel"]

log = structlog.get_logger("plugins.slack")

TEXT_LIMIT = 4000
"""Characters per message: Slack accepts 40,000 but folds long messages behind "show more" from about 4,000."""
HARD_LIMIT = 40_000
SECTION_LIMIT = 3000  # a Block Kit section's text
BUTTON_VALUE_LIMIT = 2000
MAX_DOWNLOAD_BYTES = 50 * 1024 * 1024
_CHANNEL_ID = re.compile(r"[CDG][A-Z0-9]{2,}")
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,}")
_TS = re.compile(r"\d{9,11}\.\d{1,6}")
_HANDLED_SUBTYPES = {None, "file_share", "thread_broadcast"}
_TARGET_GONE = {
    "channel_not_found", "message_not_found", "thread_not_found", "user_not_found", "no_such_message",
    "file_not_found", "not_found",
}
_REFUSED = {
    "not_in_channel", "missing_scope", "restricted_action", "cant_update_message", "cant_delete_message",
    "is_archived", "not_allowed_token_type", "channel_is_archived", "no_permission", "ekm_access_denied",
    "access_denied", "cannot_dm_bot", "user_disabled",
}
_TOKEN_GONE = {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"}
EMOJI_NAMES = {
    "👍": "+1", "👎": "-1", "❤️": "heart", "❤": "heart", "😂": "joy", "🎉": "tada", "✅": "white_check_mark",
    "❌": "x", "👀": "eyes", "🔥": "fire", "🙏": "pray", "😀": "grinning", "😄": "smile", "🤔": "thinking_face",
    "🚀": "rocket", "⚠️": "warning", "👋": "wave", "💯": "100", "😢": "cry", "😮": "open_mouth", "⏳":
    "hourglass_flowing_sand", "⌛": "hourglass", "✍️": "writing_hand", "🛑": "octagonal_sign", "👌": "ok_hand",
    "🙂": "slightly_smiling_face", "😊": "blush", "👏": "clap", "💡": "bulb", "📌": "pushpin", "🤖": "robot_face",
    "⭐": "star", "✔️": "heavy_check_mark", "❓": "question", "🆗": "ok", "😅": "sweat_smile", "🎯": "dart",
}
"""Slack reacts by name; the emoji agents and the gateway use most, by name (``:name:`` works for any)."""


def emoji_name(emoji: str) -> str:
    """Slack's name for ``emoji``: ``:name:``/``name`` as given, a known Unicode emoji by its name."""
    e = emoji.strip()
    if re.fullmatch(r":?[a-z0-9_+'-]+(::skin-tone-\d)?:?", e):
        return e.strip(":")
    name = EMOJI_NAMES.get(e) or EMOJI_NAMES.get(e.replace("\ufe0f", ""))
    if name is None:
        raise ChannelError(
            f"slack: no Slack name known for the emoji {emoji!r}; give its name, e.g. :thumbsup:",
            details={"field": "emoji", "channel": "slack"},
        )
    return name


def _ts(value: str, field: str) -> str:
    if not _TS.fullmatch(value.strip()):
        raise ChannelError(
            f"slack: {field} must be a message timestamp (1712345678.123456), got {value!r}", details={"field": field}
        )
    return value.strip()


def _from_slack(text: str) -> str:
    """Slack's markup in received text made readable: links as ``text (url)``, entities unescaped."""
    text = re.sub(r"<(https?://[^|>]+)\|([^>]+)>", r"\2 (\1)", text)
    text = re.sub(r"<(https?://[^>]+)>", r"\1", text)
    return html.unescape(text)


class SlackChannel(Channel):
    """One Slack app's bot in one workspace."""

    name = "slack"
    text_limit = TEXT_LIMIT
    capabilities = frozenset(
        {
            Capability.SEND,
            Capability.REPLY,
            Capability.THREAD_REPLY,
            Capability.REACT,
            Capability.DELETE,
            Capability.EDIT,
            Capability.ATTACHMENT,
            Capability.PIN,
            Capability.READ,
        }
    )

    def __init__(
        self,
        account_id: str,
        on_inbound: InboundHandler,
        settings: SlackAccountConfig,
        *,
        media_dir: Path | None = None,
        env: ChannelEnvironment | None = None,
    ) -> None:
        super().__init__(account_id, on_inbound)
        if AsyncWebClient is None:
            raise MissingExtra("slack", "the Slack channel")
        self.settings = settings
        self._media_dir = media_dir
        self._web: AsyncWebClient | None = None
        self._socket: SocketModeClient | None = None
        self._verifier = (
            SignatureVerifier(settings.signingSecret) if settings.signingSecret and not settings.socket_mode else None
        )
        env = env or ChannelEnvironment.alone(self.name, account_id, on_inbound)
        self._inbound = env.pipeline(self._handle, _conversation)  # each conversation in order, side by side
        self._threads: set[tuple[str, str]] = set()  # (channel, thread_ts) the bot takes part in
        self._dms: dict[str, str] = {}  # user id -> DM channel id
        self._names: dict[str, str | None] = {}
        self._reactions: dict[tuple[str, str], set[str]] = {}  # (channel, ts) -> names we reacted with
        self.bot_user_id = ""
        self.bot_id = ""

    @staticmethod
    def configured(settings: dict[str, Any]) -> bool:
        """Any of the account's own keys set: a half-filled account fails with the field named, not skipped."""
        return any(settings.get(k) for k in ("botToken", "appToken", "signingSecret"))

    @classmethod
    def from_config(cls, account_id: str, settings: dict[str, Any], env: ChannelEnvironment) -> SlackChannel:
        return cls(account_id, env.receive, parse_config(settings), media_dir=env.media_dir, env=env)

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Check the bot token (``auth.test``), then open Socket Mode when an app token is set."""
        web = AsyncWebClient(token=self.settings.botToken, base_url=self.settings.apiBase, timeout=30)
        me = await self._call("auth.test", "", web.auth_test())
        self.bot_user_id, self.bot_id = str(me.get("user_id") or ""), str(me.get("bot_id") or "")
        self._web = web
        if self.settings.socket_mode:
            socket = SocketModeClient(
                app_token=self.settings.appToken or "",
                web_client=AsyncWebClient(base_url=self.settings.apiBase, timeout=30),
                ping_interval=10,
            )
            socket.socket_mode_request_listeners.append(self._on_envelope)
            try:
                await socket.connect()
            except SlackApiError as exc:
                await socket.close()
                self._web = None
                raise ChannelError(
                    f"slack account {self.account_id}: the app token was refused ({exc.response.get('error')})",
                    details={"field": "appToken"},
                ) from exc
            except (SlackClientError, aiohttp.ClientError, OSError, TimeoutError) as exc:
                await socket.close()
                self._web = None
                raise ChannelUnavailable(f"slack account {self.account_id}: Socket Mode: {exc}") from exc
            self._socket = socket
        await self._inbound.replay()
        log.info("slack bot started", account=self.account_id, user=self.bot_user_id,
                 mode="socket" if self._socket else "http")

    async def stop(self) -> None:
        socket, self._socket = self._socket, None
        if socket is not None:
            with contextlib.suppress(Exception):
                await socket.close()
        await self._inbound.stop()  # an event cut off here stays unhandled in the journal: replayed at next start
        self._web = None

    def _live(self) -> AsyncWebClient:
        if self._web is None:
            raise ChannelNotLinked(f"slack account {self.account_id} is not running")
        return self._web

    # -- inbound: the two transports ----------------------------------------------------------------

    async def _on_envelope(self, client: Any, req: SocketModeRequest) -> None:
        """A Socket Mode envelope: acknowledged at once (Slack redelivers otherwise), then handled."""
        await client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
        try:
            await self._accept(req.type, req.payload or {})
        except Exception:
            log.exception("slack envelope not handled", account=self.account_id, type=req.type)

    async def handle_webhook(self, request: Any) -> Any:
        """The Events API and interactivity over HTTP: signed requests only."""
        from starlette.responses import JSONResponse, PlainTextResponse, Response

        if self._verifier is None:
            refused = {"ok": False, "error": "this Slack account takes events over Socket Mode, not HTTP"}
            return JSONResponse(refused, status_code=404)
        if self._web is None:
            return JSONResponse({"ok": False, "error": "this account is not running"}, status_code=503)
        body = await request.body()
        headers = request.headers
        if not self._verifier.is_valid(
            body, headers.get("X-Slack-Request-Timestamp", ""), headers.get("X-Slack-Signature", "")
        ):
            log.warning("slack webhook with a bad or stale signature", account=self.account_id)
            return JSONResponse({"ok": False, "error": "bad signature"}, status_code=401)
        try:
            if "application/x-www-form-urlencoded" in headers.get("content-type", ""):
                kind, data = "interactive", json.loads(parse_qs(body.decode())["payload"][0])
            else:
                data = json.loads(body)
                kind = "events_api"
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except (ValueError, KeyError, UnicodeDecodeError):
            return JSONResponse({"ok": False, "error": "body is not a Slack event or payload"}, status_code=400)
        if data.get("type") == "url_verification":
            return PlainTextResponse(str(data.get("challenge") or ""))
        try:
            await self._accept(kind, data)
        except Exception:  # not acknowledged: Slack sends it again
            log.exception("slack webhook not stored", account=self.account_id)
            return JSONResponse({"ok": False, "error": "not stored; retry"}, status_code=503)
        return Response(status_code=200)

    async def _accept(self, kind: str, data: dict[str, Any]) -> None:
        """Write the event down (once: redeliveries and a message's twin ``app_mention`` are dropped), then hand
        it to its conversation's queue."""
        if kind == "events_api" and data.get("type") == "event_callback":
            event = data.get("event") or {}
            if not self._wanted(event):
                return
            key = f"{event['channel']}:{event['ts']}"
        elif kind == "interactive" and data.get("type") == "block_actions":
            action = (data.get("actions") or [{}])[0]
            if not action.get("value"):
                return
            key = f"action:{action.get('action_ts') or time.time()}:{(data.get('user') or {}).get('id')}"
        else:
            return
        await self._inbound.receive(key, {"kind": kind, "data": data})

    async def _handle(self, payload: Payload) -> None:
        """The pipeline's step: a message or a button press, mapped and handed to the gateway."""
        data = payload["data"]
        inbound = await (self._press(data) if payload["kind"] == "interactive" else self._to_inbound(data["event"]))
        if inbound is not None:
            await self.on_inbound(inbound)

    # -- inbound: what an event means ---------------------------------------------------------------

    def _wanted(self, event: dict[str, Any]) -> bool:
        """A person's new message (or mention); not edits, deletions, joins, nor any bot (ours or another:
        answering other bots could loop forever)."""
        if event.get("type") not in ("message", "app_mention") or not event.get("channel") or not event.get("ts"):
            return False
        if event.get("bot_id") or event.get("subtype") not in _HANDLED_SUBTYPES:
            return False
        return bool(event.get("user")) and event.get("user") != self.bot_user_id

    async def _to_inbound(self, event: dict[str, Any]) -> Inbound | None:
        channel, ts = str(event["channel"]), str(event["ts"])
        kind = event.get("channel_type") or ("im" if channel.startswith("D") else "channel")
        chat_type: ChatType = "dm" if kind == "im" else "group"
        thread = str(event["thread_ts"]) if event.get("thread_ts") and event.get("thread_ts") != ts else None
        text = str(event.get("text") or "")
        mention = re.compile(rf"<@{re.escape(self.bot_user_id)}(\|[^>]*)?>\s*:?\s*") if self.bot_user_id else None
        mentioned = chat_type == "dm" or event.get("type") == "app_mention"
        if mention is not None and mention.search(text):
            mentioned = True
            text = mention.sub("", text)
        if mentioned and chat_type == "group":
            self._threads.add((channel, thread or ts))  # the answer may open a thread under this message
        elif thread and chat_type == "group":
            mentioned = await self._in_thread(channel, thread)
        media = [await self._media(f, ts) for f in event.get("files") or [] if isinstance(f, dict)]
        user = str(event["user"])
        return Inbound(
            channel=self.name,
            account_id=self.account_id,
            sender_id=user,
            sender_name=await self._name(user),
            chat_id=channel,
            chat_type=chat_type,
            message_id=ts,
            text=_from_slack(text).strip(),
            thread_id=thread,
            media=tuple(media),
            mentioned=mentioned,
            ts=float(ts),
            raw=event,
        )

    async def _in_thread(self, channel: str, thread: str) -> bool:
        """Whether the bot took part in this thread: known since start, else looked up once it is asked."""
        if (channel, thread) in self._threads:
            return True
        with contextlib.suppress(Exception):
            got = await self._live().conversations_replies(channel=channel, ts=thread, limit=200)
            for m in got.get("messages") or []:
                if m.get("user") == self.bot_user_id or (self.bot_id and m.get("bot_id") == self.bot_id) or (
                    self.bot_user_id and f"<@{self.bot_user_id}" in str(m.get("text") or "")
                ):
                    self._threads.add((channel, thread))
                    return True
        return False

    async def _name(self, user: str) -> str | None:
        if user not in self._names:
            name = None
            with contextlib.suppress(Exception):
                got = (await self._live().users_info(user=user)).get("user") or {}
                profile = got.get("profile") or {}
                name = profile.get("display_name") or got.get("real_name") or got.get("name") or None
            self._names[user] = name
        return self._names[user]

    async def _media(self, f: dict[str, Any], ts: str) -> Media:
        mime = str(f.get("mimetype") or "") or None
        major = (mime or "").split("/", 1)[0]
        kind: MediaKind = {"image": "photo", "video": "video", "audio": "audio"}.get(major, "file")  # type: ignore[assignment]
        if kind == "audio" and (f.get("subtype") == "slack_audio" or "ogg" in (mime or "") or "opus" in (mime or "")):
            kind = "voice"  # a voice clip recorded in Slack (or an OGG/Opus note): transcribed like Telegram's
        elif kind == "video" and f.get("subtype") == "slack_audio":
            kind = "voice"  # Slack records voice clips as audio-only video/mp4 or webm
        name = str(f.get("name") or f.get("title") or "") or None
        return Media(kind=kind, path=await self._download(f, name, ts), mime=mime, name=name, size=f.get("size"))

    async def _download(self, f: dict[str, Any], name: str | None, ts: str) -> str | None:
        """Fetch a shared file with the bot token (``url_private``), only from Slack's own hosts."""
        url = f.get("url_private_download") or f.get("url_private")
        if self._media_dir is None or not isinstance(url, str):
            return None
        host = urlsplit(url).hostname or ""
        allowed = {*self.settings.fileHosts, urlsplit(self.settings.apiBase).hostname or ""}
        if host not in allowed or int(f.get("size") or 0) > MAX_DOWNLOAD_BYTES:
            log.warning("slack file not downloaded", account=self.account_id, host=host, size=f.get("size"))
            return None
        try:
            auth = {"Authorization": f"Bearer {self.settings.botToken}"}
            timeout = aiohttp.ClientTimeout(total=120)
            async with aiohttp.ClientSession(timeout=timeout) as http, http.get(url, headers=auth) as resp:
                if resp.status != 200:
                    log.warning("slack file download refused", account=self.account_id, status=resp.status)
                    return None
                body = await resp.content.read(MAX_DOWNLOAD_BYTES + 1)
            if len(body) > MAX_DOWNLOAD_BYTES:
                return None
            suffix = Path(name or "").suffix or mimetypes.guess_extension(str(f.get("mimetype") or "")) or ".bin"
            safe = re.sub(r"[^A-Za-z0-9_-]", "_", f"{ts}-{f.get('id') or ''}")[-64:]
            path = self._media_dir / f"{safe}{suffix}"
            await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
            await asyncio.to_thread(path.write_bytes, body)
            return str(path)
        except Exception as exc:
            log.warning("slack file download failed", account=self.account_id, error=str(exc))
            return None

    async def _press(self, data: dict[str, Any]) -> Inbound | None:
        """A button press: the presser typing the button's value, in the conversation (and thread) it was in."""
        user = data.get("user") or {}
        action = (data.get("actions") or [{}])[0]
        container = data.get("container") or {}
        channel = str((data.get("channel") or {}).get("id") or container.get("channel_id") or "")
        if not channel or not user.get("id") or user.get("id") == self.bot_user_id:
            return None
        message = data.get("message") or {}
        thread = container.get("thread_ts") or message.get("thread_ts")
        thread = str(thread) if thread and thread != message.get("ts") else None
        return Inbound(
            channel=self.name,
            account_id=self.account_id,
            sender_id=str(user["id"]),
            sender_name=user.get("name") or user.get("username") or await self._name(str(user["id"])),
            chat_id=channel,
            chat_type="dm" if channel.startswith("D") else "group",
            message_id=f"action-{action.get('action_ts') or ''}",
            text=str(action.get("value") or ""),
            thread_id=thread,
            mentioned=True,
            ts=float(action.get("action_ts") or time.time()),
            raw=data,
        )

    # -- outbound ---------------------------------------------------------------------------------

    def _error(self, op: str, exc: SlackApiError, target: str) -> Exception:
        code = str(exc.response.get("error") or "")
        details = {"channel": "slack", "operation": op, "to": target, "error": code}
        if code == "ratelimited" or exc.response.status_code == 429:
            retry_s = float(exc.response.headers.get("Retry-After") or exc.response.headers.get("retry-after") or 1)
            return ChannelUnavailable(
                f"slack rate limit on {op}: retry after {retry_s:g} s",
                retryable=True,
                retry_after_ms=int(retry_s * 1000),
                details=details,
            )
        if code in _TARGET_GONE:
            return TargetNotFound(f"slack {op}: {code} ({target})", details={**details, "code": "TARGET_NOT_FOUND"})
        if code in _REFUSED:
            return ChannelForbidden(
                f"slack refused {op} in {target}: {code}", details={**details, "code": "CHANNEL_FORBIDDEN"}
            )
        if code in _TOKEN_GONE:
            return ChannelError(
                f"slack account {self.account_id}: the bot token was refused ({code})",
                details={**details, "field": "botToken"},
            )
        return ChannelError(f"slack {op} failed: {code or exc}", details=details)

    async def _call(self, op: str, target: str, coro: Any) -> Any:
        try:
            return await coro
        except SlackApiError as exc:
            raise self._error(op, exc, target) from exc
        except (SlackClientError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise ChannelUnavailable(f"slack {op}: cannot reach Slack: {exc}", retryable=True) from exc

    async def _conversation(self, to: str) -> str:
        """A conversation id for ``to``: a channel/DM id as it is, a user id's DM (opened if need be)."""
        target = to.strip()
        if _CHANNEL_ID.fullmatch(target):
            return target
        if not _USER_ID.fullmatch(target):
            raise TargetNotFound(
                f"slack: not a conversation or user id: {to!r} (C…, D…, G… or U…)",
                details={"field": "to", "to": to},
            )
        if target not in self._dms:
            got = await self._call("conversations.open", to, self._live().conversations_open(users=target))
            self._dms[target] = str((got.get("channel") or {}).get("id"))
        return self._dms[target]

    async def _post(self, to: str, text: str, thread_ts: str | None, blocks: list[dict[str, Any]] | None) -> Sent:
        if len(text) > HARD_LIMIT:
            raise ChannelError(f"slack messages are at most {HARD_LIMIT} characters", details={"field": "message"})
        channel = await self._conversation(to)
        args: dict[str, Any] = {"channel": channel, "text": to_mrkdwn(text), "unfurl_links": False}
        if thread_ts:
            args["thread_ts"] = thread_ts
        if blocks is not None:
            args["blocks"] = blocks
        got = await self._call("chat.postMessage", to, self._live().chat_postMessage(**args))
        if thread_ts and not channel.startswith("D"):
            self._threads.add((channel, thread_ts))  # people answering in this thread are talking to the bot
        return Sent(message_id=str(got["ts"]), chat_id=str(got.get("channel") or channel), thread_id=thread_ts)

    async def send(
        self,
        to: str,
        text: str,
        *,
        thread_id: str | None = None,
        reply_to_id: str | None = None,
        effect_id: str | None = None,
        silent: bool = False,
    ) -> Sent:
        # A reply is a thread reply under the message replied to: Slack has no other kind.
        thread = _ts(thread_id, "threadId") if thread_id else _ts(reply_to_id, "replyToId") if reply_to_id else None
        return await self._post(to, text, thread, None)

    async def send_buttons(
        self, to: str, text: str, buttons: list[tuple[str, str]], *, thread_id: str | None = None
    ) -> Sent | None:
        elements = [
            {
                "type": "button",
                "action_id": f"rc-{i}",
                "text": {"type": "plain_text", "text": label[:75] or "?", "emoji": True},
                "value": data[:BUTTON_VALUE_LIMIT],
            }
            for i, (label, data) in enumerate(buttons[:25])
        ]
        blocks: list[dict[str, Any]] = [
            {"type": "section", "text": {"type": "mrkdwn", "text": to_mrkdwn(text)[:SECTION_LIMIT]}},
            {"type": "actions", "elements": elements},
        ]
        return await self._post(to, text, _ts(thread_id, "threadId") if thread_id else None, blocks)

    async def edit(self, to: str, message_id: str, text: str, *, thread_id: str | None = None) -> None:
        if len(text) > HARD_LIMIT:
            raise ChannelError(f"slack messages are at most {HARD_LIMIT} characters", details={"field": "message"})
        channel = await self._conversation(to)
        # blocks=[]: buttons (if the message had any) go, leaving the new text alone.
        await self._call(
            "chat.update",
            to,
            self._live().chat_update(channel=channel, ts=_ts(message_id, "messageId"), text=to_mrkdwn(text), blocks=[]),
        )

    async def delete(self, to: str, message_id: str, *, thread_id: str | None = None) -> None:
        channel = await self._conversation(to)
        await self._call("chat.delete", to, self._live().chat_delete(channel=channel, ts=_ts(message_id, "messageId")))

    async def react(self, to: str, message_id: str, emoji: str) -> None:
        channel = await self._conversation(to)
        ts = _ts(message_id, "messageId")
        mine = self._reactions.setdefault((channel, ts), set())
        if not emoji:  # remove ours
            for name in list(mine):
                with contextlib.suppress(ChannelError):
                    await self._call(
                        "reactions.remove", to, self._live().reactions_remove(channel=channel, timestamp=ts, name=name)
                    )
                mine.discard(name)
            return
        name = emoji_name(emoji)
        try:
            await self._call("reactions.add", to, self._live().reactions_add(channel=channel, timestamp=ts, name=name))
        except ChannelError as exc:
            if (exc.details or {}).get("error") != "already_reacted":
                raise
        mine.add(name)

    async def pin(self, to: str, message_id: str) -> None:
        channel = await self._conversation(to)
        try:
            ts = _ts(message_id, "messageId")
            await self._call("pins.add", to, self._live().pins_add(channel=channel, timestamp=ts))
        except ChannelError as exc:
            if (exc.details or {}).get("error") != "already_pinned":
                raise

    async def read_history(self, to: str, *, limit: int, thread_id: str | None = None) -> list[dict[str, Any]] | None:
        """The conversation (or thread) as Slack keeps it, oldest first, in the gateway's history shape."""
        channel = await self._conversation(to)
        web = self._live()
        limit = max(1, min(limit, 200))
        if thread_id:
            got = await self._call(
                "conversations.replies", to,
                web.conversations_replies(channel=channel, ts=_ts(thread_id, "threadId"), limit=limit),
            )
        else:
            got = await self._call("conversations.history", to, web.conversations_history(channel=channel, limit=limit))
        messages = sorted(got.get("messages") or [], key=lambda m: float(m.get("ts") or 0))[-limit:]
        out: list[dict[str, Any]] = []
        for m in messages:
            ours = m.get("user") == self.bot_user_id or (bool(self.bot_id) and m.get("bot_id") == self.bot_id)
            item: dict[str, Any] = {
                "id": m.get("ts"),
                "direction": "out" if ours else "in",
                "from": "bot" if ours else m.get("user") or m.get("bot_id"),
                "text": _from_slack(str(m.get("text") or "")),
                "ts": int(float(m.get("ts") or 0) * 1000),
            }
            if m.get("thread_ts") and m.get("thread_ts") != m.get("ts"):
                item["threadId"] = m["thread_ts"]
            out.append(item)
        return out

    async def send_attachment(
        self, to: str, file: str | FileBytes, *, caption: str | None = None, thread_id: str | None = None
    ) -> Sent:
        if isinstance(file, str) and file.startswith(("http://", "https://")):
            raise ChannelError(
                "slack: attachments are uploaded from a local file; download the URL first", details={"field": "file"}
            )
        channel = await self._conversation(to)
        upload = await asyncio.to_thread(upload_of, file)  # read once, by descriptor
        data, name = upload.data, upload.name
        thread = _ts(thread_id, "threadId") if thread_id else None
        args: dict[str, Any] = {"channel": channel, "file": data, "filename": name, "title": name}
        if caption:
            args["initial_comment"] = to_mrkdwn(caption)
        if thread:
            args["thread_ts"] = thread
        got = await self._call("files.upload", to, self._live().files_upload_v2(**args))
        uploaded = got.get("file") or {}
        # The share's message ts when Slack already reports it; the file id otherwise (the share is made later).
        shares = uploaded.get("shares") or {}
        ts = next((s[0].get("ts") for kind in shares.values() for c, s in kind.items() if c == channel and s), None)
        return Sent(message_id=str(ts or uploaded.get("id") or ""), chat_id=channel, thread_id=thread)


def _conversation(payload: Payload) -> str:
    """The Slack conversation an event or a press belongs to."""
    data = payload["data"]
    return str((data.get("event") or {}).get("channel") or (data.get("channel") or {}).get("id") or "")
