"""The built-in web chat as a channel, so ``message.send`` can reach people reading the page.

People on the web chat page talk through ``chat.send`` directly, so there is no inbound side here.
Outbound, a target is a session key (``main`` means the default agent's main session): the text
is added to that session's transcript as an assistant message (so it is still there after a
reload) and pushed as a ``chat`` event with ``state: "final"`` to every connected viewer, which is
exactly how the page shows a finished reply.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import structlog

from channels.base import Capability, Channel, ChannelError, ChannelUnavailable, InboundHandler, Sent
from gateway.rpc import READ

if TYPE_CHECKING:
    from gateway.core import Gateway

__all__ = ["WebchatChannel"]

log = structlog.get_logger("channels.webchat")


class WebchatChannel(Channel):
    """The web chat page's viewers, addressed by session key."""

    name = "webchat"
    text_limit = 100_000
    capabilities = frozenset({Capability.SEND, Capability.READ})

    def __init__(self, account_id: str, on_inbound: InboundHandler, *, gateway: Gateway | None) -> None:
        super().__init__(account_id, on_inbound)
        self._gw = gateway

    @classmethod
    def configured(cls, cfg: dict[str, Any]) -> bool:
        return True

    @classmethod
    def from_config(cls, account_id: str, on_inbound: InboundHandler, cfg: dict[str, Any]) -> WebchatChannel:
        # The manager hands the running gateway over as ``_gateway``: web chat "sends" are events on it.
        return cls(account_id, on_inbound, gateway=cfg.get("_gateway"))

    async def start(self) -> None:
        if self._gw is None:
            raise ChannelUnavailable("webchat channel has no gateway to publish to")

    async def stop(self) -> None:
        return None

    def _session_key(self, to: str) -> str:
        sessions = self._gw.services.get("sessions") if self._gw else None
        key = to.strip()
        if not key:
            raise ChannelError("webchat target must be a session key, e.g. agent:main:main", details={"field": "to"})
        if sessions is not None:
            return str(sessions.normalize_key(key))
        if key == "main" and self._gw is not None:
            return f"agent:{self._gw.config.agents.default}:main"
        return key

    async def send(self, to: str, text: str, *, thread_id: str | None = None, reply_to_id: str | None = None,
                   effect_id: str | None = None) -> Sent:
        gw = self._gw
        if gw is None:
            raise ChannelUnavailable("webchat channel is not running")
        if thread_id:
            self.require(Capability.THREAD_REPLY)
        key = self._session_key(to)
        message_id = uuid.uuid4().hex
        entry_id = await self._record(gw, key, text, message_id)
        viewers = gw.broadcast("chat", {"runId": f"msg-{message_id}", "sessionKey": key, "state": "final",
                                        "text": text, "messageId": message_id}, scope=READ)
        log.info("webchat message sent", session_key=key, viewers=viewers, entry=entry_id)
        return Sent(message_id=message_id, chat_id=key)

    async def _record(self, gw: Gateway, key: str, text: str, message_id: str) -> int | None:
        """Keep the message in the session transcript, so the page shows it again after a reload."""
        sessions = gw.services.get("sessions")
        if sessions is None:
            return None
        from gateway.store.sessions import SessionRepo

        await sessions.ensure(key)
        async with gw.db.session() as s:
            entry = await SessionRepo.add_entry(s, key, "assistant", text, run_id=f"msg-{message_id}")
            await s.flush()
            return entry.id
