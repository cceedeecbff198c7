"""The built-in web chat as a channel, so ``message.send`` can reach people reading the page.

People on the web chat page talk through ``chat.send`` directly, so there is no inbound side here.
Outbound, a target is a session key (``main`` means the default agent's main session): the text
is added to that session's transcript as an assistant message (so it is still there after a
reload) and pushed as a ``chat`` event with ``state: "final"`` to every connected viewer, which is
exactly how the page shows a finished reply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from channels.base import Capability, Channel, ChannelError, ChannelUnavailable, InboundHandler, Sent

if TYPE_CHECKING:
    from gateway.platforms import PlatformHost

__all__ = ["WebchatChannel"]

log = structlog.get_logger("channels.webchat")


class WebchatChannel(Channel):
    """The web chat page's viewers, addressed by session key."""

    name = "webchat"
    text_limit = 100_000
    capabilities = frozenset({Capability.SEND, Capability.READ})

    def __init__(self, account_id: str, on_inbound: InboundHandler, *, host: PlatformHost | None) -> None:
        super().__init__(account_id, on_inbound)
        self._host = host

    @classmethod
    def from_config(cls, account_id: str, on_inbound: InboundHandler, cfg: dict[str, Any]) -> WebchatChannel:
        # The manager hands the gateway's PlatformHost over as ``_host``: web chat "sends" are posts to it.
        return cls(account_id, on_inbound, host=cfg.get("_host"))

    async def start(self) -> None:
        if self._host is None:
            raise ChannelUnavailable("webchat channel has no gateway to publish to")

    async def stop(self) -> None:
        return None

    async def send(self, to: str, text: str, *, thread_id: str | None = None, reply_to_id: str | None = None,
                   effect_id: str | None = None) -> Sent:
        if self._host is None:
            raise ChannelUnavailable("webchat channel is not running")
        if thread_id:
            self.require(Capability.THREAD_REPLY)
        if not to.strip():
            raise ChannelError("webchat target must be a session key, e.g. agent:main:main", details={"field": "to"})
        key, message_id = await self._host.post_to_session(to, text)
        log.info("webchat message sent", session_key=key, message_id=message_id)
        return Sent(message_id=message_id, chat_id=key)
