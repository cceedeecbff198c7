"""Matrix as a channel, through matrix-nio (extra ``matrix``).

One ``MatrixChannel`` is one bot account on one homeserver. It logs in with an access token, or once with a
password (the session it gets is kept in the state dir so a restart reuses the same device), and runs the
``/sync`` long-poll itself rather than nio's ``sync_forever``, so it decides what happens to the first batch
and when the since-token is saved. Each event goes through the inbound pipeline (journalled) before the token
is saved past it, so a restart neither answers old messages again nor loses the ones that came while the
gateway was down or were cut off half-handled; on the very first start (no token yet) the rooms' history is
skipped.

A room of two (the bot and one person) is a DM; any larger room is a group, where the bot answers when
mentioned (``m.mentions``, its id or name in the text, a pill link) or replied to. Threads
(``rel_type: m.thread``) carry their root event id as ``thread_id``. Invites are joined when the access rules
would let the inviter in (see ``autoJoin``). With ``encryption`` on (extra ``matrix-e2e``), nio's Olm machine
decrypts events as they are synced and encrypts what is sent; the keys are kept up to date after each sync.
With it off, the bot says once in an encrypted room that it cannot read it, and ignores its encrypted events.

Outbound: Markdown as ``formatted_body`` HTML, replies (``m.in_reply_to``), thread replies, reactions
(``m.annotation``), redactions, pins (``m.room.pinned_events``), edits (``m.replace``, for live replies),
attachments through the content repository, typing notifications. Homeserver refusals become our errors:
``M_FORBIDDEN`` -> ``ChannelForbidden``, ``M_NOT_FOUND``/unknown rooms -> ``TargetNotFound``,
``M_LIMIT_EXCEEDED`` -> ``ChannelUnavailable`` with ``retry_after_ms``, network errors -> retryable.

Choices (approvals, questions): Matrix has no buttons, so ``send_buttons`` sends the text with its options
listed, then reacts to it with one key per option; a reaction with one of those keys from someone else, or a
reply to the message with an option's number, comes in as that person typing the option's data. Which message
offers which keys is kept in ``choices.json`` (the latest ``CHOICES_KEPT``), so a restart does not forget them;
the edit that settles the message takes the bot's keys off it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import mimetypes
import os
import re
import unicodedata
import uuid
from pathlib import Path
from typing import Any

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
from channels.inbound import Payload
from channels.matrix.config import MatrixAccountConfig, parse_config
from gateway.cli.extras import MissingExtra
from gateway.platforms import ChatType, FileBytes, MediaKind

try:
    import aiohttp
    import nio

    from channels.matrix.format import to_html  # markdown-it-py comes with the same extra
except ImportError:  # pragma: no cover - exercised only without the extra
    nio = None  # type: ignore[assignment]

__all__ = ["MatrixChannel"]

log = structlog.get_logger("channels.matrix")

TEXT_LIMIT = 16_000
"""Characters per message: an event may be 64 KiB, and the HTML copy of the text travels in the same event."""
MAX_DOWNLOAD_BYTES = 50 * 1024 * 1024
ENCRYPTED_TEXT = (
    "This room is end-to-end encrypted, and this assistant cannot read encrypted messages yet. "
    "Talk to it in a room without encryption."
)
_MEDIA_KINDS: dict[str, MediaKind] = {"m.image": "photo", "m.audio": "audio", "m.video": "video", "m.file": "file"}
VOICE_SUFFIXES = frozenset({".ogg", ".oga", ".opus"})
"""OGG/Opus files go out as voice messages (the spoken replies of the voice capability are such files)."""
_OUT_KINDS = {"image": "m.image", "audio": "m.audio", "video": "m.video"}
_REPLY_FALLBACK = re.compile(r"\A(?:>[^\n]*\n)+\n?")
_HTML_REPLY_FALLBACK = re.compile(r"<mx-reply>.*?</mx-reply>", re.DOTALL)
KEYCAPS = ("1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣", "🔟")
"""Reaction keys for options whose labels do not start with an emoji of their own."""
CHOICES_KEPT = 200
"""Messages with open choices remembered (the oldest forgotten first): far more than requests ever pending."""


def _bare(key: str) -> str:
    """A reaction key without emoji presentation selectors: clients differ on sending ``U+FE0F``."""
    return key.replace("\ufe0f", "").strip()


def choice_keys(buttons: list[tuple[str, str]]) -> list[str] | None:
    """One reaction key per option: the labels' own leading emoji when each has a different one (an approval's
    ✅ ♾️ ⛔), else keycap numbers; None for more options than there are keycaps."""
    heads = [label.split(maxsplit=1)[0] if len(label.split(maxsplit=1)) == 2 else "" for label, _ in buttons]
    if all(h and unicodedata.category(h[0]) == "So" for h in heads) and len({_bare(h) for h in heads}) == len(heads):
        return heads
    return list(KEYCAPS[: len(buttons)]) if len(buttons) <= len(KEYCAPS) else None


def choice_hint(buttons: list[tuple[str, str]], keys: list[str]) -> str:
    """The line under the options saying how to pick one (the typed answers the text already gives still work)."""
    options = " · ".join(
        f"{key} {label.split(maxsplit=1)[1] if label.startswith(key) else label}"
        for key, (label, _) in zip(keys, buttons, strict=True)
    )
    span = "1" if len(keys) == 1 else f"a number from 1 to {len(keys)}"
    return f"React with {options} (or reply to this message with {span})."


def _room(to: str) -> str:
    to = to.strip()
    # Room ids carry no server part from room version 12 on (``!opaque``); aliases and users always do.
    if re.fullmatch(r"![^\s]+|[#@][^:\s]+:\S+", to):
        return to
    raise TargetNotFound(
        f"matrix: not a room id, alias or user id: {to!r} (!room:server, #alias:server, @user:server)",
        details={"field": "to", "to": to},
    )


def _event_id(value: str, field: str) -> str:
    if not re.fullmatch(r"\$\S+", value.strip()):
        raise ChannelError(f"matrix: {field} must be an event id ($...), got {value!r}", details={"field": field})
    return value.strip()


class MatrixChannel(Channel):
    """One Matrix bot account."""

    name = "matrix"
    text_limit = TEXT_LIMIT
    typing_lasts_s = 25.0
    capabilities = frozenset(
        {
            Capability.SEND,
            Capability.REPLY,
            Capability.THREAD_REPLY,
            Capability.REACT,
            Capability.DELETE,
            Capability.ATTACHMENT,
            Capability.PIN,
            Capability.TYPING,
            Capability.EDIT,
        }
    )

    def __init__(
        self,
        account_id: str,
        on_inbound: InboundHandler,
        settings: MatrixAccountConfig,
        *,
        state_dir: Path | None = None,
        media_dir: Path | None = None,
        host: Any = None,
        access: dict[str, Any] | None = None,
        env: ChannelEnvironment | None = None,
    ) -> None:
        super().__init__(account_id, on_inbound)
        if nio is None:
            raise MissingExtra("matrix", "the Matrix channel")
        self.settings = settings
        self._state_dir = state_dir
        self._media_dir = media_dir
        self._host = host
        self._access = access or {}
        self._client: nio.AsyncClient | None = None
        self._task: asyncio.Task[None] | None = None
        self._dm_rooms: dict[str, str] = {}  # user id -> the DM room the bot last talked to them in
        self._reactions: dict[tuple[str, str, str], str] = {}  # (room, event, key) -> our reaction's event id
        self._choices: dict[str, dict[str, Any]] = {}
        """Event id of a message with open choices -> its room, thread, ``keys`` (key -> data) and ``mine`` (the
        bot's reaction event ids, taken off when it is settled); saved in ``choices.json``."""
        self._warned_encrypted: set[str] = set()
        env = env or ChannelEnvironment.alone(self.name, account_id, on_inbound)
        # Each room's events in order, rooms side by side.
        self._inbound = env.pipeline(self._handle, lambda payload: str(payload["room"]))
        self.user_id = settings.userId
        self.display_name: str | None = None

    @staticmethod
    def configured(settings: dict[str, Any]) -> bool:
        """Any of the account's own keys set: a half-filled account then fails with the missing field named in
        ``channels.status``, instead of being skipped silently."""
        return any(settings.get(k) for k in ("homeserver", "userId", "accessToken", "password"))

    @classmethod
    def from_config(cls, account_id: str, settings: dict[str, Any], env: ChannelEnvironment) -> MatrixChannel:
        return cls(account_id, env.receive, parse_config(settings), state_dir=env.account_dir,
                   media_dir=env.media_dir, host=env.host, access=settings, env=env)

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Log in (or check the token), take a first sync, then keep syncing in the background."""
        e2e = self.settings.encryption
        if e2e and not nio.crypto.ENCRYPTION_ENABLED:
            raise MissingExtra("matrix-e2e", "end-to-end encryption on Matrix (channels.matrix.encryption)")
        if e2e and self._state_dir is None:
            raise ChannelError(
                "channels.matrix.encryption needs a state dir for the key store",
                details={"field": "channels.matrix.encryption"},
            )
        config = nio.AsyncClientConfig(
            encryption_enabled=e2e, max_limit_exceeded=3, max_timeouts=2, request_timeout=30, store_sync_tokens=False
        )
        store = self._state_dir / "e2e-store" if e2e and self._state_dir is not None else None
        if store is not None:
            await asyncio.to_thread(store.mkdir, parents=True, exist_ok=True)
        client = nio.AsyncClient(
            self.settings.homeserver, self.settings.userId, store_path=str(store or ""), config=config
        )
        self._client = client
        self._choices = self._load_choices()
        try:
            await self._login(client)
            await self._crypto_upkeep(client)
            since = self._since()
            first = await client.sync(timeout=0, since=since, full_state=since is None)
            if isinstance(first, nio.SyncError):
                raise self._error("sync", first, self.settings.homeserver)
            await self._handle_sync(first, history=since is None)
            await self._inbound.replay()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            await self.stop()
            raise ChannelUnavailable(
                f"matrix account {self.account_id}: cannot reach {self.settings.homeserver}: {exc}", retryable=True
            ) from exc
        except Exception:
            await self.stop()
            raise
        self._task = asyncio.create_task(self._sync_loop(first.next_batch), name=f"matrix-sync-{self.account_id}")
        log.info("matrix bot started", account=self.account_id, user=client.user_id)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        await self._inbound.stop()  # an event cut off here stays unhandled in the journal: replayed at next start
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    async def _login(self, client: nio.AsyncClient) -> None:
        """Token: ``whoami`` checks it. Password: reuse the session saved by an earlier login, else log in once."""
        token, device = self.settings.accessToken, None
        saved = self._load("session.json")
        if not token and saved:
            session = json.loads(saved)
            if session.get("userId") == self.settings.userId:
                token, device = session.get("accessToken"), session.get("deviceId")
        if token:
            client.access_token = token
            who = await client.whoami()
            if isinstance(who, nio.WhoamiResponse):
                self.user_id = who.user_id
                if self.settings.encryption:  # loads (or creates) this device's keys from the store
                    if not (who.device_id or device):
                        raise ChannelError(
                            "channels.matrix.encryption: the homeserver did not say which device "
                            "the access token belongs to",
                            details={"field": "accessToken"},
                        )
                    client.restore_login(who.user_id, who.device_id or device or "", token)
                else:
                    client.user_id, client.device_id = who.user_id, who.device_id or device or ""
                return
            if self.settings.accessToken or not self.settings.password:
                raise ChannelError(
                    f"matrix account {self.account_id}: the access token was refused "
                    f"({who.status_code}: {who.message})",
                    details={"field": "accessToken"},
                )
        got = await client.login(self.settings.password or "", device_name=self.settings.deviceName)
        if not isinstance(got, nio.LoginResponse):
            raise ChannelError(
                f"matrix account {self.account_id}: login refused ({got.status_code}: {got.message})",
                details={"field": "password"},
            )
        self.user_id = got.user_id
        self._save(
            "session.json",
            json.dumps({"userId": got.user_id, "deviceId": got.device_id, "accessToken": got.access_token}),
        )

    def _since(self) -> str | None:
        """The saved sync position, if it is this user's (a changed ``userId`` starts afresh)."""
        saved = self._load("sync.json")
        if not saved:
            return None
        position = json.loads(saved)
        return str(position["since"]) if position.get("userId") == self.user_id and position.get("since") else None

    def _load(self, name: str) -> str | None:
        if self._state_dir is None:
            return None
        try:
            return (self._state_dir / name).read_text().strip() or None
        except OSError:
            return None

    def _save(self, name: str, text: str) -> None:
        """Write atomically, owner-only (the session file holds a token)."""
        if self._state_dir is None:
            return
        self._state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self._state_dir / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, self._state_dir / name)

    def _load_choices(self) -> dict[str, dict[str, Any]]:
        """The open choices saved before a restart (none when the file is missing or not ours)."""
        try:
            saved = json.loads(self._load("choices.json") or "{}")
        except ValueError:
            return {}
        if not isinstance(saved, dict):
            return {}
        return {k: v for k, v in saved.items() if isinstance(v, dict) and isinstance(v.get("keys"), dict)}

    def _save_choices(self) -> None:
        while len(self._choices) > CHOICES_KEPT:
            del self._choices[next(iter(self._choices))]
        try:
            self._save("choices.json", json.dumps(self._choices))
        except OSError as exc:  # kept in memory still: only a restart would forget them
            log.warning("matrix choices not saved", account=self.account_id, error=str(exc))

    def _live(self) -> nio.AsyncClient:
        if self._client is None:
            raise ChannelNotLinked(f"matrix account {self.account_id} is not running")
        return self._client

    # -- inbound ----------------------------------------------------------------------------------

    async def _sync_loop(self, since: str) -> None:
        delay = 1.0
        while True:
            client = self._client
            if client is None:
                return
            try:
                resp = await client.sync(timeout=self.settings.syncTimeoutSeconds * 1000, since=since)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("matrix sync failed; retrying", account=self.account_id, error=str(exc), delay=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            if isinstance(resp, nio.SyncError):
                log.warning("matrix sync refused; retrying", account=self.account_id, error=resp.message, delay=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            try:
                await self._handle_sync(resp, history=False)
            except Exception as exc:  # e.g. the journal could not be written: the same batch is fetched again
                log.warning(
                    "matrix sync batch not handled; fetching it again",
                    account=self.account_id,
                    error=str(exc),
                    delay=delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            delay = 1.0
            since = resp.next_batch
            try:
                await self._crypto_upkeep(client)
            except Exception as exc:
                log.warning("matrix key upkeep failed", account=self.account_id, error=str(exc))

    async def _crypto_upkeep(self, client: nio.AsyncClient) -> None:
        """With encryption on: publish this device's keys, learn the others', and send the room keys due."""
        if client.olm is None:
            return
        if client.should_upload_keys:
            await client.keys_upload()
        if client.should_query_keys:
            await client.keys_query()
        if client.should_claim_keys:
            await client.keys_claim(client.get_users_for_key_claiming())
        await client.send_to_device_messages()

    async def _handle_sync(self, resp: nio.SyncResponse, *, history: bool) -> None:
        """Invites, then each joined room's new events handed out; then the since-token is saved.

        Each event worth handling is written to the gateway's inbound journal before the token moves past it,
        and marked done once handled: one stopped half-way is handed out again at the next start. Rooms are
        handled at once, each room's events one after another, in order (a slow step in one room, such as a
        large download or ``/new`` waiting for a turn to stop, holds up no other room)."""
        for room_id, info in resp.rooms.invite.items():
            try:
                await self._on_invite(room_id, info)
            except Exception as exc:  # still pending on the homeserver: seen again at the next start
                log.warning("matrix invite not answered", account=self.account_id, room=room_id, error=str(exc))
        if not history:
            for room_id, info in resp.rooms.join.items():
                for event in info.timeline.events:
                    src: dict[str, Any] = getattr(event, "source", None) or {}
                    if not self._wanted(src):
                        continue
                    # Delivered twice (a sync retried after a failure): handled once.
                    await self._inbound.receive(str(src["event_id"]), {"room": room_id, "event": src})
        self._save("sync.json", json.dumps({"userId": self.user_id, "since": resp.next_batch}))

    async def _handle(self, payload: Payload) -> None:
        """The pipeline's step: one room event (a message, a reaction answering a choice)."""
        await self._on_event(str(payload["room"]), payload["event"])

    def _access_now(self) -> dict[str, Any]:
        """This account's access keys as the config says now (access rules change without a restart)."""
        cfg = getattr(self._host, "config", None)
        channels = getattr(cfg, "channels", None)
        section = (getattr(channels, "model_extra", None) or {}).get("matrix") if channels is not None else None
        if not isinstance(section, dict):
            return self._access
        account = (section.get("accounts") or {}).get(self.account_id) if self.account_id != "default" else None
        return {**section, **(account or {})}

    async def _inviter_allowed(self, inviter: str, direct: bool) -> bool:
        mode = self.settings.autoJoin
        if mode != "allowed":
            return mode == "always"
        access = self._access_now()
        owners = [str(x) for x in access.get("ownerAllowFrom") or []]
        global_owners = getattr(getattr(getattr(self._host, "config", None), "channels", None), "ownerAllowFrom", [])
        named = {
            *owners,
            *(str(x) for x in access.get("allowFrom") or []),
            *(str(x) for x in access.get("groupAllowFrom") or []),
        }
        named |= {e.split(":", 1)[1] for e in global_owners if e.startswith("matrix:")}
        if inviter in named or f"matrix:{inviter}" in named:
            return True
        if self._host is not None and await self._host.is_approved(self.name, inviter):
            return True
        if direct:
            return access.get("dmPolicy", "pairing") in ("pairing", "open")
        return access.get("groupPolicy", "allowlist") == "open"

    async def _on_invite(self, room_id: str, info: Any) -> None:
        client = self._live()
        inviter, direct = "", False
        for ev in info.invite_state:  # nio's stripped events: content on the object, not in .source
            if isinstance(ev, nio.InviteMemberEvent) and ev.state_key == self.user_id:
                inviter = inviter or ev.sender
                direct = direct or bool((ev.content or {}).get("is_direct"))
        if await self._inviter_allowed(inviter, direct):
            got = await client.join(room_id)
            log.info(
                "matrix invite joined",
                account=self.account_id,
                room=room_id,
                inviter=inviter,
                ok=isinstance(got, nio.JoinResponse),
            )
            if direct and isinstance(got, nio.JoinResponse):
                self._dm_rooms[inviter] = room_id
        else:
            await client.room_leave(room_id)
            log.info(
                "matrix invite declined",
                account=self.account_id,
                room=room_id,
                inviter=inviter,
                direct=direct,
                autoJoin=self.settings.autoJoin,
            )

    def _chat_type(self, room_id: str) -> ChatType:
        room = self._live().rooms.get(room_id)
        if room is None:
            return "group"
        return "dm" if room.member_count <= 2 else "group"  # members joined or invited

    def _wanted(self, src: dict[str, Any]) -> bool:
        """A message from someone else (or an encrypted one, to explain once); not edits, not notices."""
        sender = src.get("sender", "")
        if sender == self.user_id or not sender or not src.get("event_id"):
            return False
        if src.get("type") == "m.room.encrypted":
            return True
        content = src.get("content") or {}
        if src.get("type") == "m.reaction":  # only a pick of an option counts; other reactions are no messages
            return self._picked(src) is not None
        if src.get("type") != "m.room.message" or not content.get("msgtype"):
            return False
        relates = content.get("m.relates_to") or {}
        # Edits are not new messages; notices are other bots talking (answering them could loop forever).
        return relates.get("rel_type") != "m.replace" and content.get("msgtype") != "m.notice"

    async def _on_event(self, room_id: str, src: dict[str, Any]) -> None:
        if src.get("type") == "m.room.encrypted":  # still encrypted: encryption off, or no key for it
            if self.settings.encryption:
                log.warning(
                    "matrix event could not be decrypted",
                    account=self.account_id,
                    room=room_id,
                    event=src.get("event_id"),
                )
                return
            await self._say_encrypted(room_id)
            return
        if src.get("type") == "m.reaction":
            await self._on_pick(room_id, src)
            return
        await self.on_inbound(await self._to_inbound(room_id, src))

    def _picked(self, src: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
        """The open choice a reaction picks, and what picking it types; None for any other reaction."""
        relates = (src.get("content") or {}).get("m.relates_to") or {}
        entry = self._choices.get(str(relates.get("event_id") or ""))
        if relates.get("rel_type") != "m.annotation" or entry is None:
            return None
        key = _bare(str(relates.get("key") or ""))
        data = next((d for k, d in entry["keys"].items() if _bare(k) == key), None)
        return (entry, data) if data is not None else None

    async def _on_pick(self, room_id: str, src: dict[str, Any]) -> None:
        """A reaction with an option's key: the reacting person typing that option's data."""
        picked = self._picked(src)
        if picked is None:  # settled (its keys taken off) since it was journalled
            return
        entry, data = picked
        room = self._live().rooms.get(room_id)
        await self.on_inbound(
            Inbound(
                channel=self.name,
                account_id=self.account_id,
                sender_id=src["sender"],
                sender_name=room.user_name(src["sender"]) if room is not None else None,
                chat_id=room_id,
                chat_type=self._chat_type(room_id),
                message_id=src["event_id"],
                text=data,
                thread_id=entry.get("thread"),
                mentioned=True,
                ts=(src.get("origin_server_ts") or 0) / 1000,
                raw=src,
            )
        )

    def _typed_pick(self, reply: str | None, text: str) -> str | None:
        """A reply to a message with open choices saying an option's number (or key): that option's data."""
        entry = self._choices.get(reply or "")
        if entry is None:
            return None
        options = list(entry["keys"].items())
        said = _bare(text)
        if said.isdigit() and 1 <= int(said) <= len(options):
            return str(options[int(said) - 1][1])
        return next((str(d) for k, d in options if _bare(k) == said), None)

    async def _say_encrypted(self, room_id: str) -> None:
        if room_id in self._warned_encrypted:
            return
        self._warned_encrypted.add(room_id)
        log.warning("matrix encrypted room: messages ignored", account=self.account_id, room=room_id)
        with contextlib.suppress(Exception):
            await self._put(room_id, "m.room.message", {"msgtype": "m.notice", "body": ENCRYPTED_TEXT})

    async def _to_inbound(self, room_id: str, src: dict[str, Any]) -> Inbound:
        content = src["content"]
        relates = content.get("m.relates_to") or {}
        thread = relates.get("event_id") if relates.get("rel_type") == "m.thread" else None
        reply = (relates.get("m.in_reply_to") or {}).get("event_id")
        if thread and relates.get("is_falling_back"):
            reply = None  # a thread message's fallback reply is not a real reply
        text = str(content.get("body") or "")
        if reply and not thread:
            text = _REPLY_FALLBACK.sub("", text)
        chat_type = self._chat_type(room_id)
        mentioned, text = await self._mentioned(room_id, content, text, reply)
        text = self._typed_pick(reply, text) or text
        media: list[Media] = []
        kind = _MEDIA_KINDS.get(content.get("msgtype", ""))
        if kind is not None:
            if kind == "audio" and ("org.matrix.msc3245.voice" in content or "m.voice" in content):
                kind = "voice"
            info = content.get("info") or {}
            name = content.get("filename") or content.get("body") or None
            media.append(
                Media(
                    kind=kind,
                    path=await self._download(content, name, src["event_id"]),
                    mime=info.get("mimetype"),
                    name=name,
                    size=info.get("size"),
                )
            )
            # The body is a caption only when a separate filename is given (Matrix v1.10).
            text = (
                str(content.get("body") or "")
                if content.get("filename") and content.get("filename") != content.get("body")
                else ""
            )
        if chat_type == "dm":
            self._dm_rooms[src["sender"]] = room_id
        room = self._live().rooms.get(room_id)
        return Inbound(
            channel=self.name,
            account_id=self.account_id,
            sender_id=src["sender"],
            sender_name=room.user_name(src["sender"]) if room is not None else None,
            chat_id=room_id,
            chat_type=chat_type,
            message_id=src["event_id"],
            text=text,
            thread_id=thread,
            reply_to_id=reply,
            media=tuple(media),
            mentioned=mentioned or chat_type == "dm",
            ts=(src.get("origin_server_ts") or 0) / 1000,
            raw=src,
        )

    async def _mentioned(self, room_id: str, content: dict[str, Any], text: str, reply: str | None) -> tuple[bool, str]:
        """Whether the bot was addressed, and the text with the mention taken out."""
        me = self.user_id
        local = me[1:].split(":", 1)[0]
        room = self._live().rooms.get(room_id)
        names = [n for n in {me, room.user_name(me) if room else None, local} if n]
        hit = me in ((content.get("m.mentions") or {}).get("user_ids") or [])
        hit = hit or f"matrix.to/#/{me}" in str(content.get("formatted_body") or "")
        for name in sorted(names, key=len, reverse=True):
            pattern = re.compile(rf"(?<![\w@]){re.escape(name)}(?![\w]):?", re.IGNORECASE)
            if name != local or hit:  # a bare localpart counts only as "name:" at the start, or once hit
                if pattern.search(text):
                    hit = True
                    text = pattern.sub("", text, count=1).strip()
            elif re.match(rf"{re.escape(local)}\s*:", text, re.IGNORECASE):
                hit = True
                text = text.split(":", 1)[1].strip()
        if not hit and reply:
            got = await self._live().room_get_event(room_id, reply)
            hit = isinstance(got, nio.RoomGetEventResponse) and got.event.sender == me
        return hit, text

    async def _download(self, content: dict[str, Any], name: str | None, event_id: str) -> str | None:
        """Fetch a file from the content repository into the state dir (decrypted, when it was sent in an
        encrypted room: ``file`` holds its key); None when it cannot be had."""
        encrypted = content.get("file") if isinstance(content.get("file"), dict) else None
        mxc = (encrypted or content).get("url")
        if self._media_dir is None or not isinstance(mxc, str) or not mxc.startswith("mxc://"):
            return None
        try:
            got = await self._live().download(mxc=mxc)
            if not isinstance(got, nio.MemoryDownloadResponse) or len(got.body) > MAX_DOWNLOAD_BYTES:
                log.warning("matrix download refused", account=self.account_id, mxc=mxc)
                return None
            body = got.body
            if encrypted is not None:
                from nio.crypto.attachments import decrypt_attachment  # checks the hash before decrypting

                body = await asyncio.to_thread(
                    decrypt_attachment, body, encrypted["key"]["k"], encrypted["hashes"]["sha256"], encrypted["iv"]
                )
            suffix = (
                Path(name or got.filename or "").suffix or mimetypes.guess_extension(got.content_type or "") or ".bin"
            )
            safe = re.sub(r"[^A-Za-z0-9_-]", "_", event_id)[-64:]
            path = self._media_dir / f"{safe}{suffix}"
            await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
            await asyncio.to_thread(path.write_bytes, body)
            return str(path)
        except Exception as exc:
            log.warning("matrix download failed", account=self.account_id, error=str(exc))
            return None

    # -- outbound ---------------------------------------------------------------------------------

    def _error(self, op: str, resp: Any, target: str) -> Exception:
        code = getattr(resp, "status_code", None) or ""
        message = getattr(resp, "message", None) or str(resp)
        details = {"channel": "matrix", "operation": op, "to": target, "errcode": code}
        if code == "M_LIMIT_EXCEEDED":
            retry = int(getattr(resp, "retry_after_ms", None) or 1000)
            return ChannelUnavailable(
                f"matrix rate limit on {op}: retry after {retry} ms",
                retryable=True,
                retry_after_ms=retry,
                details=details,
            )
        if code == "M_FORBIDDEN" and re.search(r"not in (the )?room|not joined|unknown room", message, re.IGNORECASE):
            # The homeserver does not say whether the room exists; either way the bot cannot reach it.
            return TargetNotFound(
                f"matrix {op}: the bot is not in {target} ({message})", details={**details, "code": "TARGET_NOT_FOUND"}
            )
        if code == "M_FORBIDDEN":
            return ChannelForbidden(
                f"matrix refused {op} in {target}: {message}", details={**details, "code": "CHANNEL_FORBIDDEN"}
            )
        if code == "M_NOT_FOUND":
            return TargetNotFound(f"matrix {op}: {message} ({target})", details={**details, "code": "TARGET_NOT_FOUND"})
        if code == "M_UNKNOWN_TOKEN":
            return ChannelUnavailable(f"matrix account {self.account_id}: the access token is no longer valid")
        return ChannelError(f"matrix {op} failed: {code} {message}".strip(), details=details)

    async def _call(self, op: str, target: str, coro: Any, ok: Any) -> Any:
        try:
            resp = await coro
        except nio.LocalProtocolError as exc:
            raise ChannelError(f"matrix {op}: {exc}", details={"channel": "matrix", "operation": op}) from exc
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise ChannelUnavailable(f"matrix {op}: cannot reach the homeserver: {exc}", retryable=True) from exc
        if not isinstance(resp, ok):
            raise self._error(op, resp, target)
        return resp

    async def _room_id(self, to: str) -> str:
        """A room id for ``to``: a room id as it is, an alias resolved, a user id's DM room (created if none)."""
        target = _room(to)
        client = self._live()
        if target.startswith("!"):
            return target
        if target.startswith("#"):
            got = await self._call("resolveAlias", to, client.room_resolve_alias(target), nio.RoomResolveAliasResponse)
            return str(got.room_id)
        known = self._dm_rooms.get(target)
        if known and known in client.rooms:
            return known
        for room in client.rooms.values():
            if room.member_count <= 2 and target in room.users and not room.encrypted:
                self._dm_rooms[target] = room.room_id
                return str(room.room_id)
        got = await self._call(
            "createRoom", to, client.room_create(invite=[target], is_direct=True), nio.RoomCreateResponse
        )
        self._dm_rooms[target] = got.room_id
        return str(got.room_id)

    async def _put(self, room_id: str, event_type: str, content: dict[str, Any]) -> str:
        client = self._live()
        room = client.rooms.get(room_id)
        if (
            not self.settings.encryption
            and room is not None
            and room.encrypted
            and event_type == "m.room.message"
            and content.get("body") != ENCRYPTED_TEXT
        ):
            raise ChannelError(
                "matrix: this room is end-to-end encrypted and channels.matrix.encryption is off",
                details={"channel": "matrix", "to": room_id, "code": "ENCRYPTED_ROOM"},
            )
        # A fresh transaction id per event: the homeserver stores a retried request once.
        got = await self._call(
            event_type,
            room_id,
            # Unverified devices get the room key too: the bot cannot verify anyone interactively.
            client.room_send(room_id, event_type, content, tx_id=uuid.uuid4().hex, ignore_unverified_devices=True),
            nio.RoomSendResponse,
        )
        return str(got.event_id)

    @staticmethod
    def _text_content(text: str, *, notice: bool = False) -> dict[str, Any]:
        content: dict[str, Any] = {"msgtype": "m.notice" if notice else "m.text", "body": text}
        rendered = to_html(text)
        if rendered:
            content["format"] = "org.matrix.custom.html"
            content["formatted_body"] = rendered
        return content

    @staticmethod
    def _relation(thread_id: str | None, reply_to_id: str | None) -> dict[str, Any] | None:
        if thread_id:
            rel: dict[str, Any] = {"rel_type": "m.thread", "event_id": _event_id(thread_id, "threadId")}
            if reply_to_id:
                rel["m.in_reply_to"] = {"event_id": _event_id(reply_to_id, "replyToId")}
            else:  # clients without threads show it as a reply to the thread's root
                rel["is_falling_back"] = True
                rel["m.in_reply_to"] = {"event_id": rel["event_id"]}
            return rel
        if reply_to_id:
            return {"m.in_reply_to": {"event_id": _event_id(reply_to_id, "replyToId")}}
        return None

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
        if len(text) > TEXT_LIMIT:
            raise ChannelError(f"matrix messages are at most {TEXT_LIMIT} characters", details={"field": "message"})
        room_id = await self._room_id(to)
        # Silent (a live note): m.notice, which clients and bots treat as "not for notifying or answering".
        content = self._text_content(text, notice=silent)
        relation = self._relation(thread_id, reply_to_id)
        if relation:
            content["m.relates_to"] = relation
        event_id = await self._put(room_id, "m.room.message", content)
        return Sent(message_id=event_id, chat_id=room_id, thread_id=thread_id)

    async def send_buttons(
        self, to: str, text: str, buttons: list[tuple[str, str]], *, thread_id: str | None = None
    ) -> Sent | None:
        """The text with a line naming a reaction key per option, then the bot's own reactions with those keys,
        so picking one is a click on an existing reaction. None past ten options (the caller sends the text)."""
        keys = choice_keys(buttons)
        if not buttons or keys is None:
            return None
        body = f"{text}\n\n{choice_hint(buttons, keys)}"
        if len(body) > TEXT_LIMIT:
            return None
        sent = await self.send(to, body, thread_id=thread_id)
        entry: dict[str, Any] = {
            "room": sent.chat_id,
            "thread": thread_id,
            "keys": {key: data for key, (_label, data) in zip(keys, buttons, strict=True)},
            "mine": [],
        }
        self._choices[sent.message_id] = entry  # before the reactions: a quick person may beat the bot to them
        for key in keys:
            try:
                await self.react(sent.chat_id, sent.message_id, key)
            except ChannelError as exc:  # the keys can still be typed, or reacted with by hand
                log.warning("matrix choice key not set", account=self.account_id, key=key, error=str(exc))
                continue
            entry["mine"].append(self._reactions[(sent.chat_id, sent.message_id, key)])
        self._save_choices()
        return sent

    async def _close_choices(self, message_id: str) -> None:
        """A settled message: forget its choices and take the bot's keys off it (nothing left to pick)."""
        entry = self._choices.pop(message_id, None)
        if entry is None:
            return
        self._save_choices()
        for reaction in entry.get("mine") or []:
            try:
                await self.delete(str(entry["room"]), str(reaction))
            except ChannelError as exc:
                log.warning("matrix choice key not taken off", account=self.account_id, error=str(exc))
        for key in [k for k in self._reactions if k[1] == message_id]:
            self._reactions.pop(key, None)

    async def edit(self, to: str, message_id: str, text: str, *, thread_id: str | None = None) -> None:
        if len(text) > TEXT_LIMIT:
            raise ChannelError(f"matrix messages are at most {TEXT_LIMIT} characters", details={"field": "message"})
        room_id = await self._room_id(to)
        new = self._text_content(text, notice=True)
        content = {
            **new,
            "body": f"* {text}",
            "m.new_content": new,
            "m.relates_to": {"rel_type": "m.replace", "event_id": _event_id(message_id, "messageId")},
        }
        content.pop("formatted_body", None)
        content.pop("format", None)
        await self._put(room_id, "m.room.message", content)
        await self._close_choices(message_id)

    async def send_attachment(
        self, to: str, file: str | FileBytes, *, caption: str | None = None, thread_id: str | None = None
    ) -> Sent:
        if isinstance(file, str) and file.startswith(("http://", "https://")):
            raise ChannelError(
                "matrix: attachments are uploaded from a local file; download the URL first", details={"field": "file"}
            )
        room_id = await self._room_id(to)
        upload = await asyncio.to_thread(upload_of, file)  # read once, by descriptor
        data, name = upload.data, upload.name
        voice = Path(name).suffix.lower() in VOICE_SUFFIXES
        mime = "audio/ogg" if voice else mimetypes.guess_type(name)[0] or "application/octet-stream"
        client = self._live()
        room = client.rooms.get(room_id)
        encrypt = bool(self.settings.encryption and room is not None and room.encrypted)
        got, keys = await client.upload(
            lambda *_: data, content_type=mime, filename=name, filesize=len(data), encrypt=encrypt
        )
        if not isinstance(got, nio.UploadResponse):
            raise self._error("upload", got, to)
        content: dict[str, Any] = {
            "msgtype": _OUT_KINDS.get(mime.split("/", 1)[0], "m.file"),
            "url": got.content_uri,
            "body": caption or name,
            "filename": name,
            "info": {"mimetype": mime, "size": len(data)},
        }
        if encrypt and keys:  # the file is encrypted in the repository; its key travels in the (encrypted) event
            content["file"] = {**keys, "url": content.pop("url")}
        if voice:  # shown as a voice message (a waveform and a play button) by clients that know MSC3245
            content["org.matrix.msc3245.voice"] = {}
            content["org.matrix.msc1767.audio"] = {}
        relation = self._relation(thread_id, None)
        if relation:
            content["m.relates_to"] = relation
        event_id = await self._put(room_id, "m.room.message", content)
        return Sent(message_id=event_id, chat_id=room_id, thread_id=thread_id)

    async def react(self, to: str, message_id: str, emoji: str) -> None:
        room_id = await self._room_id(to)
        target = _event_id(message_id, "messageId")
        if not emoji:  # remove ours: redact the reactions we set on it
            for key in [k for k in self._reactions if k[0] == room_id and k[1] == target]:
                await self.delete(room_id, self._reactions.pop(key))
            return
        event_id = await self._put(
            room_id, "m.reaction", {"m.relates_to": {"rel_type": "m.annotation", "event_id": target, "key": emoji}}
        )
        self._reactions[(room_id, target, emoji)] = event_id

    async def delete(self, to: str, message_id: str, *, thread_id: str | None = None) -> None:
        room_id = await self._room_id(to)
        await self._call(
            "redact", to, self._live().room_redact(room_id, _event_id(message_id, "messageId")), nio.RoomRedactResponse
        )

    async def pin(self, to: str, message_id: str) -> None:
        room_id = await self._room_id(to)
        target = _event_id(message_id, "messageId")
        client = self._live()
        got = await client.room_get_state_event(room_id, "m.room.pinned_events", "")
        pinned = list((got.content or {}).get("pinned") or []) if isinstance(got, nio.RoomGetStateEventResponse) else []
        if target in pinned:
            return
        await self._call(
            "pin",
            to,
            client.room_put_state(room_id, "m.room.pinned_events", {"pinned": [*pinned, target]}),
            nio.RoomPutStateResponse,
        )

    async def typing(self, to: str, *, thread_id: str | None = None) -> None:
        with contextlib.suppress(Exception):  # an indicator is never worth failing a run
            room_id = await self._room_id(to)
            await self._live().room_typing(room_id, True, timeout=int((self.typing_lasts_s or 25) * 1000))
