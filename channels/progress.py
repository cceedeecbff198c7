"""The live note: one chat message that shows a turn while it runs, gone when the reply arrives.

An agent turn can take minutes. In a web page the reply and the tool calls stream in; in Telegram or Discord the
user would see only "typing…". So the gateway keeps one note up to date while the agent works, and the reply itself
is then sent as a normal message (the one notification of the turn). What the note shows follows the account's
``stream`` setting:

* ``off``: the current step only ("⏳ Working… step 3: Bash"), from the first tool call on;
* ``edits`` (the default): the reply as it is written (its last part, within the platform's length limit), with
  the current step under it while a tool runs; one message sent silently, edited in place;
* ``draft``: the same text as a Telegram draft (``sendMessageDraft``, private chats): animated, ephemeral, and
  replaced by the reply; chats without drafts (groups, Discord) use edits.

Updates are throttled to one per ``min_interval_s`` (chat platforms rate-limit edits; the newest text wins), the
note is deleted before the reply is delivered, and any platform error ends the note for that turn: the turn itself
never fails because of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets

import structlog

from channels.base import Channel

__all__ = ["STREAM_MODES", "ProgressNote", "step_label"]

log = structlog.get_logger("channels.progress")

STREAM_MODES = ("off", "edits", "draft")

FIRST_TEXT_DELAY_S = 1.0
"""A turn that writes text and ends within this long never shows a note: its reply is all the user needs."""


def step_label(tool_name: str) -> str:
    """``mcp__remoteclaw__message_send`` -> ``message_send``; built-in tools (``Bash``) as they are."""
    return tool_name.rsplit("__", 1)[-1] if tool_name.startswith("mcp__") else tool_name


class ProgressNote:
    """Started per turn by the agent executor; ``step`` for each tool call, ``text`` as the reply is written, ``close``
    at the end."""

    def __init__(self, channel: Channel, to: str, *, thread_id: str | None = None, stream: str = "edits",
                 min_interval_s: float = 1.5) -> None:
        self.channel, self.to, self.thread_id = channel, to, thread_id
        self.stream = stream if stream in STREAM_MODES else "edits"
        self.min_interval_s = min_interval_s if self.stream != "draft" else min(min_interval_s, 0.8)
        self.steps = 0
        self._last = ""
        self._live = ""
        self._tool_running = False
        self._waiting = False
        self._shown = ""
        self._message_id: str | None = None
        self._draft_id: int | None = secrets.randbelow(2**31 - 1) + 1 if self.stream == "draft" else None
        self._wake = asyncio.Event()
        self._closed = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="progress-note")

    def step(self, tool_name: str | None) -> None:
        """A tool call started (called from the runtime's event callback; never blocks)."""
        self.steps += 1
        self._last = step_label(tool_name or "tool")
        self._tool_running = True
        self._wake.set()

    def text(self, live: str) -> None:
        """The reply so far (never blocks); ignored with ``stream: off``."""
        if self.stream == "off" or not live.strip():
            return
        self._live = live.rstrip()
        self._tool_running = False
        self._wake.set()

    def waiting(self, on: bool) -> None:
        """The run waits for its person (an approval or a question), or no longer (never blocks)."""
        self._waiting = on
        self._wake.set()

    def render(self) -> str:
        """What the note says now: the reply's last part within the channel's limit, or the current step."""
        working = f"⏳ Working… step {self.steps}: {self._last}"
        if self._waiting:
            working = "⏸ Waiting for you" + (f" (after {self._last})" if self._last else "")
        if not self._live:
            return working
        footer = f"\n\n{working}" if self._tool_running and self.steps else " ✍️"
        room = self.channel.text_limit - len(footer) - 2
        body = self._live if len(self._live) <= room else "…" + self._live[-(room - 1):]
        return body + footer

    async def _show(self, text: str) -> None:
        if self._draft_id is not None:
            if await self.channel.draft(self.to, self._draft_id, text, thread_id=self.thread_id):
                return
            self._draft_id = None  # no drafts in this chat: edits from here on
        if self._message_id is None:
            sent = await self.channel.send(self.to, text, thread_id=self.thread_id, silent=True)
            self._message_id = sent.message_id
        else:
            await self.channel.edit(self.to, self._message_id, text, thread_id=self.thread_id)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            if self._closed.is_set():
                return
            self._wake.clear()
            if not self._shown and self._live and not self.steps:
                # Text with no tool call yet: a short turn's whole answer may be about to arrive. Wait a moment
                # before putting up a note, so it is not sent only to be deleted at once.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closed.wait(), FIRST_TEXT_DELAY_S)
                if self._closed.is_set():
                    return
            text = self.render()
            if text != self._shown:
                try:
                    await self._show(text)
                    self._shown = text
                except Exception as exc:
                    log.info("progress note stopped for this turn", channel=self.channel.name, error=str(exc))
                    return
            with contextlib.suppress(TimeoutError):  # throttle, but wake at once for close()
                await asyncio.wait_for(self._closed.wait(), self.min_interval_s)

    async def close(self) -> None:
        """Stop updating and delete the note (a send already in flight is let finish, then removed)."""
        self._closed.set()
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), 10)
        except TimeoutError:
            self._task.cancel()
        if self._message_id is not None:
            try:
                await self.channel.delete(self.to, self._message_id, thread_id=self.thread_id)
            except Exception as exc:
                log.info("progress note not deleted", channel=self.channel.name, error=str(exc))
