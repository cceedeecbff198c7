"""``/record`` in a chat: start or stop a desktop trajectory from the phone, and get it back as a zip.

Only the owner may record (the desktop is the owner's computer). ``/record start`` records on the only
desktop node (or ``/record start <node>``); ``/record stop`` answers with the turns, the page that shows them
and the zip itself, sent to the chat as a file. ``/record`` alone says what is running.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gateway.access import Access
from gateway.dispatch.commands import CommandContext, command
from gateway.protocol import RpcError

if TYPE_CHECKING:
    from gateway.config import ConfigStore
    from gateway.desktop.service import DesktopService

__all__ = ["ChatRecorder", "record"]

USAGE = "Usage: /record start [node], /record stop [node], /record (what is recording)."


@command("record", access=Access("node", "exec"),
         help="Record what the agent does on your desktop node: /record start, /record stop (sends the zip)")
async def record(ctx: CommandContext, rest: str) -> None:
    """The recorder is the desktop capability's (``RECORDER``): None when it is off."""
    if ctx.recorder is None:
        await ctx.say("Recording needs the desktop capability and a desktop node.")
        return
    answer, file = await ctx.recorder.chat_command(ctx.key, rest, is_owner=ctx.is_owner)
    await ctx.say(answer)
    if file is not None:
        await ctx.send_file(Path(file))


class ChatRecorder:
    def __init__(self, service: DesktopService, config: ConfigStore) -> None:
        self._service = service
        self._config = config

    async def chat_command(self, session_key: str, rest: str, *, is_owner: bool) -> tuple[str, str | None]:
        from gateway.desktop.web import page_url

        if not is_owner:
            return "Only the owner can record the desktop.", None
        words = rest.split()
        action, node = (words[0].lower() if words else ""), (" ".join(words[1:]) or None)
        try:
            if action == "start":
                started = await self._service.record_start(node=node, session_key=session_key, record_video=None)
                return (f"⏺ Recording on {started['node']} ({started['trajectoryId']}). Every desktop action is "
                        "recorded until /record stop."), None
            if action == "stop":
                saved = await self._service.record_stop(node=node)
                turns = saved.get("turns") or []
                failed = sum(1 for t in turns if t.get("error"))
                page = page_url(self._config.config, saved["viewKey"])
                return (f"⏹ Recorded {len(turns)} action(s) on {saved.get('nodeName')}"
                        f"{f', {failed} failed' if failed else ''}: {saved['trajectoryId']}. Turn by turn: <{page}>"), \
                    saved.get("zipPath")
        except RpcError as err:
            return f"⚠️ {err.message}", None
        if action:
            return USAGE, None
        running = [f"{r.node_name} ({r.trajectory_id})" for r in self._service.recordings.values()]
        return (f"Recording: {', '.join(running)}." if running else "Nothing is recording.") + " " + USAGE, None
