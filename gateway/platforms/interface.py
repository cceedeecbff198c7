"""What the gateway needs from chat platforms, as one typed interface it owns.

The channels package implements ``ChatPlatforms`` (its channel manager) and hands it to the gateway
through ``PlatformHost.attach``; the gateway's agent executor and its ``message.*``/pairing methods
call only these operations. So the gateway runs without any platform installed, and a plugin could
provide the same interface.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from gateway.sandbox.open_beneath import MAX_READ_BYTES

if TYPE_CHECKING:
    from gateway.platforms.messages import Sent
    from gateway.runs import Origin
    from gateway.sandbox.open_beneath import FileBytes

__all__ = ["MAX_ATTACHMENT_BYTES", "ChatPlatforms", "ProgressSink"]

MAX_ATTACHMENT_BYTES = MAX_READ_BYTES
"""A local file sent as an attachment is read whole into memory: a huge one must not take the gateway down."""


class ProgressSink(Protocol):
    """A chat message that shows the turn while it runs: its current step, and the reply as it is written
    (a live reply, where the channel's ``stream`` setting allows), edited in place or shown as a draft."""

    def step(self, tool_name: str | None) -> None:
        """The agent started a tool call (never waits: the edit happens in the background)."""

    def text(self, live: str) -> None:
        """The reply so far (never waits; shown only when the channel streams replies)."""

    def waiting(self, on: bool) -> None:
        """The run waits for its person (an approval or a question) from now on, or no longer (never waits)."""

    async def close(self) -> None:
        """Remove the note; called once, before the reply is delivered."""


class ChatPlatforms(Protocol):
    """Outbound operations on every running chat account, plus what a run needs while it works."""

    # -- for agent runs ----------------------------------------------------------------------------

    async def deliver(self, origin: Origin, text: str, session_key: str, *, reply_to_id: str | None = None) -> int:
        """Send a turn's reply (or a notice) to where the conversation lives; returns messages sent.

        A reply target or thread the channel cannot address is dropped rather than failing the reply.
        """

    async def typing(self, origin: Origin) -> float | None:
        """Show the typing indicator once; how long the platform keeps it (None: no indicator)."""

    def progress_note(self, origin: Origin) -> ProgressSink | None:
        """A progress note for a turn from ``origin``, or None where the channel cannot edit and delete."""

    async def ask(self, origin: Origin, text: str, buttons: list[tuple[str, str]], session_key: str) -> str | None:
        """Send ``text`` with buttons ``(label, what pressing it types)`` where the channel has them (a press comes
        back as an inbound message with that text); the message id, or None when it went as plain text."""

    async def settle(self, origin: Origin, message_id: str, text: str) -> bool:
        """Replace a message ``ask`` sent (its buttons go); False where the channel cannot edit."""

    # -- for the message.* methods -----------------------------------------------------------------

    async def send_text(self, channel: str, account_id: str | None, to: str, text: str, *,
                        thread_id: str | None = None, reply_to_id: str | None = None,
                        effect_id: str | None = None, session_key: str | None = None,
                        op: str = "send") -> list[Sent]:
        """Send ``text`` split at the channel's limit (reply and effect on the first piece)."""

    async def send_attachment(self, channel: str, account_id: str | None, to: str, file: str | FileBytes, *,
                              caption: str | None = None, thread_id: str | None = None,
                              session_key: str | None = None) -> Sent:
        """Send an http(s) URL, a file's bytes already read (what an agent run named: never read again by
        name), or a local path the gateway itself made or an operator gave (opened once by descriptor)."""

    async def react(self, channel: str, account_id: str | None, to: str, message_id: str, emoji: str) -> None: ...

    async def delete(self, channel: str, account_id: str | None, to: str, message_id: str) -> None: ...

    async def pin(self, channel: str, account_id: str | None, to: str, message_id: str) -> None: ...

    async def read(self, channel: str, account_id: str | None, to: str, *, limit: int = 20,
                   thread_id: str | None = None) -> list[dict[str, Any]]:
        """Stored messages of one chat, oldest first."""

    # -- for operators -----------------------------------------------------------------------------

    def describe(self) -> list[dict[str, Any]]:
        """Each configured account and its state (``channels.status``)."""
