"""The channels package's start, run by the gateway (``remoteclaw.platforms`` entry point) with a ``PlatformHost``.

It puts three parts together, one job each:
- ``channels.accounts``: which accounts the config wants, running them, finding one, their webhooks;
- ``channels.operations``: the gateway's ``ChatPlatforms`` (replies, typing, progress, approvals' buttons, the
  ``message.*`` operations), attached as the gateway's way to chats;
- the inbound side is the gateway's: every account hands each message to ``host.receive`` once
  (``gateway.platforms.door``: history, access, pairing offers, routing).
It also keeps the received media folder pruned and follows live config changes.
"""

from __future__ import annotations

import asyncio
import contextlib

from channels.accounts import Accounts, register_channel_type
from channels.media import keep_pruned
from channels.operations import ChannelOperations
from gateway.platforms import Config, PlatformHost

__all__ = ["register_channel_type", "start"]


async def start(host: PlatformHost) -> None:
    """Subsystem entry: run the accounts, attach their operations, serve webhooks, follow config changes."""
    from starlette.routing import Route

    accounts = Accounts(host, on_inbound=host.receive)
    host.attach(ChannelOperations(accounts))
    # GET too: some platforms (WhatsApp) verify a webhook URL with a GET before they post to it.
    host.add_route(Route("/channels/{channel}/{account_id}/webhook", accounts.webhook, methods=["GET", "POST"]))

    async def on_change(_old: Config, new: Config, changed: frozenset[str]) -> None:
        # A plugin switched on or off may have added or taken away a channel type (the plugins apply first).
        if "channels" in changed or "plugins" in changed:
            await accounts.apply(new)

    host.on_config_change(on_change)
    pruning = asyncio.create_task(keep_pruned(host), name="media-pruning")

    async def stop() -> None:
        pruning.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pruning
        await accounts.stop()

    host.on_stop(stop)
    await accounts.apply(host.config)
