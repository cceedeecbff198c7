"""Discord as a channel, through discord.py: DMs, guild channels, threads, reactions, pins, files.

One ``DiscordChannel`` is one bot account. It logs in with the bot token, keeps discord.py's
gateway connection running in a background task (discord.py reconnects by itself), turns
``MESSAGE_CREATE`` into ``Inbound`` and performs outbound operations by channel id, so it
works for channels it has never seen (no cache needed).

Targets (``to``): ``channel:<id>`` or a bare ``<id>`` is a channel (guild text channel, thread
or DM channel); ``user:<id>`` opens (or reuses) the DM channel with that user. A ``thread_id``
sends into that thread instead of ``to``: Discord threads are channels of their own.

**Inbound.** Every message and button press goes through the inbound pipeline (``channels.pipeline``): written
to the gateway's journal as it arrives (a message by its channel and id, a press with all it carries), handled
in order per conversation, marked done, and replayed at the next start if the gateway stopped in between (a
replayed message is fetched again by id; one deleted meanwhile is dropped).

**After a crash.** Discord does not redeliver: a message that arrived while the gateway was down exists only
in the channel's history. So at every fresh session
(``READY``, not a ``RESUME``, which replays missed events itself) the channel reads, for every conversation
it has handled a message in, the history after the last message handled (``GET /channels/{id}/messages
?after=``, at most ``CATCH_UP_LIMIT`` per conversation, oldest first) and hands each message to the usual
inbound path. The journal drops a message it has seen, and the message log hands one out only if it was never
handled, so each is answered once even if it also arrives live. A conversation the bot never handled anything
in has no point to resume from and is not read.

**Buttons.** An approval or a question comes with message components (``send_buttons``): one button per
choice, its ``custom_id`` the text a press types. A press is an ``INTERACTION_CREATE`` (a component
interaction) that discord.py hands to ``on_interaction``; it is acknowledged at once (a deferred update, so
Discord shows no "interaction failed") and becomes an inbound message from the presser whose text is the
button's ``custom_id``, as if they had typed it. No ``discord.ui.View`` is kept in memory for them, so a
press after a restart still arrives (and is told its request has ended).

``apiBase`` and ``gatewayUrl`` exist for tests and proxies. discord.py keeps both as class
attributes, so they apply to every Discord account in this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

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
from channels.chunking import split_text
from channels.environment import ChannelEnvironment
from channels.fetch import FetchRefused, fetch_public
from channels.files import upload_of
from channels.pipeline import Payload
from gateway.extras import MissingExtra
from gateway.platforms import ChatType, FileBytes

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # discord.py warns about audioop (voice) on import; we never use voice
    try:
        import aiohttp
        import discord
        import yarl
    except ImportError:  # pragma: no cover - exercised only without the extra
        discord = None  # type: ignore[assignment]

__all__ = ["DiscordChannel", "MessageHistory"]


class MessageHistory(Protocol):
    """What the catch-up needs of the gateway's message log (``PlatformHost.history``)."""

    async def last_handled(self, channel: str, account_id: str) -> dict[str, str]: ...

log = structlog.get_logger("channels.discord")

TEXT_LIMIT = 2000
MAX_UPLOAD_BYTES = 25 * 1024 * 1024
MAX_DOWNLOAD_BYTES = 25 * 1024 * 1024  # inbound attachments larger than this are passed by URL only
RATE_LIMIT_WAIT_S = 30.0  # the shortest limit discord.py accepts; longer 429 waits fail the call instead
CATCH_UP_LIMIT = 100  # messages read back per conversation after a restart (one page of Discord's history)
_TARGET = re.compile(r"^(?:(channel|user):)?(\d{1,20})$")
CUSTOM_ID_LIMIT = 100  # Discord's limits on a button: its custom_id and its label
LABEL_LIMIT = 80
MAX_BUTTONS = 25  # five rows of five


def _read_upload(file: str | FileBytes) -> tuple[str, bytes]:
    """Name and bytes of a local file to upload (read once: ``upload_of``); refuses files over 25 MiB."""
    if isinstance(file, str) and not Path(file).expanduser().exists():  # a path given to the channel directly
        raise ChannelError(f"discord sendAttachment: no such file: {file}", details={"field": "file"})
    try:
        got = upload_of(file)
    except ChannelError as exc:
        raise ChannelError(f"discord sendAttachment: {exc.message}", details={"field": "file"}) from None
    if len(got.data) > MAX_UPLOAD_BYTES:
        raise ChannelError(f"discord sendAttachment: {got.name} is {len(got.data)} bytes; the limit is 25 MiB",
                           details={"field": "file"})
    return got.name, got.data


