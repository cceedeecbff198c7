"""The built-in web chat as a channel: the agent's message tools act on the page people are reading.

People on the page talk through ``chat.send``, which gives the run this channel as its origin, so there is
no inbound side here. A target is a session key (``main`` means the default agent's main session) and a
message id is the number of the message in that session's transcript (what ``message_read`` shows). Every
operation goes through ``PlatformHost.webchat`` (``gateway.webchat``), which writes the transcript first and
then pushes the change to every open page, so a reload shows what the live page showed:

- send / reply / thread reply: a new message, quoting the one it answers (a thread reply is shown as a
  reply under the thread's first message: the page has no separate threads);
- send attachment: the file is copied into the gateway's store at once (the agent's workspace does not
  outlive its turn); images show inline, other files download;
- react (one reaction of the agent's per message, an empty emoji removes it), pin, delete.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from channels.base import Capability, Channel, ChannelError, ChannelUnavailable, InboundHandler, Sent

if TYPE_CHECKING:
    from channels.environment import ChannelEnvironment
    from gateway.platforms import FileBytes, PlatformHost, WebchatPosts

__all__ = ["WebchatChannel"]

log = structlog.get_logger("channels.webchat")


class WebchatChannel(Channel):
    """The web chat page's viewers, addressed by session key."""

    name = "webchat"
    text_limit = 100_000
    capabilities = frozenset({Capability.SEND, Capability.READ, Capability.REPLY, Capability.THREAD_REPLY,
                              Capability.REACT, Capability.DELETE, Capability.PIN, Capability.ATTACHMENT})

    def __init__(self, account_id: str, on_inbound: InboundHandler, *, host: PlatformHost | None) -> None:
        super().__init__(account_id, on_inbound)
        self._host = host

    @classmethod
    def from_config(cls, account_id: str, settings: dict[str, Any], env: ChannelEnvironment) -> WebchatChannel:
        # Web chat "sends" are posts to the gateway's transcripts, through its PlatformHost.
        return cls(account_id, env.receive, host=env.host)

    async def start(self) -> None:
        if self._host is None:
            raise ChannelUnavailable("webchat channel has no gateway to publish to")

    async def stop(self) -> None:
        return None

    def _posts(self, to: str) -> WebchatPosts:
        if self._host is None:
            raise ChannelUnavailable("webchat channel is not running")
        if not to.strip():
            raise ChannelError("webchat target must be a session key, e.g. agent:main:main", details={"field": "to"})
        return self._host.webchat

    async def send(self, to: str, text: str, *, thread_id: str | None = None, reply_to_id: str | None = None,
                   effect_id: str | None = None, silent: bool = False) -> Sent:
        posts = self._posts(to)
        key, message_id = await posts.post(to, text, reply_to=thread_id or reply_to_id, thread=thread_id is not None)
        log.info("webchat message sent", session_key=key, message_id=message_id)
        return Sent(message_id=message_id, chat_id=key, thread_id=thread_id)

    async def send_buttons(self, to: str, text: str, buttons: list[tuple[str, str]], *,
                           thread_id: str | None = None) -> Sent | None:
        """A message with buttons under it on the page; a press sends the button's text as the viewer's own
        message (``chat.send``), so it is decided like a typed ``/approve``."""
        posts = self._posts(to)
        key, message_id = await posts.post(to, text, buttons=buttons)
        return Sent(message_id=message_id, chat_id=key, thread_id=thread_id)

    async def send_attachment(self, to: str, file: str | FileBytes, *, caption: str | None = None,
                              thread_id: str | None = None) -> Sent:
        posts = self._posts(to)
        key, message_id = await posts.post(to, caption or "", reply_to=thread_id, thread=thread_id is not None,
                                           file=file)
        log.info("webchat file sent", session_key=key, message_id=message_id)
        return Sent(message_id=message_id, chat_id=key, thread_id=thread_id)

    async def react(self, to: str, message_id: str, emoji: str) -> None:
        await self._posts(to).react(to, message_id, emoji)

    async def delete(self, to: str, message_id: str, *, thread_id: str | None = None) -> None:
        await self._posts(to).delete(to, message_id)

    async def pin(self, to: str, message_id: str) -> None:
        await self._posts(to).pin(to, message_id)

    async def read_history(self, to: str, *, limit: int, thread_id: str | None = None) -> list[dict[str, Any]] | None:
        return await self._posts(to).read(to, limit=limit)
