"""The channels subsystem: runs the configured channel accounts and is the one door to them.

Started through the ``remoteclaw.subsystems`` extension point with a ``PlatformHost``, it implements
the gateway's ``ChatPlatforms`` interface and attaches itself as the gateway's way to chats. It
- starts every configured account of every known channel type (the ``remoteclaw.channels``
  extension point, so Telegram, Discord, the web chat and a plugin's channel plug in the same way) in
  the background, retrying while the platform
  is unreachable, and restarts only the accounts whose config changed on a live config change;
- routes inbound messages through access control (``channels.access``) to
  the gateway (``host.handle_inbound``), or answers unknown DM senders with a pairing code;
- performs outbound operations for the ``message.*`` methods (text split at the channel's limit);
- stores every message in and out (the host's message log), so ``message.read`` works on every
  channel: every outbound message, the bridge's replies included, goes through ``send_text`` or
  ``send_attachment`` here.

Channel type contract: a ``Channel`` subclass (``channels.base``: ``from_config``, ``configured``,
``handle_webhook`` served at ``POST /channels/<channel>/<accountId>/webhook``), and a place in
``AUTOSTART_TYPES`` to run even when its config section is absent.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import structlog

from channels import access
from channels.base import Capability, Channel, ChannelError, ChannelNotLinked, Inbound, Sent
from channels.chunking import split_text
from channels.files import check_outbound_file
from channels.media import keep_pruned
from channels.progress import ProgressNote
from gateway.extensions import CHANNELS
from gateway.extras import MissingExtra, extra_for_module
from gateway.platforms import ChannelAccessConfig, Origin, PlatformHost

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from gateway.platforms import Config

__all__ = ["ChannelManager", "register_channel_type", "start"]

log = structlog.get_logger("channels.manager")

PAIRING_TEXT = (
    "Hi! This assistant only talks with people its owner has approved.\n"
    "Your pairing code: {code}\n"
    "Ask the owner to run: remoteclaw pairing approve {channel} {code}"
)
APPROVED_TEXT = "You're approved: send your message again and the assistant will answer."


"""Largest local file ``message.sendAttachment`` sends (Telegram's own upload limit for bots)."""

AUTOSTART_TYPES = frozenset({"webchat"})
"""Types that run without a config section. Every other type is imported only when configured, so an
unused channel's library (python-telegram-bot, discord.py) never costs start time or memory."""

def register_channel_type(name: str, cls: str | type[Channel]) -> None:
    """Add (or replace) a channel type in this process, e.g. from a test: the class, or
    ``"module:Class"`` to import when that channel is configured."""
    CHANNELS.register(name, cls)


def _load_type(name: str) -> tuple[type[Channel] | None, str | None]:
    """The channel type, or None and why not: a library that is not part of this install names its extra."""
    try:
        cls: type[Channel] = CHANNELS.load(name)
    except ModuleNotFoundError as exc:
        extra = extra_for_module(exc.name)
        why = (MissingExtra(extra, f"the {name} channel").message if extra
               else f"the {name} channel cannot be loaded: {exc}")
        log.warning("channel type not installed", channel=name, error=why)
        return None, why
    return cls, None


def _plain(value: Any, *, unset: bool = False) -> dict[str, Any]:
    if value is None:
        return {}
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_unset=unset)
    return dict(value) if isinstance(value, dict) else {}


def channel_sections(config: Config) -> dict[str, tuple[bool, dict[str, Any]]]:
    """Channel name -> (explicitly configured, section as a dict)."""
    ch = config.channels
    given = set(ch.model_fields_set) | set(ch.model_extra or {})
    out: dict[str, tuple[bool, dict[str, Any]]] = {}
    for name in CHANNELS.names():
        value = getattr(ch, name, None) if name in type(ch).model_fields else (ch.model_extra or {}).get(name)
        section = _plain(value)
        accounts = getattr(value, "accounts", None)
        if isinstance(accounts, dict):
            # Only what an account sets overrides the section; its model defaults must not.
            section["accounts"] = {k: _plain(v, unset=True) for k, v in accounts.items()}
        out[name] = (name in given, section)
    return out


