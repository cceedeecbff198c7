"""Per-connection subscriptions to session events: ``sessions.changed`` and ``session.message``.

OpenClaw's Control UI does not listen to every session's traffic: it subscribes. ``sessions.subscribe``
asks for ``sessions.changed`` (a session was created, changed, deleted, or got a message: refresh the
list), and ``sessions.messages.subscribe {key}`` asks for ``session.message`` (a message was added to
that one session's transcript). These two events go only to the connections that asked, and stop when
they unsubscribe or close.

Nothing here emits on its own: the gateway already broadcasts what happens to a session (``chat``
with its final reply, ``chat.user`` for a message sent in, ``agent`` lifecycle for a run starting and
ending). ``derive`` turns those into the subscribed events on every replica, since every replica gets the
broadcast (through Redis when configured), and ``targets`` narrows who gets them. Changes that have no
broadcast of their own (patch, reset, delete) are announced with ``announce``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from gateway.composition.callable_types import Broadcast

__all__ = ["ROUTED_EVENTS", "SessionSubscriptions", "agent_of", "announce", "openclaw_message"]

SESSIONS_CHANGED: Final = "sessions.changed"
SESSION_MESSAGE: Final = "session.message"
ROUTED_EVENTS: Final = frozenset({SESSIONS_CHANGED, SESSION_MESSAGE})
"""Events sent only to the connections subscribed to them, never to every operator."""

_ENDED = frozenset({"final", "error", "aborted"})


def agent_of(key: str) -> str | None:
    """The agent id of an ``agent:<id>:…`` session key (None for other keys)."""
    parts = key.split(":")
    return parts[1] if len(parts) > 2 and parts[0] == "agent" else None


def _now_ms() -> int:
    return int(time.time() * 1000)


def openclaw_message(role: str, text: str, *, ts: int | None = None, **extra: Any) -> dict[str, Any]:
    """A transcript message in the shape OpenClaw's clients read: ``{role, content: [{type: text}], timestamp}``.

    Our own ``text`` is kept beside it, so our web chat and OpenClaw's Control UI read the same object.
    """
    return {"role": role, "content": [{"type": "text", "text": text}], "text": text,
            "timestamp": ts if ts is not None else _now_ms(), **extra}


class SessionSubscriptions:
    """Who asked for which session events, by connection id. One per gateway start, in-process only."""

    def __init__(self) -> None:
        self._sessions: set[str] = set()
        self._messages: defaultdict[str, set[str]] = defaultdict(set)

    # -- subscribe ---------------------------------------------------------------------------

    def subscribe_sessions(self, conn_id: str) -> None:
        self._sessions.add(conn_id)

    def unsubscribe_sessions(self, conn_id: str) -> bool:
        """Returns whether the connection was subscribed."""
        if conn_id in self._sessions:
            self._sessions.discard(conn_id)
            return True
        return False

    def subscribe_messages(self, conn_id: str, key: str) -> None:
        self._messages[key].add(conn_id)

    def unsubscribe_messages(self, conn_id: str, key: str) -> bool:
        """Returns whether the connection was subscribed to that session's messages."""
        conns = self._messages.get(key)
        if not conns or conn_id not in conns:
            return False
        conns.discard(conn_id)
        if not conns:
            del self._messages[key]
        return True

    def drop(self, conn_id: str) -> None:
        """Forget everything a closed connection subscribed to."""
        self._sessions.discard(conn_id)
        for key in [k for k, conns in self._messages.items() if conn_id in conns]:
            self.unsubscribe_messages(conn_id, key)

    def subscribed(self, conn_id: str) -> dict[str, Any]:
        """What one connection is subscribed to (for tests and diagnostics)."""
        return {"sessions": conn_id in self._sessions,
                "messages": sorted(k for k, conns in self._messages.items() if conn_id in conns)}

    # -- routing -----------------------------------------------------------------------------

    def targets(self, event: str, payload: Any) -> set[str] | None:
        """The connections a routed event goes to; None for every other event (it goes to everyone)."""
        if event == SESSIONS_CHANGED:
            return self._sessions
        if event == SESSION_MESSAGE:
            key = payload.get("sessionKey") if isinstance(payload, dict) else None
            return self._messages.get(key, set()) if isinstance(key, str) else set()
        return None

    def derive(self, event: str, payload: Any) -> list[tuple[str, dict[str, Any]]]:
        """The session events a broadcast implies, for delivery on this replica (empty when nobody listens)."""
        if not (self._sessions or self._messages) or not isinstance(payload, dict):
            return []
        data = payload.get("data") if event == "agent" else None
        key = data.get("sessionKey") if isinstance(data, dict) else payload.get("sessionKey")
        if not isinstance(key, str):
            return []
        agent = {"agentId": a} if (a := agent_of(key)) else {}
        message: dict[str, Any] | None = None
        changed: dict[str, Any] | None = None
        said: dict[str, Any] = payload["message"] if isinstance(payload.get("message"), dict) else {}
        if event == "chat" and payload.get("state") in _ENDED:
            message = openclaw_message("assistant", str(said.get("text") or ""), runId=payload.get("runId"))
            changed = {"phase": "message"}
        elif event == "chat.user":
            message = openclaw_message("user", str(payload.get("text") or ""), runId=payload.get("runId"))
            changed = {"phase": "message"}
        elif event == "agent" and payload.get("stream") == "lifecycle":
            phase = data.get("phase") if isinstance(data, dict) else None
            if phase in ("start", "end", "error"):
                changed = {"phase": phase, "hasActiveRun": phase == "start"}
        out: list[tuple[str, dict[str, Any]]] = []
        if message is not None and key in self._messages:
            body: dict[str, Any] = {"sessionKey": key, **agent, "message": message}
            for field in ("runId", "messageId", "idempotencyKey"):
                value = payload.get(field, said.get(field))
                if isinstance(value, str):
                    body[field] = value
            out.append((SESSION_MESSAGE, body))
        if changed is not None and self._sessions:
            out.append((SESSIONS_CHANGED, {"sessionKey": key, **agent, **changed, "ts": _now_ms()}))
        return out


def announce(broadcast: Broadcast, key: str, reason: str) -> None:
    """Tell ``sessions.subscribe`` listeners on every replica that a session changed (``patch``, ``reset``,
    ``delete``...): the changes that have no broadcast of their own."""
    agent = {"agentId": a} if (a := agent_of(key)) else {}
    broadcast(SESSIONS_CHANGED, {"sessionKey": key, **agent, "reason": reason, "ts": _now_ms()}, drop_if_slow=True)
