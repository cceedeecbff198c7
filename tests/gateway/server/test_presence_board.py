"""The presence board built from its constructor, with recording connections (the fast tier): what a storm of
joins costs each watcher, how long changes gather with thousands watching, and what OpenClaw's panel gets."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from gateway.dispatch.callers import Caller
from gateway.server.presence import (
    COALESCE_MAX_S,
    COALESCE_S,
    DELTA_ENTRIES,
    PANEL_MAX_S,
    STORM_S,
    SUMMARY_ID,
    PresenceBoard,
)


class Conn:
    """A connection as the board sees it: an id, a caller, and the event frames it was sent."""

    def __init__(self, n: int, *, mode: str = "webchat", client_id: str = "webchat-ui", device: str | None = None):
        self.conn_id = f"c{n}"
        self.closed = False
        self.connected_at_ms = 1_000 + n
        self.caller = Caller(conn_id=self.conn_id, role="operator", scopes=frozenset({"operator.read"}),
                             client_id=client_id, client_mode=mode, remote="127.0.0.1", device_id=device)
        self.frames: list[dict[str, Any]] = []

    def send_event_head(self, head: str, *, drop_if_slow: bool = False) -> bool:
        self.frames.append(orjson.loads(head + "1}"))
        return True


def join(board: PresenceBoard, conn: Conn) -> Conn:
    board.join(conn, conn.caller)  # type: ignore[arg-type]
    return conn


async def flushed(board: PresenceBoard) -> None:
    await asyncio.sleep(board.coalesce_s() + 0.02)


async def test_a_storm_of_joins_reaches_a_watcher_as_a_bounded_delta_with_the_count() -> None:
    board = PresenceBoard()
    watcher = join(board, Conn(0))
    await flushed(board)
    watcher.frames.clear()
    node = join(board, Conn(1, mode="node", client_id="node-host", device="dev-1"))
    crowd = [join(board, Conn(n, mode="cli", client_id="cli")) for n in range(2, 102)]
    await flushed(board)
    assert watcher.frames == []  # a storm gathers longer (STORM_S)
    await asyncio.sleep(STORM_S)
    (frame,) = watcher.frames
    listed = frame["payload"]["presence"]
    summary, shown = listed[0], listed[1:]
    assert summary["instanceId"] == SUMMARY_ID and "total:102" in summary["tags"]
    assert len(shown) == DELTA_ENTRIES and summary["host"] == f"{102 - DELTA_ENTRIES} more connected"
    ids = [e["instanceId"] for e in shown]
    assert ids[0] == node.conn_id  # a device identity is always named
    assert ids[1:] == [c.conn_id for c in crowd[-(DELTA_ENTRIES - 1):]]  # then the newest, oldest first
    # a quiet change afterwards is a plain delta again, one version on
    late = join(board, Conn(200, mode="cli", client_id="cli"))
    await flushed(board)
    assert [e["instanceId"] for e in watcher.frames[-1]["payload"]["presence"]] == [late.conn_id]
    assert watcher.frames[-1]["stateVersion"]["presence"] == frame["stateVersion"]["presence"] + 1
    board.close()


async def test_changes_gather_longer_as_thousands_watch() -> None:
    board = PresenceBoard()
    assert board.coalesce_s() == COALESCE_S
    for n in range(3_000):
        board.watch(Conn(n))  # type: ignore[arg-type]
    assert board.coalesce_s() == COALESCE_S * 3
    for n in range(3_000, 20_000):
        board.watch(Conn(n))  # type: ignore[arg-type]
    assert board.coalesce_s() == COALESCE_MAX_S
    board.close()


async def test_openclaws_panel_gets_the_bounded_list_and_other_watchers_the_delta() -> None:
    board = PresenceBoard(list_limit=lambda: 3)
    panel = join(board, Conn(0, mode="webchat", client_id="openclaw-control-ui", device="panel-device"))
    page = join(board, Conn(1))
    await flushed(board)
    panel.frames.clear()
    page.frames.clear()
    crowd = [join(board, Conn(n, mode="cli", client_id="cli")) for n in range(2, 8)]
    board.leave(crowd[0].conn_id)
    await flushed(board)
    (listed,) = panel.frames
    assert set(listed["payload"]) == {"presence"}  # the whole list as OpenClaw sends it, bounded
    ids = [e["instanceId"] for e in listed["payload"]["presence"]]
    assert ids == [SUMMARY_ID, panel.conn_id, crowd[-2].conn_id, crowd[-1].conn_id]
    (delta,) = page.frames
    assert delta["payload"]["left"] == [crowd[0].conn_id]
    assert {e["instanceId"] for e in delta["payload"]["presence"]} == {c.conn_id for c in crowd[1:]}
    assert listed["stateVersion"] == delta["stateVersion"]
    board.close()


async def test_openclaws_panels_get_the_list_less_often_than_the_deltas_and_end_on_the_latest() -> None:
    """Issue #45: a 100-entry list to every panel at each delta was 300 MB a second at 10,000 panels."""
    board = PresenceBoard(list_limit=lambda: 100)
    assert board.panel_every_s() == COALESCE_S * 100 / DELTA_ENTRIES
    panel = join(board, Conn(0, mode="webchat", client_id="openclaw-control-ui"))
    page = join(board, Conn(1))
    await asyncio.sleep(board.panel_every_s() + 0.05)
    panel.frames.clear()
    page.frames.clear()
    crowd = []
    for n in range(2, 12):  # one join every 60 ms: a delta each, a list every 250 ms
        crowd.append(join(board, Conn(n, mode="cli", client_id="cli")))
        await asyncio.sleep(COALESCE_S + 0.01)
    await asyncio.sleep(board.panel_every_s() + 0.05)
    assert len(page.frames) >= 8 and 1 <= len(panel.frames) <= 4, (len(page.frames), len(panel.frames))
    ids = {e["instanceId"] for e in panel.frames[-1]["payload"]["presence"]}
    assert {c.conn_id for c in crowd} <= ids  # the last list is the list as it is now
    assert panel.frames[-1]["stateVersion"] == page.frames[-1]["stateVersion"]
    for n in range(20_000):
        board.watch(Conn(n))  # type: ignore[arg-type]
    assert board.panel_every_s() == min(PANEL_MAX_S, COALESCE_MAX_S * 100 / DELTA_ENTRIES)
    board.close()


async def test_a_storm_goes_out_once_per_storm_window_and_one_arrival_after_it_at_once() -> None:
    """While a crowd arrives, a watcher gets one delta per ``STORM_S`` (each frame is written to every watcher);
    the first arrival after it is told within the ordinary window again."""
    board = PresenceBoard()
    watcher = join(board, Conn(0))
    await flushed(board)
    watcher.frames.clear()
    loop = asyncio.get_running_loop()
    started = loop.time()
    n = 1
    while loop.time() - started < STORM_S * 1.5:  # 30 joins every 0.1 s for 3 s
        for _ in range(30):
            join(board, Conn(n, mode="cli", client_id="cli"))
            n += 1
        await asyncio.sleep(0.1)
    await asyncio.sleep(STORM_S + 0.1)
    assert len(watcher.frames) == 2, [f["payload"]["presence"][0].get("host") for f in watcher.frames]
    versions = [f["stateVersion"]["presence"] for f in watcher.frames]
    assert versions == [versions[0], versions[0] + 1]  # no gap: nothing was dropped, only gathered
    watcher.frames.clear()
    late = join(board, Conn(n, mode="cli", client_id="cli"))
    await flushed(board)
    (frame,) = watcher.frames
    assert [e["instanceId"] for e in frame["payload"]["presence"]] == [late.conn_id]
