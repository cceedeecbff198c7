"""The gateway's way to chats (its ``ChatPlatforms`` interface), over the running channel accounts.

Agent runs deliver replies, show typing and progress, and ask approvals through it; the ``message.*`` methods
send, react, delete, pin and read through it. Text is split at the channel's limit, an operation the channel
cannot do is refused naming it, and every message in and out is stored (the host's message log), so
``message.read`` works on every channel: every outbound message, the agents' replies included, goes through
``send_text`` or ``send_attachment`` here.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from channels.accounts import Accounts
from channels.base import Capability, Channel, ChannelNotLinked, Sent
from channels.chunking import split_text
from channels.files import check_outbound_file
from channels.progress import ProgressNote
from gateway.platforms import FileBytes, Origin

__all__ = ["ChannelOperations"]


class ChannelOperations:
    """Outbound operations on the running accounts, for agent runs and the ``message.*`` methods."""

    def __init__(self, accounts: Accounts) -> None:
        self.accounts = accounts
        self.host = accounts.host
        self.history = accounts.host.history

    def get(self, channel: str, account_id: str | None = None) -> Channel:
        """The running account (``Accounts.get``)."""
        return self.accounts.get(channel, account_id)

    def describe(self) -> list[dict[str, Any]]:
        return self.accounts.describe()

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
        stream = self.accounts.stream_mode(origin.channel, ch.account_id)
        return ProgressNote(ch, origin.to, thread_id=thread, stream=stream)

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

    async def send_attachment(self, channel: str, account_id: str | None, to: str, file: str | FileBytes, *,
                              caption: str | None = None, thread_id: str | None = None,
                              session_key: str | None = None) -> Sent:
        ch = self.get(channel, account_id)
        ch.require(Capability.ATTACHMENT)
        # A local file is read here, once, by descriptor: the channel gets its bytes, never a path to read again.
        file = await asyncio.to_thread(check_outbound_file, file, state_dir=self.host.state_dir,
                                       config_path=self.host.config_path)
        sent = await ch.send_attachment(to, file, caption=caption, thread_id=thread_id)
        name = file if isinstance(file, str) else file.where or file.name
        await self.history.record_out(ch.name, ch.account_id, sent, caption or "",
                                      media=[{"kind": "file", "name": name}], session_key=session_key)
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

