"""The inbound pipeline: the part of receiving a message that is the same on every platform.

Each channel account turns its platform's deliveries into ``(key, payload)`` pairs: ``key`` the platform's id
of the update (unique per account), ``payload`` a JSON-able dict holding what is needed to handle it later.
The pipeline then, for every channel alike:

1. writes it down before the platform is told it arrived (``receive``): in the gateway's inbound journal,
   or, without one (a channel built alone in a test), a bounded set of recent keys. A redelivery is dropped
   here, so a platform that delivers twice (a retried webhook, a reconnect) is handled once;
2. runs the channel's ``handle(payload)`` in the background, one conversation's updates in the order they
   came and different conversations side by side (``conversation(payload)`` names the conversation);
3. marks it done when ``handle`` returned; one that raised (or was cut off by a stop) stays unhandled
   in the journal and is handed out again by ``replay`` at the account's next start.

What stays in a channel is its platform's: how updates arrive and are acknowledged, which key and payload
stand for one, and ``handle``: the payload mapped to an ``Inbound`` and given to the gateway.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any

import structlog

from channels.ordering import KeyedTasks

if TYPE_CHECKING:
    from gateway.platforms import InboundJournal

__all__ = ["SEEN_KEPT", "InboundPipeline", "Payload"]

log = structlog.get_logger("channels.inbound")

Payload = dict[str, Any]

SEEN_KEPT = 10_000
"""Without a journal: how many recent keys are remembered to drop redeliveries."""


class InboundPipeline:
    """One channel account's inbound flow: write down, hand out in order, mark done, replay after a restart.

    Args:
        channel: the channel type's name (the journal's first key).
        account_id: the account (the journal's second key).
        journal: the gateway's inbound journal; None keeps only a bounded in-memory set of recent keys.
        handle: the channel's own step: the payload mapped to an ``Inbound`` and handed to the gateway. An
            exception leaves the update unhandled (replayed at the next start, up to the journal's limit).
        conversation: the payload's conversation; updates of one are handled one after another, in order.
    """

    def __init__(
        self,
        channel: str,
        account_id: str,
        journal: InboundJournal | None,
        *,
        handle: Callable[[Payload], Awaitable[None]],
        conversation: Callable[[Payload], Hashable],
    ) -> None:
        self.channel = channel
        self.account_id = account_id
        self._journal = journal
        self._handle = handle
        self._conversation = conversation
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._tasks = KeyedTasks()
        # One write at a time: a platform can deliver one update twice at once (Slack sends a mention as both
        # ``message`` and ``app_mention``), and two writers of one key would both find it new.
        self._writing = asyncio.Lock()

    async def receive(self, key: str, payload: Payload) -> bool:
        """Write the update down and start handling it; False for a redelivery (dropped).

        Raises whatever the journal raises when it cannot be written: the caller must then not acknowledge
        the update, so that the platform delivers it again.
        """
        if not await self._first_time(key, payload):
            log.info("inbound update delivered again: handled once only", channel=self.channel,
                     account=self.account_id, update=key)
            return False
        self._start(key, payload)
        return True

    async def replay(self) -> int:
        """Hand out again what was written down but not handled before the last stop; how many."""
        if self._journal is None:
            return 0
        pending = await self._journal.unhandled(self.channel, self.account_id)
        for key, payload in pending:
            self._start(key, payload)
        if pending:
            log.info("inbound updates replayed after a restart", channel=self.channel, account=self.account_id,
                     count=len(pending))
        return len(pending)

    async def stop(self) -> None:
        """End the handling under way; what it cut off stays unhandled in the journal (replayed next start)."""
        await self._tasks.cancel()

    async def _first_time(self, key: str, payload: Payload) -> bool:
        async with self._writing:
            return await self._first_time_unlocked(key, payload)

    async def _first_time_unlocked(self, key: str, payload: Payload) -> bool:
        if self._journal is not None:
            return await self._journal.put(self.channel, self.account_id, key, payload)
        if key in self._seen:
            return False
        self._seen[key] = None
        if len(self._seen) > SEEN_KEPT:
            self._seen.popitem(last=False)
        return True

    def _start(self, key: str, payload: Payload) -> None:
        try:
            conversation = self._conversation(payload)
        except Exception:  # a payload the channel cannot place: handled on its own, still in order of arrival
            log.exception("inbound update without a conversation", channel=self.channel, update=key)
            conversation = ("update", key)
        self._tasks.start((self.channel, conversation), lambda: self._run(key, payload),
                          f"{self.channel}-inbound-{self.account_id}")

    async def _run(self, key: str, payload: Payload) -> None:
        try:
            await self._handle(payload)
        except Exception:  # left unhandled in the journal: replayed at the next start
            log.exception("inbound update not handled", channel=self.channel, account=self.account_id, update=key)
            return
        if self._journal is not None:
            await self._journal.done(self.channel, self.account_id, key)
