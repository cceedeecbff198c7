"""One run's event stream: runtime events -> ``agent``/``chat`` events, the live note on the chat, tool rows."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from gateway.sessions.store import SessionRepo

if TYPE_CHECKING:
    from gateway.agents.runtimes import Event
    from gateway.platforms.interface import ProgressSink
    from gateway.runs import Run, RunQueue
    from gateway.store import Database

__all__ = ["RunStream"]


class RunStream:
    """Turns runtime events into ``agent``/``chat`` events and transcript rows for one run."""

    def __init__(self, runs: RunQueue, db: Database, run: Run, progress: ProgressSink | None = None) -> None:
        self.runs, self.db, self.run, self.progress = runs, db, run, progress
        self.text = ""
        """The complete text blocks so far."""
        self.partial = ""
        """The block being written (``text_delta`` pieces), until its complete ``text`` event arrives."""
        self.asides: dict[str, str] = {}
        """A tool's own words while it runs (``aside``), by tool call, shown after the text so far."""
        self.tools: dict[str, dict[str, Any]] = {}
        self.entries: list[dict[str, Any]] = []

    def _live(self) -> str:
        """The live reply: the complete blocks, the tools' words since, the block being written."""
        return "\n\n".join(block for block in (self.text, *self.asides.values(), self.partial) if block)

    def _show(self, live: str) -> None:
        self.runs.emit_chat(self.run, "delta", live)
        if self.progress is not None:
            self.progress.text(live)

    def aside(self, key: str, text: str) -> None:
        """Show ``text`` (the whole of it so far) as tool call ``key``'s block in the live reply: what an A2A
        peer answers ``a2a_send``, while it answers. The block stays where it is once the CLI writes on, so the
        live reply only grows; the final answer is the CLI's own."""
        if not text or self.asides.get(key) == text:
            return
        self.asides[key] = text
        self._show(self._live())

    def on_event(self, ev: Event) -> None:
        run = self.run
        if ev.kind == "text_delta":
            self.partial += ev.text
            self._show(self._live())
        elif ev.kind == "text":
            self.partial = ""
            self.text = "\n\n".join(block for block in (self.text, *self.asides.values(), ev.text) if block)
            self.asides.clear()  # now part of the complete blocks, before this one
            self.runs.emit_agent(run, "assistant", {"text": ev.text, "delta": ev.text})
            self._show(self.text)
        elif ev.kind == "thinking":
            self.runs.emit_agent(run, "thinking", {"text": ev.text})
        elif ev.kind == "tool_use":
            tid = ev.tool_id or f"tool-{len(self.tools)}"
            self.tools[tid] = {"name": ev.tool_name, "input": ev.tool_input, "started": time.monotonic()}
            if self.progress is not None:
                self.progress.step(ev.tool_name)
            self.runs.emit_agent(run, "tool", {"phase": "start", "id": tid, "name": ev.tool_name,
                                               "input": ev.tool_input})
        elif ev.kind == "tool_result":
            tid = ev.tool_id or ""
            call = self.tools.pop(tid, {"name": ev.tool_name, "input": None})
            self.runs.emit_agent(run, "tool", {"phase": "result", "id": tid, "name": call["name"] or ev.tool_name,
                                               "output": ev.tool_output, "isError": ev.is_error})
            self.entries.append({"name": call["name"] or ev.tool_name, "input": call["input"],
                                 "output": ev.tool_output, "isError": ev.is_error})

    async def save(self) -> None:
        """Write the tool calls of the turn to the transcript."""
        if not self.entries:
            return
        async with self.db.session() as s:
            for tool in self.entries:
                await SessionRepo.add_entry(s, self.run.session_key, "tool", str(tool["name"] or ""),
                                            run_id=self.run.id, tool=tool)
