"""One run's event stream: runtime events -> ``agent``/``chat`` events, the live note on the chat, tool rows."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from gateway.store.transcripts import SessionRepo

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
        self.tools: dict[str, dict[str, Any]] = {}
        self.entries: list[dict[str, Any]] = []

    def on_event(self, ev: Event) -> None:
        run = self.run
        if ev.kind == "text_delta":
            self.partial += ev.text
            live = f"{self.text}\n\n{self.partial}" if self.text else self.partial
            self.runs.emit_chat(run, "delta", live)
            if self.progress is not None:
                self.progress.text(live)
        elif ev.kind == "text":
            self.partial = ""
            self.text = f"{self.text}\n\n{ev.text}" if self.text else ev.text
            self.runs.emit_agent(run, "assistant", {"text": ev.text, "delta": ev.text})
            self.runs.emit_chat(run, "delta", self.text)
            if self.progress is not None:
                self.progress.text(self.text)
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
