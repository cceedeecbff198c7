"""What a run is: the request that starts it, where it came from, its state and its result.

Plain data shared by the run queue (``gateway.runs``), the agent executor and the methods; no I/O.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.runs.lease import Lease

__all__ = ["FINISHED", "Origin", "Run", "RunOutcome", "RunRequest"]

FINISHED = frozenset({"ok", "error", "aborted", "timeout", "interrupted"})


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a conversation lives on a channel: where replies go and what the agent is told."""

    channel: str
    account_id: str | None
    to: str
    chat_type: str = "dm"
    thread_id: str | None = None
    reply_to_id: str | None = None
    sender_id: str | None = None
    sender_name: str | None = None


@dataclass(slots=True)
class RunRequest:
    """One message for an agent, and the facts about who sent it."""

    session_key: str
    agent_id: str
    message: str
    source: str = "agent"  # agent | chat | channel | spawn | cron | node
    is_owner: bool = False
    tool_profile: str | None = None
    origin: Origin | None = None
    deliver: bool = False
    # Files that came with the message (downloaded channel media): copied into the run's workspace
    # under ``attachments/``, where the agent may read them; the message names them by that path.
    files: tuple[str, ...] = ()
    # The id of the run this request starts, if it starts one: recovery after a crash re-queues a stored run under
    # its own id, its message already in the transcript; chat.send names it after the idempotency key.
    run_id: str | None = None
    stored: bool = False
    # The chat message this request carries, (channel, account, chat, message id): marked handled in the
    # transaction that stores the turn, so after a crash it is neither lost nor run twice.
    inbound: tuple[str, str, str, str] | None = None
    # The user spoke (a voice note): auto-TTS in ``inbound`` mode answers with a voice note too.
    voice_in: bool = False
    # Set by ``RunQueue.submit``: the transcript entry that holds this message (its id on the web chat).
    entry_id: int | None = None
    # Stored with that entry (``ENTRY_META``): e.g. the files attached on the web chat, for the page to show.
    entry_meta: dict[str, Any] | None = None


@dataclass(slots=True)
class RunOutcome:
    status: str  # ok | error
    reply: str = ""
    error: str | None = None


@dataclass(eq=False)
class Run:
    id: str
    session_key: str
    agent_id: str
    requests: list[RunRequest]
    status: str = "queued"
    reply: str = ""
    error: str | None = None
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    ended_at: float | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    spawned_mono: float | None = None  # when the CLI process started (for the runs benchmark)
    side_effects: list[dict[str, Any]] = field(default_factory=list)  # what the run's tools already did
    lease: Lease | None = None  # the session lease held while this turn runs (gateway.runs.lease)
    stopping: bool = False  # its task was cancelled once: a second cancel could cut its clean-up short
    cut_by_shutdown: bool = False  # stopped because the gateway stops: left for recovery at the next start
    # Who answered ({agentId, runtime, cli, model}, and replyTo on the web chat) and the transcript entry of the
    # answer (or of the failure): set by the executor, carried in the final ``chat`` event's ``message``.
    answer_facts: dict[str, Any] = field(default_factory=dict)  # (diff: what the turn changed, a dict)
    answer_entry_id: int | None = None
    # While a steerable CLI runs this turn (steering mode ``steer``): hands it one more user message; False
    # when it no longer takes any (the message then waits for the next turn). Set and cleared by the executor.
    steer: Callable[[str], bool] | None = None
    # While its CLI runs: shows a tool's own words in the live reply (a key per tool call, its text so far), as
    # ``a2a_send`` streams the peer's answer there. Set and cleared by the executor (``RunStream.aside``).
    aside: Callable[[str, str], None] | None = None
    # What the ``chat`` events of this run said so far: their sequence number and the text of the last delta,
    # so each delta also carries only its new part (``deltaText``, as OpenClaw's clients read it); and the
    # sequence number of its ``agent`` events.
    chat_seq: int = 0
    agent_seq: int = 0
    chat_text: str = ""

    def stop(self, why: str) -> bool:
        """Cancel the running turn once, and only before it starts finishing; whether this call did it."""
        if self.stopping or self.task is None or self.task.done() or self.ended_at is not None:
            return False
        self.stopping, self.error = True, why
        self.task.cancel()
        return True

    @property
    def first(self) -> RunRequest:
        return self.requests[0]

    @property
    def last(self) -> RunRequest:
        return self.requests[-1]

    @property
    def messages(self) -> list[str]:
        return [r.message for r in self.requests]

    @property
    def is_owner(self) -> bool:
        # A collected turn is owner only if every message in it came from the owner.
        return all(r.is_owner for r in self.requests)

    def result(self) -> dict[str, Any]:
        """What ``agent.wait`` answers and the final ``agent`` event carries."""
        status = "ok" if self.status == "ok" else ("error" if self.status in FINISHED else self.status)
        out: dict[str, Any] = {"runId": self.id, "sessionKey": self.session_key, "status": status}
        if self.status in ("aborted", "timeout"):
            out["error"] = self.error or ("run aborted" if self.status == "aborted" else "run timed out")
        elif self.error:
            out["error"] = self.error
        if self.status == "ok":
            out["reply"] = self.reply
        if self.started_at:
            out["startedAt"] = int(self.started_at * 1000)
        if self.ended_at:
            out["endedAt"] = int(self.ended_at * 1000)
        return out