async def _download(url: str) -> tuple[str, bytes]:
    """Fetch an http(s) attachment (Discord takes uploads only): public hosts only, at most 25 MiB."""
    try:
        return await fetch_public(url, max_bytes=MAX_UPLOAD_BYTES)
    except FetchRefused as exc:
        raise ChannelError(f"discord sendAttachment: {exc}", details={"field": "file"}) from exc


def _safe_name(name: str) -> str:
    """A file name that is safe on any disk: Discord passes on whatever the sender's file was called."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:100] or "file"


def _media_kind(content_type: str | None, is_voice: bool) -> str:
    if is_voice:
        return "voice"
    major = (content_type or "").split("/", 1)[0]
    return {"image": "photo", "audio": "audio", "video": "video"}.get(major, "file")


def _button_style(data: str) -> Any:
    """Green for allowing, red for denying, grey for anything else (an option of a question)."""
    if data.endswith(" deny"):
        return discord.ButtonStyle.danger
    if data.endswith((" allow-once", " allow-always")):
        return discord.ButtonStyle.success
    return discord.ButtonStyle.secondary


class DiscordChannel(Channel):
    """One Discord bot account."""

    name = "discord"
    text_limit = TEXT_LIMIT
    typing_lasts_s = 10.0
    capabilities = frozenset({
        Capability.SEND, Capability.REPLY, Capability.THREAD_REPLY, Capability.REACT, Capability.DELETE,
        Capability.ATTACHMENT, Capability.PIN, Capability.READ, Capability.TYPING, Capability.EDIT,
    })

    def __init__(self, account_id: str, on_inbound: InboundHandler, *, token: str,
                 api_base: str | None = None, gateway_url: str | None = None, allow_bots: bool = False,
                 ready_timeout: float = 30.0, media_dir: Path | None = None,
                 history: MessageHistory | None = None, env: ChannelEnvironment | None = None) -> None:
        super().__init__(account_id, on_inbound)
        if discord is None:
            raise MissingExtra("discord", "the Discord channel")
        if not token or not token.strip():
            raise ChannelError("channels.discord: token is required (the bot token from the Developer Portal)")
        self._token = token.strip()
        self._api_base = api_base.rstrip("/") if api_base else None
        self._gateway_url = gateway_url
        self._allow_bots = allow_bots
        self._ready_timeout = ready_timeout
        self._media_dir = media_dir
        # discord.py runs each event in its own task: the pipeline keeps each conversation in order.
        env = env or ChannelEnvironment.alone(self.name, account_id, on_inbound)
        self._inbound = env.pipeline(self._handle, lambda payload: payload["channelId"])
        self._arrived: dict[str, discord.Message] = {}  # message id -> the live message, until it is handled
        self._client: discord.Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._dm_channels: dict[int, int] = {}
        self._history = history
        self._catch_up: asyncio.Task[None] | None = None

    @classmethod
    def configured(cls, settings: dict[str, Any]) -> bool:
        """The manager skips accounts without a token instead of failing them."""
        return bool(str(settings.get("token") or "").strip())

    @classmethod
    def from_config(cls, account_id: str, settings: dict[str, Any], env: ChannelEnvironment) -> DiscordChannel:
        """Build from a ``channels.discord`` (or one of its ``accounts``) config mapping."""
        return cls(account_id, env.receive, token=str(settings.get("token") or ""), api_base=settings.get("apiBase"),
                   gateway_url=settings.get("gatewayUrl"), allow_bots=bool(settings.get("allowBots", False)),
                   ready_timeout=float(settings.get("readyTimeoutSeconds", 30.0)),
                   media_dir=env.media_dir, history=env.history, env=env)

    # -- lifecycle --------------------------------------------------------------------------------

    @property
    def bot_user_id(self) -> str | None:
        user = self._client.user if self._client else None
        return str(user.id) if user else None

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    async def start(self) -> None:
        """Log in (a bad token fails here, clearly) and start listening in the background."""
        if self._api_base:
            discord.http.Route.BASE = self._api_base
        if self._gateway_url:
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self._gateway_url)
        intents = discord.Intents.default()
        intents.message_content = True
        # discord.py waits out 429s itself; past RATE_LIMIT_WAIT_S it raises instead, so a tool call
        # answers "retry after" rather than hanging on a long bucket.
        client = _Client(self, intents=intents, guild_ready_timeout=0.5 if self._gateway_url else 2.0,
                         max_ratelimit_timeout=RATE_LIMIT_WAIT_S)
        self._client = client
        try:
            await client.login(self._token)
        except discord.LoginFailure as exc:
            await client.close()
            raise ChannelError(f"discord account {self.account_id}: the bot token was refused") from exc
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            await client.close()
            raise ChannelUnavailable(f"discord account {self.account_id}: cannot log in: {exc}") from exc
        await self._inbound.replay()  # what the last run took in but did not finish; sends wait for the gateway below
        self._task = asyncio.create_task(self._run(client), name=f"discord-{self.account_id}")
        try:
            await asyncio.wait_for(self._ready.wait(), self._ready_timeout)
        except TimeoutError:
            log.warning("discord gateway not ready yet; continuing in the background", account=self.account_id)

    async def _run(self, client: discord.Client) -> None:
        try:
            await client.connect(reconnect=True)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("discord connection ended", account=self.account_id)

    async def stop(self) -> None:
        if self._catch_up is not None:
            self._catch_up.cancel()
        await self._inbound.stop()  # what this cuts off stays unhandled in the journal: replayed at the next start
        self._arrived.clear()
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        self._ready.clear()

    def _live(self) -> discord.Client:
        if self._client is None or self._client.is_closed():
            raise ChannelNotLinked(f"discord account {self.account_id} is not running")
        return self._client

    # -- inbound ----------------------------------------------------------------------------------

    async def _on_message(self, message: discord.Message) -> None:
        client = self._client
        if client is None or client.user is None or message.author.id == client.user.id:
            return
        if message.author.bot and not self._allow_bots:
            return
        key = str(message.id)
        self._arrived[key] = message
        try:
            if not await self._inbound.receive(key, {"kind": "message", "channelId": str(message.channel.id),
                                                     "messageId": key}):
                self._arrived.pop(key, None)
        except Exception:  # not written down: the catch-up after the next fresh session reads it from history
            self._arrived.pop(key, None)
            log.exception("inbound discord message not written down", account=self.account_id, message_id=key)

    async def _handle(self, payload: Payload) -> None:
        """The pipeline's step: a message (the live one, or fetched again after a restart) or a button press."""
        if payload.get("kind") == "press":
            await self.on_inbound(Inbound(**payload["inbound"]))
            return
        client = self._live()
        me = client.user
        if me is None:
            raise ChannelNotLinked(f"discord account {self.account_id} is not logged in yet")
        message = self._arrived.pop(str(payload["messageId"]), None) or await self._refetch(payload)
        if message is None:
            return
        paths = {a.id: await self._download_attachment(a) for a in message.attachments}
        await self.on_inbound(self._to_inbound(message, me, paths))

    async def _refetch(self, payload: Payload) -> discord.Message | None:
        """A journalled message read again by id (replayed after a restart); None when it was deleted since."""
        await asyncio.wait_for(self._ready.wait(), self._ready_timeout)
        client = self._live()
        channel_id = int(payload["channelId"])
        channel = client.get_channel(channel_id) or await client.fetch_channel(channel_id)
        try:
            return await channel.fetch_message(int(payload["messageId"]))  # type: ignore[union-attr]
        except discord.NotFound:
            log.info("a journalled discord message was deleted before it was handled", account=self.account_id,
                     message_id=payload["messageId"])
            return None

    async def _on_press(self, interaction: discord.Interaction) -> None:
        """A button press: acknowledged at once, then handled as the presser typing the button's ``custom_id``."""
        if interaction.type is not discord.InteractionType.component:
            return
        data: dict[str, Any] = dict(interaction.data or {})
        custom_id = str(data.get("custom_id") or "")
        try:
            await interaction.response.defer()  # type 6, DEFERRED_UPDATE_MESSAGE: no error shown, no new message
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            log.warning("discord interaction not acknowledged", account=self.account_id, error=str(exc))
        client, presser = self._client, interaction.user
        if not custom_id or client is None or client.user is None or presser is None or presser.id == client.user.id:
            return
        channel_id = interaction.channel_id or 0
        ch = interaction.channel
        chat_id, thread_id = str(channel_id), None
        if isinstance(ch, discord.Thread):
            thread_id, chat_id = str(ch.id), str(ch.parent_id)
        chat_type: ChatType = "dm" if interaction.guild_id is None and not isinstance(ch, discord.GroupChannel) \
            else "group"
        inbound = {
            "channel": self.name, "account_id": self.account_id, "sender_id": str(presser.id),
            "sender_name": presser.display_name, "chat_id": chat_id, "chat_type": chat_type,
            "message_id": f"ix-{interaction.id}", "text": custom_id, "thread_id": thread_id, "mentioned": True,
            "ts": interaction.created_at.timestamp(),
            "raw": {"guildId": str(interaction.guild_id) if interaction.guild_id else None,
                    "channelId": str(channel_id), "interactionId": str(interaction.id),
                    "messageId": str(interaction.message.id) if interaction.message else None}}
        try:
            await self._inbound.receive(f"ix-{interaction.id}", {"kind": "press", "channelId": str(channel_id),
                                                                 "inbound": inbound})
        except Exception:
            log.exception("discord button press not written down", account=self.account_id,
                          interaction_id=interaction.id)

    def _start_catch_up(self) -> None:
        """At a fresh session: read what was missed while no session was open (see the module docstring)."""
        if self._history is None or (self._catch_up is not None and not self._catch_up.done()):
            return
        self._catch_up = asyncio.create_task(self._read_missed(), name=f"discord-catch-up-{self.account_id}")

    async def _read_missed(self) -> None:
        assert self._history is not None
        try:
            points = await self._history.last_handled(self.name, self.account_id)
        except Exception:
            log.exception("discord catch-up: cannot read where to resume", account=self.account_id)
            return
        for conversation, last in points.items():
            try:
                client = self._live()
                channel = client.get_channel(int(conversation)) or await client.fetch_channel(int(conversation))
                missed = [m async for m in channel.history(  # type: ignore[union-attr]
                    after=discord.Object(int(last)), limit=CATCH_UP_LIMIT, oldest_first=True)]
            except (discord.HTTPException, aiohttp.ClientError, OSError, ValueError, ChannelError) as exc:
                log.warning("discord catch-up: cannot read a conversation's history", account=self.account_id,
                            channel_id=conversation, error=str(exc))
                continue
            if missed:
                log.info("discord catch-up: reading messages missed while away", account=self.account_id,
                         channel_id=conversation, count=len(missed))
            for message in missed:
                await self._on_message(message)

    async def _download_attachment(self, attachment: discord.Attachment) -> str | None:
        """Save an inbound attachment in the state dir so the agent can read it; None when it cannot be had."""
        if self._media_dir is None or attachment.size > MAX_DOWNLOAD_BYTES:
            return None
        path = self._media_dir / f"{attachment.id}-{_safe_name(attachment.filename)}"
        try:
            await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
            await attachment.save(path)
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            log.warning("discord attachment download failed", account=self.account_id, error=str(exc))
            return None
        return str(path)

    def _to_inbound(self, message: discord.Message, me: discord.ClientUser,
                    paths: dict[int, str | None] | None = None) -> Inbound:
        ch = message.channel
        thread_id: str | None = None
        chat_id = str(ch.id)
        if isinstance(ch, discord.Thread):
            thread_id, chat_id = str(ch.id), str(ch.parent_id)
        if isinstance(ch, discord.DMChannel) or (message.guild is None and not isinstance(ch, discord.GroupChannel)):
            chat_type: ChatType = "dm"
        else:
            chat_type = "group"
        resolved = message.reference.resolved if message.reference else None
        # A reply to one of the bot's messages counts as addressing it, even with the ping turned off.
        mentioned = any(u.id == me.id for u in message.mentions) or (
            isinstance(resolved, discord.Message) and resolved.author.id == me.id)
        text = re.sub(rf"<@!?{me.id}>\s*", "", message.content).strip() if mentioned else message.content
        is_voice = message.flags.voice if hasattr(message.flags, "voice") else False
        media = tuple(
            Media(kind=_media_kind(a.content_type, is_voice), url=a.url, mime=a.content_type,  # type: ignore[arg-type]
                  name=a.filename, size=a.size, path=(paths or {}).get(a.id))
            for a in message.attachments
        )
        ref = message.reference
        return Inbound(
            channel=self.name,
            account_id=self.account_id,
            sender_id=str(message.author.id),
            sender_name=message.author.display_name,
            chat_id=chat_id,
            chat_type=chat_type,
            message_id=str(message.id),
            text=text,
            thread_id=thread_id,
            reply_to_id=str(ref.message_id) if ref and ref.message_id else None,
            media=media,
            mentioned=bool(mentioned),
            ts=message.created_at.timestamp(),
            raw={"guildId": str(message.guild.id) if message.guild else None, "channelId": str(ch.id),
                 "authorIsBot": message.author.bot},
        )

    # -- outbound ---------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _errors(self, what: str, target: str) -> AsyncIterator[None]:
        """Turn discord.py and network errors into our channel errors, naming the operation and target."""
        try:
            yield
        except discord.NotFound as exc:
            raise TargetNotFound(f"discord {what}: {target} not found ({exc.text or exc.status})",
                                 details={"channel": self.name, "to": target}) from exc
        except discord.Forbidden as exc:
            raise ChannelForbidden(f"discord {what}: the bot may not do that in {target} ({exc.text or exc.status})",
                                   details={"code": "CHANNEL_FORBIDDEN", "channel": self.name, "to": target}) from exc
        except discord.RateLimited as exc:  # longer than we are willing to hold a call open
            raise ChannelUnavailable(f"discord rate limit on {what}: retry after {exc.retry_after:g}s",
                                     retryable=True, retry_after_ms=int(exc.retry_after * 1000),
                                     details={"channel": self.name, "operation": what}) from exc
        except discord.HTTPException as exc:
            if exc.status == 429 or exc.status >= 500:
                raise ChannelUnavailable(f"discord {what} failed: HTTP {exc.status} {exc.text}",
                                         retryable=True) from exc
            raise ChannelError(f"discord {what}: {exc.text or exc.status}",
                               details={"channel": self.name, "to": target}) from exc
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise ChannelUnavailable(f"discord {what}: cannot reach Discord: {exc}", retryable=True) from exc

    async def _channel_id(self, to: str, thread_id: str | None = None) -> int:
        """Resolve a target to a channel id, opening a DM channel for ``user:<id>``."""
        if thread_id:
            return self._snowflake(thread_id, "threadId")
        m = _TARGET.match(to.strip())
        if not m:
            raise ChannelError(f"invalid discord target {to!r}: use channel:<id>, user:<id> or a channel id",
                               details={"field": "to"})
        kind, ident = m.group(1) or "channel", int(m.group(2))
        if kind == "channel":
            return ident
        if ident not in self._dm_channels:
            async with self._errors("open DM", to):
                dm = await self._live().create_dm(discord.Object(ident))
            self._dm_channels[ident] = dm.id
        return self._dm_channels[ident]

    @staticmethod
    def _chat_id(to: str, channel_id: int, thread_id: str | None) -> str:
        """The chat a message landed in: the resolved channel, or for a thread the parent named by ``to``."""
        if not thread_id:
            return str(channel_id)
        m = _TARGET.match(to.strip())
        return m.group(2) if m else to

    @staticmethod
    def _snowflake(value: str, field: str) -> int:
        try:
            out = int(str(value).strip())
        except ValueError:
            raise ChannelError(f"invalid discord {field} {value!r}: must be a numeric id",
                               details={"field": field}) from None
        if out <= 0:
            raise ChannelError(f"invalid discord {field} {value!r}", details={"field": field})
        return out

    async def send(self, to: str, text: str, *, thread_id: str | None = None, reply_to_id: str | None = None,
                   effect_id: str | None = None, silent: bool = False) -> Sent:
        if not text.strip():
            raise ChannelError("discord send: the message is empty", details={"field": "message"})
        channel_id = await self._channel_id(to, thread_id)
        target = self._live().get_partial_messageable(channel_id)
        first: discord.Message | None = None
        async with self._errors("send", to):
            for i, piece in enumerate(split_text(text, self.text_limit)):
                ref = None
                if i == 0 and reply_to_id:
                    ref = discord.MessageReference(message_id=self._snowflake(reply_to_id, "replyToId"),
                                                   channel_id=channel_id, fail_if_not_exists=False)
                msg = await target.send(piece, reference=ref, silent=silent,  # type: ignore[arg-type]
                                        allowed_mentions=discord.AllowedMentions(everyone=False, roles=False))
                first = first or msg
        assert first is not None
        return Sent(message_id=str(first.id), chat_id=self._chat_id(to, channel_id, thread_id), thread_id=thread_id)

    async def send_attachment(self, to: str, file: str | FileBytes, *, caption: str | None = None,
                              thread_id: str | None = None) -> Sent:
        if caption and len(caption) > self.text_limit:
            raise ChannelError(f"discord sendAttachment: caption longer than {self.text_limit} characters",
                               details={"field": "caption"})
        if isinstance(file, str) and file.startswith(("http://", "https://")):
            name, data = await _download(file)
        else:
            name, data = await asyncio.to_thread(_read_upload, file)
        channel_id = await self._channel_id(to, thread_id)
        async with self._errors("sendAttachment", to):
            msg = await self._live().get_partial_messageable(channel_id).send(
                content=caption or None, file=discord.File(io.BytesIO(data), filename=name))
        return Sent(message_id=str(msg.id), chat_id=self._chat_id(to, channel_id, thread_id), thread_id=thread_id)

    async def send_buttons(self, to: str, text: str, buttons: list[tuple[str, str]], *,
                           thread_id: str | None = None) -> Sent | None:
        """Message components, one button per choice, its ``custom_id`` the text a press types (see the module
        docstring). None (plain text instead) when a button's data is over Discord's 100 characters."""
        if not buttons or len(buttons) > MAX_BUTTONS or any(len(data) > CUSTOM_ID_LIMIT for _l, data in buttons):
            return None
        view = discord.ui.View(timeout=None)
        for label, data in buttons:
            view.add_item(discord.ui.Button(label=label[:LABEL_LIMIT], custom_id=data, style=_button_style(data)))
        view.stop()  # a finished view is not kept by discord.py: presses reach on_interaction only
        channel_id = await self._channel_id(to, thread_id)
        async with self._errors("send", to):
            msg = await self._live().get_partial_messageable(channel_id).send(
                text, view=view, allowed_mentions=discord.AllowedMentions(everyone=False, roles=False))
        return Sent(message_id=str(msg.id), chat_id=self._chat_id(to, channel_id, thread_id), thread_id=thread_id)

    def _message(self, channel_id: int, message_id: str) -> discord.PartialMessage:
        return self._live().get_partial_messageable(channel_id).get_partial_message(
            self._snowflake(message_id, "messageId"))

    async def react(self, to: str, message_id: str, emoji: str) -> None:
        channel_id = await self._channel_id(to)
        msg = self._message(channel_id, message_id)
        async with self._errors("react", to):
            if emoji:
                await msg.add_reaction(emoji.strip())
                return
            full = await msg.fetch()
            for reaction in full.reactions:
                if reaction.me:
                    await msg.remove_reaction(reaction.emoji, self._live().user)  # type: ignore[arg-type]

    async def delete(self, to: str, message_id: str, *, thread_id: str | None = None) -> None:
        channel_id = await self._channel_id(to, thread_id)  # a thread is a channel of its own
        async with self._errors("delete", to):
            await self._message(channel_id, message_id).delete()

    async def edit(self, to: str, message_id: str, text: str, *, thread_id: str | None = None) -> None:
        if not text.strip() or len(text) > TEXT_LIMIT:
            raise ChannelError(f"discord edit: the text must be 1-{TEXT_LIMIT} characters",
                               details={"field": "message"})
        channel_id = await self._channel_id(to, thread_id)
        async with self._errors("edit", to):
            # view=None takes any buttons away: an edited request shows its outcome, nothing left to press.
            await self._message(channel_id, message_id).edit(
                content=text, view=None, allowed_mentions=discord.AllowedMentions(everyone=False, roles=False))

    async def pin(self, to: str, message_id: str) -> None:
        channel_id = await self._channel_id(to)
        async with self._errors("pin", to):
            await self._message(channel_id, message_id).pin()

    async def typing(self, to: str, *, thread_id: str | None = None) -> None:
        with contextlib.suppress(Exception):
            channel_id = await self._channel_id(to, thread_id)
            await self._live().http.send_typing(channel_id)


if discord is not None:

    class _Client(discord.Client):
        """discord.py's client, forwarding the events we care about to the channel."""

        def __init__(self, owner: DiscordChannel, **kw: Any) -> None:
            super().__init__(**kw)
            self._owner = owner

        async def on_ready(self) -> None:
            log.info("discord connected", account=self._owner.account_id, user=str(self.user))
            self._owner._ready.set()
            self._owner._start_catch_up()

        async def on_resumed(self) -> None:
            log.info("discord session resumed", account=self._owner.account_id)

        async def on_message(self, message: discord.Message) -> None:
            await self._owner._on_message(message)

        async def on_interaction(self, interaction: discord.Interaction) -> None:
            await self._owner._on_press(interaction)
