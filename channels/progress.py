"""A progress note: one chat message that shows what the agent is doing, removed when it is done.

An agent turn can take minutes. In a web page the tool calls stream in; in Telegram or Discord the
user would see only "typing…". So from the first tool call on, the bridge keeps one message up to
date ("⏳ Working… step 3: Bash"), edited in place at most every ``min_interval_s`` (chat platforms
rate-limit edits), and deletes it before the reply is sent: the chat keeps only the answer.
A turn that calls no tool never gets a note. Any platform error ends the note for that turn; the
turn itself never fails because of it.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from channels.base import Channel

__all__ = ["ProgressNote", "step_label"]

log = structlog.get_logger("channels.progress")


def step_label(tool_name: str) -> str:
    """``mcp__remoteclaw__message_send`` -> ``message_send``; built-in tools (``Bash``) as they are."""
    return tool_name.rsplit("__", 1)[-1] if tool_name.startswith("mcp__") else tool_name


class ProgressNote:
    """Started per turn by the bridge; ``step`` is called for each tool call, ``close`` at the end."""

    def __init__(self, channel: Channel, to: str, *, thread_id: str | None = None,
                 min_interval_s: float = 1.5) -> None:
        self.channel, self.to, self.thread_id = channel, to, thread_id
        self.min_interval_s = min_interval_s
        self.steps = 0
        self._last = ""
        self._message_id: str | None = None
        self._wake = asyncio.Event()
        self._closed = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="progress-note")

    def step(self, tool_name: str | None) -> None:
        """A tool call started (called from the runtime's event callback; never blocks)."""
        self.steps += 1
        self._last = step_label(tool_name or "tool")
        self._wake.set()

    def text(self) -> str:
        return f"⏳ Working… step {self.steps}: {self._last}"

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            if self._closed.is_set():
                return
            self._wake.clear()
            try:
                if self._message_id is None:
                    sent = await self.channel.send(self.to, self.text(), thread_id=self.thread_id)
                    self._message_id = sent.message_id
                else:
                    await self.channel.edit(self.to, self._message_id, self.text(), thread_id=self.thread_id)
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
