"""The client side of a CLI that is a JSON-RPC conversation over stdio (Codex's app-server, Gemini's ACP).

Such a CLI asks its client before a tool use (a command, a file change). What both need: writing a message on
the CLI's stdin, and putting a request to the person (``RunSpec.approve``) without blocking the reading of the
CLI's output. While a request waits the CLI is silent, so ``StdinFeed.holds`` keeps the no-output watchdog
off; the answer is written once the person decides (or the request expires or the run ends: a refusal).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.agents.runtimes.base import RunSpec, Stdin

__all__ = ["RpcClient", "file_changes", "line"]


def line(obj: dict[str, Any]) -> bytes:
    """One JSON-RPC message as a line of JSONL."""
    return json.dumps(obj).encode() + b"\n"


def _counts(diff: str) -> str:
    lines = diff.splitlines()
    added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
    removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
    return f"+{added} -{removed}"


def _relative(path: Any, root: Path) -> str:
    p = Path(str(path))
    return str(p.relative_to(root)) if p.is_absolute() and p.is_relative_to(root) else str(path)


def file_changes(changes: list[dict[str, Any]], root: Path) -> dict[str, Any]:
    """The ``Edit`` input for a file change: ``file_path`` (each path, relative to the workspace ``root``, with
    its kind or diff count: the preview) and the changes with their diffs (cut at 4,000 characters each)."""
    parts, out = [], []
    for ch in changes:
        if not isinstance(ch, dict):
            continue
        kind = (ch.get("kind") or {}).get("type") if isinstance(ch.get("kind"), dict) else None
        diff = str(ch.get("diff") or "")
        label = {"add": "new", "delete": "deleted"}.get(str(kind), _counts(diff))
        path = _relative(ch.get("path"), root)
        parts.append(f"{path} ({label})")
        out.append({"path": path, "kind": kind, "diff": diff[:4000]})
    return {"file_path": ", ".join(parts) or "(no files named)", "changes": out}


class RpcClient:
    """Writes to the CLI and asks the person on its behalf; subclasses read the CLI's messages."""

    def __init__(self, feed: Stdin, spec: RunSpec) -> None:
        self.feed = feed
        self.spec = spec
        self.tasks: set[asyncio.Task[None]] = set()

    def send(self, obj: dict[str, Any]) -> None:
        self.feed.write(line(obj))

    def ask_person(self, rid: Any, tool: str, tool_input: dict[str, Any],
                   answer: Callable[[str | None], dict[str, Any]]) -> None:
        """Ask about ``tool`` in the background; ``answer(decision)`` (allow-once, allow-always, deny, or None
        when nobody can be asked) is the response written back to request ``rid``."""
        inp = {k: v for k, v in tool_input.items() if v is not None}
        task = asyncio.get_running_loop().create_task(self._decide(rid, tool, inp, answer), name=f"approval-{rid}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _decide(self, rid: Any, tool: str, inp: dict[str, Any],
                      answer: Callable[[str | None], dict[str, Any]]) -> None:
        decision: str | None = None
        self.feed.holds += 1
        try:
            if self.spec.approve is not None:
                decision = str((await self.spec.approve(tool, inp)).get("decision") or "deny")
        finally:
            self.feed.holds -= 1
            self.send({"id": rid, **answer(decision)})

    def finish(self) -> None:
        """The process ended: nobody is left to answer."""
        for task in list(self.tasks):
            task.cancel()
