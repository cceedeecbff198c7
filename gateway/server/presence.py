"""Who is connected to this replica, and the changes to it sent to the clients that watch (issue #28).

Broadcasting the whole list to every client on every connect costs O(clients²) bytes during a connect
storm: at 1,000 clients that was 818 MB of events and an event loop too busy to accept anyone. So the
board keeps the list, and sends out only what changed:

* ``snapshot()`` is the whole list (``system-presence``, or a page of it with ``page``); a watcher's
  ``hello-ok`` carries ``snapshot_for``: the latest ``gateway.helloPresenceLimit`` entries and, when there are
  more, one summary entry saying how many (issue #45: a list in every handshake made connecting n watchers
  cost n² entries, 8.4 GB at 8,000). Other clients get ``[]`` there; a UI client that may not list everyone
  (``may_list``: a member's page) gets its own entry alone, and no deltas. ``version`` is the presence half of
  ``snapshot.stateVersion``.
* Changes made within ``coalesce_s()`` (50 ms, longer with thousands of watchers; ``STORM_S`` while a crowd
  arrives or leaves) are flushed together as
  ONE ``presence`` event, encoded once for all watchers, whose payload holds the entries that joined or
  changed (``presence``; in a storm at most ``DELTA_ENTRIES`` of them after a summary entry, since every join
  told to every watcher is n² again) and the ``instanceId`` of those that left (``left``); the frame's
  ``stateVersion.presence`` is the version the delta brings the list to (one more than the previous event's).
  A client that sees a gap (a skipped version: its buffer was full and the event dropped) calls
  ``system-presence`` again. Applying a delta twice is harmless: entries are upserted by ``instanceId``,
  leaves are removals.
* OpenClaw's Control UI (``client.id`` ``openclaw-control-ui``) takes a ``presence`` event's list for the whole
  list, as OpenClaw's gateway sends it: its devices page would drop everyone a delta does not name. It gets
  the bounded list instead (``latest``: the newest ``gateway.helloPresenceLimit`` entries and a summary entry),
  encoded once for all such pages, on a longer window than the deltas (``panel_every_s``: a list weighs five
  deltas, so it waits five times as long, at most 5 s). Its own load of the page (``system-presence``) is the
  full list.
* Only watchers get the events: UI clients (``client.mode`` ``ui`` or ``webchat``) and any operator
  that called ``system-presence`` (it asked). CLI, backend, node and probe clients that never asked
  get none, so an agent run's MCP shim connecting costs the others one small delta, not a list.

Entries follow OpenClaw's ``PresenceEntry`` (closed schema in ``@openclaw/gateway-protocol``):
``instanceId`` is our connection id (unique per socket), ``host`` the client's display name or id.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from gateway.protocol import encode

if TYPE_CHECKING:
    from gateway.dispatch.callers import Caller
    from gateway.server.connection import Connection

__all__ = ["COALESCE_S", "STORM_S", "SUMMARY_ID", "WATCHING_MODES", "PresenceBoard", "entry_for", "may_list"]

COALESCE_S = 0.05
"""Changes within this long go out as one delta event (with up to 1,000 watchers; see ``coalesce_s``)."""
COALESCE_MAX_S = 0.5
"""The longest a change waits to go out, however many watch."""
PANEL_MAX_S = 5.0
"""The longest a change waits to reach OpenClaw's panels as a list (see ``panel_every_s``)."""
DELTA_ENTRIES = 20
"""The most joined entries one delta names; more (a connect storm) go out as a summary entry with the count."""
STORM_S = 2.0
"""How long changes gather while a crowd connects or leaves (more than ``DELTA_ENTRIES`` of them in one window):
each delta is one frame written to every watcher, and at 10,000 watchers a frame every 0.5 s during the storm
was what kept the crowd from connecting (75 s, 9 GB of deltas; 30-33 s and 0.8 GB with this, on a 2-core
machine). A window with fewer changes (one person arriving) still goes out after ``coalesce_s``."""

WATCHING_MODES = frozenset({"ui", "webchat"})
"""Client modes that get presence events without asking (OpenClaw's Control UI, web chat pages)."""

LIST_CLIENTS = frozenset({"openclaw-control-ui"})
"""Client ids that read a ``presence`` event's ``presence`` as the whole list (OpenClaw's panel)."""

SUMMARY_ID = "remoteclaw:more"
"""The ``instanceId`` of the entry that stands for the connections a bounded ``hello-ok`` leaves out."""


Send = Callable[[str, "Sequence[Connection]"], object]
"""Write one encoded event head to each connection (skippable: dropped for a connection that is behind)."""


