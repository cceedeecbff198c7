"""Every event the gateway sends, declared once: its name and what it carries.

``hello-ok features.events`` is this table's keys, and ``tests/gateway/protocol/test_events_declared.py`` reads the
source for every event name passed to ``broadcast``/``send_event``/``deliver_local``/``publish`` and fails
on one that is not here: a new event is added in this one place, with a line saying what it is.
"""

from __future__ import annotations

__all__ = ["EVENTS"]

EVENTS: dict[str, str] = {
    "connect.challenge": "the first frame on a socket: the nonce a device signs, and the server time",
    "tick": "every gateway.tickIntervalMs: the connection is alive (two missed ticks mean a dead link)",
    "health": "the gateway's health, right after hello-ok",
    "presence": "who joined and who left (deltas, at most one per 50 ms), to clients that watch presence",
    "shutdown": "the gateway is stopping or restarting in place (restartExpectedMs), before close 1012",
    "config.changed": "a config change was applied (which sections, live or by restart)",
    "agent": "an agent run's lifecycle, assistant text, thinking and tool calls, as they happen",
    "chat": "a session's chat state: deltas while the agent writes, then final, error or aborted",
    "chat.user": "a message someone sent into a session (chat.send), so every open page on it shows the message",
    "chat.message": "a web chat message changed: the agent reacted to it, pinned it or deleted it",
    "chat.audio": "a web chat reply spoken (auto-TTS): the clip (MP3, mimeType says), base64, after its final text",
    "sessions.changed": "to sessions.subscribe callers: a session was created, changed, deleted, got a message, or "
                        "its run started or ended",
    "session.message": "to sessions.messages.subscribe callers of that session: a message was added to its transcript",
    "cron": "a cron job changed or ran",
    "node.invoke.request": "to a node: run a command for the gateway",
    "node.invoke.cancel": "to a node: the caller stopped waiting for an invocation (its timeout passed)",
    "node.presence": "a node connected or disconnected",
    "node.event": "an event a paired node reported (host stats, a finished job...)",
    "node.pair.requested": "a node asks to pair",
    "node.pair.resolved": "a node pairing request was approved or rejected",
    "device.pair.requested": "an operator device asks to pair",
    "device.pair.resolved": "a device pairing request was approved or rejected",
    "exec.approval.requested": "to operator.approvals: an agent run asks to use a tool (a pending ApprovalSnapshot)",
    "exec.approval.resolved": "to operator.approvals: a tool-use request was decided, expired or cancelled",
    "question.requested": "to operator.questions: an agent run asks its person questions (a QuestionRecord)",
    "question.resolved": "to operator.questions: a question was answered, cancelled or expired",
    "hooks.tool": "an agent's tool call starts or ends (from the MCP shim's hooks)",
    "events.gap": "the replica was cut off from the others (Redis away) from sinceMs to untilMs: their events in "
                  "that time did not reach this socket (re-read what you show)",
}
