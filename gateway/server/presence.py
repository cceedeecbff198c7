"""Who is connected to this replica, and the changes to it sent to the clients that watch (issue #28).

Broadcasting the whole list to every client on every connect costs O(clients²) bytes during a connect
storm: at 1,000 clients that was 818 MB of events and an event loop too busy to accept anyone. So the
board keeps the list, and sends out only what changed:

* ``snapshot()`` is the whole list (``system-presence``, and ``snapshot.presence`` in a watcher's
  ``hello-ok``; other clients get ``[]`` there); ``version`` is the presence half of
  ``snapshot.stateVersion``.
* Changes made within ``COALESCE_S`` are flushed together as ONE ``presence`` event, encoded once for
  all watchers, whose payload holds the entries that joined or changed (``presence``) and the
  ``instanceId`` of those that left (``left``); the frame's ``stateVersion.presence`` is the version the
  delta brings the list to (one more than the previous event's). A client that sees a gap (a skipped
  version: its buffer was full and the event dropped) calls ``system-presence`` again. Applying a
  delta twice is harmless: entries are upserted by ``instanceId``, leaves are removals.
* Only watchers get the events: UI clients (``client.mode`` ``ui`` or ``webchat``) and any operator
  that called ``system-presence`` (it asked). CLI, backend, node and probe clients that never asked
  get none, so an agent run's MCP shim connecting costs the others one small delta, not a list.

Entries follow OpenClaw's ``PresenceEntry`` (closed schema in ``@openclaw/gateway-protocol``):
``instanceId`` is our connection id (unique per socket), ``host`` the client's display name or id.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from gateway.protocol import encode

if TYPE_CHECKING:
    from gateway.dispatch.callers import Caller
    from gateway.server.connection import Connection

__all__ = ["COALESCE_S", "WATCHING_MODES", "PresenceBoard", "entry_for"]

COALESCE_S = 0.05
"""Changes within this long go out as one delta event."""

WATCHING_MODES = frozenset({"ui", "webchat"})
"""Client modes that get presence events without asking (OpenClaw's Control UI, web chat pages)."""


def entry_for(caller: Caller, connected_at_ms: int) -> dict[str, Any]:
    """The ``PresenceEntry`` for one authenticated connection (only fields OpenClaw's schema has)."""
    entry: dict[str, Any] = {
        "instanceId": caller.conn_id,
        "host": caller.display_name or caller.client_id,
        "mode": caller.client_mode,
        "roles": [caller.role],
        "scopes": sorted(caller.scopes),
        "ts": connected_at_ms,
        "onlineSince": connected_at_ms,
        "reason": "connect",
    }
    for key in ("version", "platform"):
        value = caller.extra.get(key)
        if isinstance(value, str) and value:
            entry[key] = value
    if caller.remote:
        entry["ip"] = caller.remote
    if caller.device_id:
        entry["deviceId"] = caller.device_id
    return entry


class PresenceBoard:
    """The presence list of this replica, its version, and the watchers its changes go to.

    Args:
        health_version: returns the health half of ``stateVersion`` (sent beside each delta).
    """

    def __init__(self, health_version: Any = lambda: 1) -> None:
        self._entries: dict[str, dict[str, Any]] = {}
        self._watchers: dict[str, Connection] = {}
        self._joined: dict[str, dict[str, Any]] = {}
        self._left: set[str] = set()
        self._flush: asyncio.TimerHandle | None = None
        self._health_version = health_version
        self.version = 1
        """Bumped once per delta sent (not per change): a client expects exactly ``version + 1`` next."""
        self.deltas_sent = 0
        """Delta events flushed since start (diagnostics, the benchmark)."""

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, conn_id: object) -> bool:
        return conn_id in self._entries

    def state_version(self) -> dict[str, int]:
        """``stateVersion`` as OpenClaw shapes it: ``{presence, health}``."""
        return {"presence": self.version, "health": int(self._health_version())}

    def snapshot(self) -> list[dict[str, Any]]:
        """Every entry, oldest first."""
        return list(self._entries.values())

    def snapshot_for(self, conn_id: str) -> list[dict[str, Any]]:
        """``hello-ok``'s ``snapshot.presence``: the list for a watcher, empty for anyone else.

        A CLI or backend client (an agent run's MCP shim, a probe) would only throw the list away, and
        at thousands of clients it is the largest part of ``hello-ok``; ``system-presence`` gives it.
        """
        return self.snapshot() if conn_id in self._watchers else []

    def join(self, conn: Connection, caller: Caller) -> None:
        """A connection finished its handshake: list it, and watch if its mode wants presence."""
        entry = entry_for(caller, conn.connected_at_ms or int(time.time() * 1000))
        key = entry["instanceId"]
        self._entries[key] = entry
        self._joined[key] = entry
        self._left.discard(key)
        if caller.role == "operator" and caller.client_mode in WATCHING_MODES:
            self._watchers[conn.conn_id] = conn
        self._schedule()

    def leave(self, conn_id: str) -> None:
        """A connection is gone."""
        self._watchers.pop(conn_id, None)
        if self._entries.pop(conn_id, None) is None:
            return
        # Announced even when it joined within this same window: a hello-ok snapshot may have listed it.
        self._joined.pop(conn_id, None)
        self._left.add(conn_id)
        self._schedule()

    def watch(self, conn: Connection) -> None:
        """``conn`` asked for presence (it called ``system-presence``): send it the deltas from now on."""
        if not conn.closed:
            self._watchers[conn.conn_id] = conn

    def is_watching(self, conn_id: str) -> bool:
        return conn_id in self._watchers

    def _schedule(self) -> None:
        if self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(COALESCE_S, self._send)

    def _send(self) -> None:
        self._flush = None
        if not self._joined and not self._left:
            return
        self.version += 1
        payload = {"presence": list(self._joined.values()), "left": sorted(self._left)}
        self._joined = {}
        self._left = set()
        frame = {"type": "event", "event": "presence", "payload": payload, "stateVersion": self.state_version()}
        head = encode(frame)[:-1] + ',"seq":'  # encoded once for every watcher; each appends its own seq
        self.deltas_sent += 1
        for conn in list(self._watchers.values()):
            if conn.closed:
                self._watchers.pop(conn.conn_id, None)
                continue
            conn.send_event_head(head, drop_if_slow=True)

    def close(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