def _write_all(head: str, receivers: Sequence[Connection]) -> int:
    return sum(conn.send_event_head(head, drop_if_slow=True) for conn in receivers)


def may_list(caller: Caller) -> bool:
    """Whether ``caller`` may see everyone's entries (their addresses too): whoever may call ``system-presence``
    (the owner, admins); not a member's or guest's sign-in, nor a non-owner agent run."""
    return caller.methods is None or "system-presence" in caller.methods


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
        list_limit: returns ``gateway.helloPresenceLimit``, how many entries a list sent whole may hold.
        send: writes one encoded event to many connections (the gateway's ``FanOut``, which writes thousands a
            slice at a time so requests are not held up); by default all at once.
    """

    def __init__(self, health_version: Any = lambda: 1, list_limit: Callable[[], int] = lambda: 100,
                 send: Send | None = None) -> None:
        self._list_limit = list_limit
        self._write: Send = send or _write_all
        self._entries: dict[str, dict[str, Any]] = {}
        self._devices: dict[str, dict[str, Any]] = {}
        """The entries with a device identity: bounded lists always show them."""
        self._watchers: dict[str, Connection] = {}
        self._own_only: set[str] = set()
        """UI clients that may not list everyone (``may_list``): their ``hello-ok`` lists only themselves."""
        self._joined: dict[str, dict[str, Any]] = {}
        self._left: set[str] = set()
        self._flush: asyncio.TimerHandle | None = None
        self._window_at = 0.0
        """When the changes now gathering began (the loop's clock)."""
        self._panel_flush: asyncio.TimerHandle | None = None
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

    def page(self, offset: int, limit: int) -> list[dict[str, Any]]:
        """Entries ``offset`` to ``offset + limit``, oldest first (``system-presence {offset, limit}``)."""
        return list(islice(self._entries.values(), offset, offset + limit))

    def snapshot_for(self, conn_id: str, limit: int) -> list[dict[str, Any]]:
        """``hello-ok``'s ``snapshot.presence``: for a watcher, the latest ``limit`` entries (oldest first) and, when
        more are connected, a summary entry first (``SUMMARY_ID``: how many in all, in ``text`` and a ``total:N``
        tag); empty for anyone else.

        A CLI or backend client (an agent run's MCP shim, a probe) would only throw the list away; a watcher keeps
        its copy current from the deltas and reads the rest in pages (``system-presence``) if it wants them. The
        summary is an entry because OpenClaw's ``Snapshot`` is a closed object: its instances page shows it as a
        row, "N more connected".
        """
        if conn_id not in self._watchers:
            own = self._entries.get(conn_id) if conn_id in self._own_only else None
            return [own] if own is not None else []
        return self.latest(limit)

    def latest(self, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` entries after a summary entry when more are connected: those with a device identity
        first (paired devices and nodes, few, and what a panel shows as online or not), then the newest others,
        oldest first."""
        total = len(self._entries)
        if total <= limit:
            return list(self._entries.values())
        shown = list(islice(self._devices.values(), limit))
        newest: list[dict[str, Any]] = []
        room = limit - len(shown)
        if room > 0:
            for entry in reversed(self._entries.values()):
                if "deviceId" not in entry:
                    newest.append(entry)
                    if len(newest) == room:
                        break
        newest.reverse()
        shown += newest
        return [self._summary(total, len(shown)), *shown]

    def join(self, conn: Connection, caller: Caller) -> None:
        """A connection finished its handshake: list it, and watch if its mode wants presence."""
        entry = entry_for(caller, conn.connected_at_ms or int(time.time() * 1000))
        key = entry["instanceId"]
        self._entries[key] = entry
        if "deviceId" in entry:
            self._devices[key] = entry
        self._joined[key] = entry
        self._left.discard(key)
        if caller.role == "operator" and caller.client_mode in WATCHING_MODES:
            if may_list(caller):
                self._watchers[conn.conn_id] = conn
            else:  # a member's page: its own entry, never the others' addresses
                self._own_only.add(conn.conn_id)
        self._schedule()

    def leave(self, conn_id: str) -> None:
        """A connection is gone."""
        self._watchers.pop(conn_id, None)
        self._own_only.discard(conn_id)
        self._devices.pop(conn_id, None)
        if self._entries.pop(conn_id, None) is None:
            return
        # Announced even when it joined within this same window: a hello-ok snapshot may have listed it.
        self._joined.pop(conn_id, None)
        self._left.add(conn_id)
        self._schedule()

    def watch(self, conn: Connection) -> None:
        """``conn`` asked for presence (it called ``system-presence``): send it the deltas from now on."""
        if not conn.closed and (conn.caller is None or may_list(conn.caller)):
            self._watchers[conn.conn_id] = conn

    def is_watching(self, conn_id: str) -> bool:
        return conn_id in self._watchers

    def coalesce_s(self) -> float:
        """How long changes gather before they go out: 50 ms, and 50 ms more per thousand watchers (at most
        0.5 s). Every delta goes to every watcher, so at 10,000 watchers a delta every 50 ms would be 200,000
        frames a second; a longer window keeps the frames per second flat as the crowd grows."""
        return min(COALESCE_MAX_S, COALESCE_S * max(1.0, len(self._watchers) / 1000))

    def panel_every_s(self) -> float:
        """How long changes gather before OpenClaw's panels get the list again: a list of ``helloPresenceLimit``
        entries costs that many over ``DELTA_ENTRIES`` times a delta, so it waits as many times longer (at most
        ``PANEL_MAX_S``). At 10,000 panels a 100-entry list every 0.5 s was 300 MB a second to write, and
        connecting clients were refused; every 2.5 s it is a fifth of that."""
        return min(PANEL_MAX_S, self.coalesce_s() * max(1.0, self._list_limit() / DELTA_ENTRIES))

    def _schedule(self) -> None:
        loop = asyncio.get_running_loop()
        if self._flush is None:
            self._window_at = loop.time()
            self._flush = loop.call_later(self.coalesce_s(), self._send)
        if self._panel_flush is None:
            self._panel_flush = loop.call_later(self.panel_every_s(), self._send_panels)

    def _joined_payload(self) -> list[dict[str, Any]]:
        """The entries a delta names: all that joined, or in a storm (over ``DELTA_ENTRIES``) those with a device
        identity and the newest, after a summary entry saying how many are connected in all. Without the cap every
        join reaches every watcher: n²/2 entries for n watchers arriving (12 GB at 10,000)."""
        joined = list(self._joined.values())
        if len(joined) <= DELTA_ENTRIES:
            return joined
        devices = [e for e in joined if "deviceId" in e][:DELTA_ENTRIES]
        room = DELTA_ENTRIES - len(devices)
        newest = [e for e in joined if "deviceId" not in e][-room:] if room else []
        return [self._summary(len(self._entries), len(devices) + len(newest)), *devices, *newest]

    @staticmethod
    def _summary(total: int, shown: int) -> dict[str, Any]:
        return {"instanceId": SUMMARY_ID, "host": f"{total - shown} more connected", "mode": "summary",
                "reason": "truncated", "ts": int(time.time() * 1000),
                "text": f"{total} connected; this list shows {shown}. system-presence {{offset, limit}} pages "
                        "through all of them.",
                "tags": ["summary", f"total:{total}"]}

    def _send(self) -> None:
        self._flush = None
        if not self._joined and not self._left:
            return
        loop = asyncio.get_running_loop()
        gathered = loop.time() - self._window_at
        if len(self._joined) + len(self._left) > DELTA_ENTRIES and gathered < STORM_S:  # a storm: wait longer
            self._flush = loop.call_later(STORM_S - gathered, self._send)
            return
        self.version += 1
        payload = {"presence": self._joined_payload(), "left": sorted(self._left)}
        self._joined = {}
        self._left = set()
        version = self.state_version()
        frame = {"type": "event", "event": "presence", "payload": payload, "stateVersion": version}
        head = encode(frame)[:-1] + ',"seq":'  # encoded once for every watcher; each appends its own seq
        self.deltas_sent += 1
        self._write(head, self._receivers(panels=False))

    def _send_panels(self) -> None:
        """OpenClaw's panels: the bounded list as it is now, encoded once for all of them."""
        self._panel_flush = None
        panels = self._receivers(panels=True)
        if not panels:
            return
        if self._flush is not None:  # changes still gathering: out now, so the list carries their version
            self._flush.cancel()
            self._send()
        listed = encode({"type": "event", "event": "presence", "stateVersion": self.state_version(),
                         "payload": {"presence": self.latest(self._list_limit())}})[:-1] + ',"seq":'
        self._write(listed, panels)

    def _receivers(self, *, panels: bool) -> list[Connection]:
        """The open watchers that are OpenClaw's panels (``panels``), or the others; forgets the closed."""
        found: list[Connection] = []
        for conn in list(self._watchers.values()):
            if conn.closed:
                self._watchers.pop(conn.conn_id, None)
            elif (conn.caller is not None and conn.caller.client_id in LIST_CLIENTS) == panels:
                found.append(conn)
        return found

    def close(self) -> None:
        for timer in (self._flush, self._panel_flush):
            if timer is not None:
                timer.cancel()
        self._flush = self._panel_flush = None