def account_configs(section: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Account id -> effective config: the section itself is account ``default``; ``accounts`` add more
    and inherit the section's settings."""
    base = {k: v for k, v in section.items() if k != "accounts"}
    out: dict[str, dict[str, Any]] = {"default": base}
    for acct_id, acct in (section.get("accounts") or {}).items():
        out[str(acct_id)] = {**base, **{k: v for k, v in _plain(acct).items() if v is not None}}
    return {k: v for k, v in out.items() if v.get("enabled", True) is not False}


LIVE_SETTINGS = frozenset({"stream"})
"""Account settings read at each turn: changing them must not restart the account."""


def _runtime(cfg: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if k not in ChannelAccessConfig.model_fields and k not in LIVE_SETTINGS}


class ChannelManager:
    """Running channel accounts by ``(channel, accountId)``, and the operations on them."""

    def __init__(self, host: PlatformHost) -> None:
        self.host = host
        self.channels: dict[tuple[str, str], Channel] = {}
        self.status: dict[tuple[str, str], dict[str, Any]] = {}
        self._configs: dict[tuple[str, str], dict[str, Any]] = {}
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._lock = asyncio.Lock()
        self.history = host.history
        self.unloadable: dict[str, str] = {}
        """Configured channel types this install cannot load, and why (the extra to install)."""

    # -- lifecycle ---------------------------------------------------------------------------------

    def wanted(self, config: Config) -> dict[tuple[str, str], tuple[type[Channel], dict[str, Any]]]:
        out: dict[tuple[str, str], tuple[type[Channel], dict[str, Any]]] = {}
        unloadable: dict[str, str] = {}
        for name, (given, section) in channel_sections(config).items():
            if not (given or name in AUTOSTART_TYPES):
                continue
            cls, why = None, None
            try:
                cls, why = _load_type(name)
            except Exception as exc:
                log.exception("cannot load channel type", channel=name)
                why = f"the {name} channel cannot be loaded: {exc}"
            if cls is None:
                if given and why:
                    unloadable[name] = why
                continue
            for acct_id, cfg in account_configs(section).items():
                if not cls.configured(cfg):
                    continue
                out[(name, acct_id)] = (cls, cfg)
        self.unloadable = unloadable
        return out

    async def apply(self, config: Config) -> None:
        """Start, stop or restart accounts so the running set matches ``config``."""
        async with self._lock:
            want = self.wanted(config)
            # Access rules are read live on every message: changing them must not restart a bot.
            stale = [k for k in self._configs if k not in want or _runtime(want[k][1]) != _runtime(self._configs[k])]
            for key in stale:
                await self._stop_account(key)
            for key, (cls, cfg) in want.items():
                if key not in self._configs:
                    self._configs[key] = cfg
                    self.status[key] = {"state": "starting"}
                    self._tasks[key] = asyncio.create_task(self._run_account(key, cls, cfg),
                                                           name=f"channel-{key[0]}-{key[1]}")

    async def _run_account(self, key: tuple[str, str], cls: type[Channel], cfg: dict[str, Any]) -> None:
        name, acct_id = key
        delay = 1.0
        while True:
            try:
                # Underscored keys are facts about this gateway, not config: where to keep files, public URL.
                env = {"_stateDir": str(self.host.state_dir), "_publicUrl": self.host.config.gateway.publicUrl,
                       "_host": self.host, "_commands": self.host.config.messages.commands}
                ch = cls.from_config(acct_id, self._on_inbound, {**cfg, **env})
                # Registered before start(): messages can arrive while it connects (Telegram hands over
                # what was sent while the bot was offline at once), and their replies must find it.
                self.channels[key] = ch
                await ch.start()
            except asyncio.CancelledError:  # stopped (config change, shutdown) while connecting
                half_started = self.channels.pop(key, None)
                if half_started is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(half_started.stop(), 15)
                raise
            except Exception as exc:
                self.channels.pop(key, None)
                message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
                permanent = isinstance(exc, ChannelError | MissingExtra | ValueError | TypeError)
                self.status[key] = {"state": "error", "error": message, "retrying": not permanent}
                log.warning("channel account failed to start", channel=name, account=acct_id, error=message,
                            retry_in_s=None if permanent else delay)
                if permanent:
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 60.0)
                continue
            self.status[key] = {"state": "running"}
            log.info("channel account running", channel=name, account=acct_id)
            return

    async def _stop_account(self, key: tuple[str, str]) -> None:
        task = self._tasks.pop(key, None)
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._configs.pop(key, None)
        self.status.pop(key, None)
        ch = self.channels.pop(key, None)
        if ch is not None:
            try:
                await asyncio.wait_for(ch.stop(), 15)
            except Exception:
                log.exception("channel account failed to stop", channel=key[0], account=key[1])

    async def stop(self) -> None:
        async with self._lock:
            for key in list(self._configs):
                await self._stop_account(key)

    def describe(self) -> list[dict[str, Any]]:
        out = [{"channel": n, "accountId": a, **st} for (n, a), st in sorted(self.status.items())]
        out += [{"channel": n, "accountId": "default", "state": "error", "error": why, "retrying": False}
                for n, why in sorted(self.unloadable.items())]
        return out

    # -- lookup ------------------------------------------------------------------------------------

    def get(self, channel: str, account_id: str | None = None) -> Channel:
        """The running account; without ``account_id`` the ``default`` one or the only one."""
        if account_id is not None:
            ch = self.channels.get((channel, account_id))
            if ch is None:
                raise ChannelNotLinked(self._not_linked(channel, account_id),
                                       details={"channel": channel, "accountId": account_id})
            return ch
        mine = {a: ch for (n, a), ch in self.channels.items() if n == channel}
        if "default" in mine:
            return mine["default"]
        if len(mine) == 1:
            return next(iter(mine.values()))
        if mine:
            raise ChannelNotLinked(f"{channel} has several accounts ({', '.join(sorted(mine))}): pass accountId",
                                   details={"channel": channel, "accounts": sorted(mine)})
        raise ChannelNotLinked(self._not_linked(channel, None), details={"channel": channel})

    def _not_linked(self, channel: str, account_id: str | None) -> str:
        key = (channel, account_id or "default")
        st = self.status.get(key)
        if st and st["state"] == "starting":
            return f"{channel} account {key[1]} is still starting"
        if st and st["state"] == "error":
            return f"{channel} account {key[1]} is not running: {st.get('error')}"
        if channel in self.unloadable:
            return self.unloadable[channel]
        if channel not in CHANNELS:
            return CHANNELS.unknown(channel)
        what = f"{channel} account {account_id}" if account_id else channel
        return f"{what} is not configured on this gateway (see channels.{channel} in the config)"

    # -- for agent runs (the gateway's ChatPlatforms interface) ------------------------------------

    async def deliver(self, origin: Origin, text: str, session_key: str, *, reply_to_id: str | None = None) -> int:
        ch = self.get(origin.channel, origin.account_id)
        # Through send_text, so the reply is split for the channel and stored for message.read. A reply
        # target or thread the channel cannot address is dropped rather than failing the whole reply.
        sent = await self.send_text(
            origin.channel, ch.account_id, origin.to, text,
            thread_id=origin.thread_id if Capability.THREAD_REPLY in ch.capabilities else None,
            reply_to_id=reply_to_id if Capability.REPLY in ch.capabilities else None,
            session_key=session_key,
        )
        return len(sent)

    async def typing(self, origin: Origin) -> float | None:
        ch = self.get(origin.channel, origin.account_id)
        await ch.typing(origin.to, thread_id=origin.thread_id)
        return ch.typing_lasts_s

    def progress_note(self, origin: Origin) -> ProgressNote | None:
        try:
            ch = self.get(origin.channel, origin.account_id)
        except ChannelNotLinked:
            return None
        if not {Capability.EDIT, Capability.DELETE} <= ch.capabilities:
            return None
        thread = origin.thread_id if Capability.THREAD_REPLY in ch.capabilities else None
        return ProgressNote(ch, origin.to, thread_id=thread, stream=self._stream_mode(origin.channel, ch.account_id))

    async def ask(self, origin: Origin, text: str, buttons: list[tuple[str, str]], session_key: str) -> str | None:
        ch = self.get(origin.channel, origin.account_id)
        thread = origin.thread_id if Capability.THREAD_REPLY in ch.capabilities else None
        if len(text) <= ch.text_limit:
            sent = await ch.send_buttons(origin.to, text, buttons, thread_id=thread)
            if sent is not None:
                await self.history.record_out(ch.name, ch.account_id, sent, text, session_key=session_key)
                return sent.message_id
        await self.deliver(origin, text, session_key)
        return None

    async def settle(self, origin: Origin, message_id: str, text: str) -> bool:
        ch = self.get(origin.channel, origin.account_id)
        if Capability.EDIT not in ch.capabilities or len(text) > ch.text_limit:
            return False
        await ch.edit(origin.to, message_id, text, thread_id=origin.thread_id)
        return True

    def _stream_mode(self, channel: str, account_id: str) -> str:
        """The account's ``stream`` setting as the config says now (a live setting: no restart, next turn)."""
        _given, section = channel_sections(self.host.config).get(channel, (False, {}))
        return str(account_configs(section).get(account_id, {}).get("stream") or "edits")

    # -- outbound ----------------------------------------------------------------------------------

    async def send_text(self, channel: str, account_id: str | None, to: str, text: str, *,
                        thread_id: str | None = None, reply_to_id: str | None = None,
                        effect_id: str | None = None, session_key: str | None = None,
                        op: str = "send") -> list[Sent]:
        """Send ``text`` in as many pieces as the channel's limit needs; the reply/effect go on the first."""
        ch = self.get(channel, account_id)
        ch.require(Capability.SEND)
        if thread_id is not None:
            ch.require(Capability.THREAD_REPLY)
        if effect_id is not None:
            ch.require(Capability.EFFECT)
        if reply_to_id is not None or op == "reply":
            ch.require(Capability.REPLY)
        sent: list[Sent] = []
        for i, piece in enumerate(split_text(text, ch.text_limit)):
            first = i == 0
            out = await ch.send(to, piece, thread_id=thread_id, reply_to_id=reply_to_id if first else None,
                                effect_id=effect_id if first else None)
            await self.history.record_out(ch.name, ch.account_id, out, piece,
                                          reply_to_id=reply_to_id if first else None, session_key=session_key)
            sent.append(out)
        return sent

    async def send_attachment(self, channel: str, account_id: str | None, to: str, file: str, *,
                              caption: str | None = None, thread_id: str | None = None,
                              session_key: str | None = None) -> Sent:
        ch = self.get(channel, account_id)
        ch.require(Capability.ATTACHMENT)
        file = check_outbound_file(file, state_dir=self.host.state_dir, config_path=self.host.config_path)
        sent = await ch.send_attachment(to, file, caption=caption, thread_id=thread_id)
        await self.history.record_out(ch.name, ch.account_id, sent, caption or "",
                                      media=[{"kind": "file", "name": file}], session_key=session_key)
        return sent

    async def react(self, channel: str, account_id: str | None, to: str, message_id: str, emoji: str) -> None:
        ch = self.get(channel, account_id)
        ch.require(Capability.REACT)
        await ch.react(to, message_id, emoji)

    async def delete(self, channel: str, account_id: str | None, to: str, message_id: str) -> None:
        ch = self.get(channel, account_id)
        ch.require(Capability.DELETE)
        await ch.delete(to, message_id)
        await self.history.mark_deleted(channel, ch.account_id, to, message_id)

    async def pin(self, channel: str, account_id: str | None, to: str, message_id: str) -> None:
        ch = self.get(channel, account_id)
        ch.require(Capability.PIN)
        await ch.pin(to, message_id)

    async def read(self, channel: str, account_id: str | None, to: str, *, limit: int = 20,
                   thread_id: str | None = None) -> list[dict[str, Any]]:
        """Stored messages of one chat, oldest first (works while the channel is down, too)."""
        with contextlib.suppress(ChannelNotLinked):
            ch = self.get(channel, account_id)
            account_id = ch.account_id
            own = await ch.read_history(to, limit=limit, thread_id=thread_id)
            if own is not None:
                return own
        return await self.history.read(channel, account_id, to, limit=limit, thread_id=thread_id)

    # -- inbound -----------------------------------------------------------------------------------

    async def _on_inbound(self, msg: Inbound) -> None:
        """Store, check who is talking, then hand over to the bridge (or answer with a pairing code)."""
        try:
            if not await self.history.record_in(msg):
                log.info("inbound message seen before: not handled twice", channel=msg.channel, chat=msg.chat_id,
                         message=msg.message_id)
                return
        except Exception:
            log.exception("inbound message could not be stored", channel=msg.channel, chat=msg.chat_id)
            raise  # not acknowledged: the platform (or the journal) hands it out again
        try:
            await self.route(msg)
        except Exception:
            # One bad message must not stop the channel's update loop.
            log.exception("inbound message failed", channel=msg.channel, chat=msg.chat_id)
        finally:
            await self.history.handled(msg)

    async def route(self, msg: Inbound) -> access.Decision:
        config = self.host.config
        _given, section = channel_sections(config).get(msg.channel, (False, {}))
        cfg = access.access_config(section)
        owner = access.is_owner(cfg, config.channels.ownerAllowFrom, msg)
        approved = (msg.chat_type == "dm" and not owner
                    and await self.host.is_approved(msg.channel, msg.sender_id))
        decision = access.decide(cfg, msg, owner=owner, approved=approved)
        log.info("inbound", channel=msg.channel, account=msg.account_id, chat=msg.chat_id, sender=msg.sender_id,
                 action=decision.action, reason=decision.reason, owner=decision.is_owner)
        if decision.action == "pair":
            await self._offer_pairing(msg)
        elif decision.action == "allow":
            await self.host.handle_inbound(msg, is_owner=decision.is_owner)
        return decision

    async def _offer_pairing(self, msg: Inbound) -> None:
        got = await self.host.request_pairing_code(msg)
        if got is None:
            log.warning("too many pending pairing requests; ignoring sender", channel=msg.channel)
            return
        code, created = got
        if not created:
            return  # they already have a code; answering every message would let strangers spam the bot
        log.info("pairing requested", channel=msg.channel, sender=msg.sender_id, code=code)
        with contextlib.suppress(Exception):
            await self.send_text(msg.channel, msg.account_id, msg.chat_id,
                                 PAIRING_TEXT.format(code=code, channel=msg.channel), thread_id=msg.thread_id)

    async def notify_approved(self, request: dict[str, Any]) -> bool:
        """Tell a newly approved sender (best effort)."""
        try:
            await self.send_text(request["channel"], request["accountId"], request["chatId"], APPROVED_TEXT)
        except Exception as exc:
            log.warning("cannot notify approved sender", channel=request["channel"], error=str(exc))
            return False
        return True

    # -- webhooks ----------------------------------------------------------------------------------

    async def webhook(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        name, acct = request.path_params["channel"], request.path_params["account_id"]
        ch = self.channels.get((name, acct))
        if ch is None:
            return JSONResponse({"ok": False, "error": f"no webhook for {name}/{acct}"}, status_code=404)
        return await ch.handle_webhook(request)


async def start(host: PlatformHost) -> None:
    """Subsystem entry: build the manager, serve webhooks, follow config changes, start accounts."""
    from starlette.routing import Route

    mgr = ChannelManager(host)
    host.attach(mgr)
    host.add_route(Route("/channels/{channel}/{account_id}/webhook", mgr.webhook, methods=["POST"]))

    async def on_change(_old: Config, new: Config, changed: frozenset[str]) -> None:
        # A plugin switched on or off may have added or taken away a channel type (the plugins apply first).
        if "channels" in changed or "plugins" in changed:
            await mgr.apply(new)

    host.on_config_change(on_change)
    pruning = asyncio.create_task(keep_pruned(host), name="media-pruning")

    async def stop() -> None:
        pruning.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pruning
        await mgr.stop()

    host.on_stop(stop)
    await mgr.apply(host.config)
