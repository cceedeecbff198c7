"""The chat platforms as the rest of the gateway calls them: with the plugins' message hooks around sends.

``PlatformHost.attach`` wraps the platform package's ``ChatPlatforms`` in this, so every outgoing text (a
run's reply, a ``message.*`` call, a cron announcement) passes ``message_sending``, which may rewrite it or
cancel it, and ``message_sent`` after. With no such hook loaded, a send costs two dict lookups more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from gateway.protocol import InvalidRequest

if TYPE_CHECKING:
    from gateway.hooks.runner import HookRunner
    from gateway.platforms.interface import ChatPlatforms
    from gateway.platforms.messages import Sent
    from gateway.runs import Origin

__all__ = ["HookedPlatforms", "MessageCancelled"]

log = structlog.get_logger("gateway.platforms")


class MessageCancelled(InvalidRequest):
    """A plugin's ``message_sending`` hook cancelled the message; the caller is told by whom and why."""


class HookedPlatforms:
    """``ChatPlatforms`` with ``message_sending`` / ``message_sent`` around ``send_text`` and ``deliver``;
    every other operation goes straight to the platforms underneath (each one written out, so a reader and mypy
    see which operations exist)."""

    def __init__(self, inner: ChatPlatforms, hooks: HookRunner) -> None:
        self.inner = inner
        self._hooks = hooks
        self.typing = inner.typing
        self.progress_note = inner.progress_note
        self.ask = inner.ask
        self.settle = inner.settle
        self.send_attachment = inner.send_attachment
        self.react = inner.react
        self.delete = inner.delete
        self.pin = inner.pin
        self.read = inner.read
        self.describe = inner.describe

    async def _sending(self, event: dict[str, Any]) -> str:
        """The text to send after the hooks had their say; raises ``MessageCancelled``."""
        if not self._hooks.has("message_sending"):
            return str(event["content"])
        decided = await self._hooks.decide("message_sending", event)
        if decided.get("cancel"):
            log.info("message cancelled by a plugin", plugin=decided.get("plugin"), channel=event.get("channel"),
                     reason=decided.get("reason"))
            raise MessageCancelled(f"message cancelled by plugin {decided.get('plugin')}: {decided.get('reason')}",
                                   details={"code": "CANCELLED_BY_PLUGIN", "plugin": decided.get("plugin")})
        content = decided.get("content")
        return content if isinstance(content, str) and content else str(event["content"])

    def _sent(self, event: dict[str, Any], content: str, message_ids: list[str]) -> None:
        if self._hooks.has("message_sent"):
            self._hooks.fire("message_sent", {**event, "content": content, "messageIds": message_ids})

    async def send_text(self, channel: str, account_id: str | None, to: str, text: str, **kwargs: Any) -> list[Sent]:
        event = {"channel": channel, "accountId": account_id, "to": to, "content": text,
                 "sessionKey": kwargs.get("session_key")}
        content = await self._sending(event)
        sent = await self.inner.send_text(channel, account_id, to, content, **kwargs)
        self._sent(event, content, [s.message_id for s in sent])
        return sent

    async def deliver(self, origin: Origin, text: str, session_key: str, *, reply_to_id: str | None = None) -> int:
        event = {"channel": origin.channel, "accountId": origin.account_id, "to": origin.to, "content": text,
                 "sessionKey": session_key}
        try:
            content = await self._sending(event)
        except MessageCancelled:
            return 0
        count = await self.inner.deliver(origin, content, session_key, reply_to_id=reply_to_id)
        self._sent(event, content, [])
        return count
