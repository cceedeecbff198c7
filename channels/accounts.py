"""The running channel accounts: which ones the config wants, starting and restarting them, finding one.

Every configured account of every known channel type (the ``remoteclaw.channels`` extension point, so
Telegram, Discord, the web chat and a plugin's channel plug in the same way) starts in the background,
retrying while its platform is unreachable; a live config change restarts only the accounts whose
settings changed (access rules and ``stream`` are read per message, so they never restart a bot).

Channel type contract: a ``ChannelKind`` (``channels.kind``: name, config model, autostart) naming a ``Channel``
subclass (``channels.base``: ``from_config``, ``configured``, ``handle_webhook``). Each account is built with its
settings and a ``ChannelEnvironment`` (``channels.environment``): the gateway's services and its folders.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import structlog

from channels.base import Channel, ChannelError, ChannelNotLinked
from channels.environment import ChannelEnvironment
from channels.kind import ChannelKind
from gateway.composition.entry_points import CHANNELS
from gateway.extras import MissingExtra, extra_for_module
from gateway.platforms import ChannelAccessConfig, InboundHandler, PlatformHost, channel_section

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from gateway.platforms import Config

__all__ = ["Accounts", "account_configs", "channel_sections", "register_channel_type"]

log = structlog.get_logger("channels.accounts")

def register_channel_type(name: str, cls: str | type[Channel] | ChannelKind) -> None:
    """Add (or replace) a channel type in this process, e.g. from a test: the class, its kind, or
    ``"module:Class"`` to import when that channel is configured."""
    CHANNELS.register(name, cls)


def _autostarts(name: str) -> bool:
    """Whether the type runs without a config section (the web chat). Only a kind says so; loading it imports
    no platform library, which is imported only when an account is configured."""
    try:
        return bool(getattr(CHANNELS.load(name), "autostart", False))
    except Exception:
        return False


def _load_type(name: str) -> tuple[type[Channel] | None, str | None]:
    """The channel type, or None and why not: a library that is not part of this install names its extra."""
    try:
        entry = CHANNELS.load(name)
        cls: type[Channel] = entry.load() if isinstance(entry, ChannelKind) else entry
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
        value = channel_section(config, name)
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


class Accounts:
    """Running channel accounts by ``(channel, accountId)``: started from the config, looked up by name.

    Args:
        host: the gateway as platforms see it (config, state dir).
        on_inbound: what every account calls with each message it receives (the gateway's inbound door).
    """

    def __init__(self, host: PlatformHost, on_inbound: InboundHandler) -> None:
        self.host = host
        self._on_inbound = on_inbound
        self.channels: dict[tuple[str, str], Channel] = {}
        self.status: dict[tuple[str, str], dict[str, Any]] = {}
        self._configs: dict[tuple[str, str], dict[str, Any]] = {}
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._lock = asyncio.Lock()
        self.unloadable: dict[str, str] = {}
        """Configured channel types this install cannot load, and why (the extra to install)."""

    # -- lifecycle ---------------------------------------------------------------------------------

    def wanted(self, config: Config) -> dict[tuple[str, str], tuple[type[Channel], dict[str, Any]]]:
        out: dict[tuple[str, str], tuple[type[Channel], dict[str, Any]]] = {}
        unloadable: dict[str, str] = {}
        for name, (given, section) in channel_sections(config).items():
            if not (given or _autostarts(name)):
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
                ch = cls.from_config(acct_id, cfg, self._environment(name, acct_id))
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

    def _environment(self, channel: str, account_id: str) -> ChannelEnvironment:
        config = self.host.config
        return ChannelEnvironment(channel, account_id, self._on_inbound, host=self.host,
                                  state_dir=self.host.state_dir, public_url=config.gateway.publicUrl,
                                  menu_commands=bool(config.messages.commands))

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

    def stream_mode(self, channel: str, account_id: str) -> str:
        """The account's ``stream`` setting as the config says now (a live setting: no restart, next turn)."""
        _given, section = channel_sections(self.host.config).get(channel, (False, {}))
        return str(account_configs(section).get(account_id, {}).get("stream") or "edits")

    # -- webhooks ----------------------------------------------------------------------------------

    async def webhook(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        name, acct = request.path_params["channel"], request.path_params["account_id"]
        ch = self.channels.get((name, acct))
        if ch is None:
            return JSONResponse({"ok": False, "error": f"no webhook for {name}/{acct}"}, status_code=404)
        return await ch.handle_webhook(request)


