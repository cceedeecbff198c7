"""What a channel account is given besides its own settings: the gateway's services and its own folders.

Before this, such facts travelled as ``_``-prefixed keys inside the account's config mapping, and each
channel picked a different one out of it. Now each account is built with ``from_config(account_id,
settings, env)``: ``settings`` is only what the person wrote under ``channels.<name>``, ``env`` is this.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from channels.media import account_media_dir
from channels.pipeline import InboundPipeline, Payload

if TYPE_CHECKING:
    from gateway.platforms import Inbound, InboundHandler, InboundJournal, MessageLog, PlatformHost

__all__ = ["ChannelEnvironment"]


@dataclass(frozen=True)
class ChannelEnvironment:
    """One account's place in the gateway.

    Attributes:
        channel: the channel type's name (``telegram``).
        account_id: the account's id (``default``, or a key of ``accounts``).
        receive: the gateway's inbound door: every message the account receives goes here once.
        host: the gateway as platform packages see it; None for an account built alone (a test).
        state_dir: the gateway's state folder; None keeps nothing on disk.
        public_url: ``gateway.publicUrl``: where platforms reach our webhooks.
        menu_commands: ``messages.commands``: list the chat commands in the platform's menu.
    """

    channel: str
    account_id: str
    receive: InboundHandler
    host: PlatformHost | None = None
    state_dir: Path | None = None
    public_url: str | None = None
    menu_commands: bool = False

    @classmethod
    def alone(cls, channel: str, account_id: str, receive: Callable[[Inbound], Awaitable[None]],
              state_dir: Path | None = None) -> ChannelEnvironment:
        """An account with no gateway around it (tests of a channel's platform mapping)."""
        return cls(channel, account_id, receive, state_dir=state_dir)

    @property
    def journal(self) -> InboundJournal | None:
        return self.host.journal if self.host is not None else None

    @property
    def history(self) -> MessageLog | None:
        return self.host.history if self.host is not None else None

    @property
    def account_dir(self) -> Path | None:
        """``<state>/<channel>/<account>``: the account's own files (a sync token, a 24-hour window)."""
        return self.state_dir / self.channel / self.account_id if self.state_dir is not None else None

    @property
    def media_dir(self) -> Path | None:
        """Where received attachments are saved for the agent (pruned by age: ``channels.media``)."""
        return account_media_dir(self.state_dir, self.channel, self.account_id) if self.state_dir else None

    def webhook_url(self) -> str | None:
        """Our webhook for this account under ``gateway.publicUrl``, when one is set."""
        if not self.public_url:
            return None
        return f"{self.public_url.rstrip('/')}/channels/{self.channel}/{self.account_id}/webhook"

    def pipeline(self, handle: Callable[[Payload], Awaitable[None]],
                 conversation: Callable[[Payload], Hashable]) -> InboundPipeline:
        """The account's inbound pipeline (``channels.pipeline``), on the gateway's journal when there is one."""
        return InboundPipeline(self.channel, self.account_id, self.journal, handle=handle,
                               conversation=conversation)
