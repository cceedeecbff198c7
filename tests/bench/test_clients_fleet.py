"""``bench/clients_fleet.py`` at a small size: its worker processes really connect, every client's ``health`` is
answered, and a page that joins is seen in presence by every watching client (and by no CLI client); with the
lean client (``bench/lean_ws.py``) and with the websockets library's."""

from __future__ import annotations

from pathlib import Path

from bench.clients_fleet import measure


async def test_a_small_fleet_in_two_processes_is_all_connected_answered_and_told(tmp_path: Path) -> None:
    watching = await measure(30, "watching", tmp_path, procs=2)
    assert (watching["connected"], watching["refused"], watching["health_answered"]) == (30, 0, 30), watching
    assert watching["presence_missing"] == 0 and watching["presence_to_all_s"] is not None, watching
    assert watching["received_mb"] > 0  # the presence deltas of the crowd's own joins
    reading = await measure(30, "reading", tmp_path, procs=2, lean=False)
    assert (reading["connected"], reading["health_answered"], reading["presence_to_all_s"]) == (30, 30, None)
    assert reading["health_burst_s"] > 0 and reading["health_loadgen_cpu_s"] > 0, reading  # the burst's accounts
    assert (watching["load_client"], reading["load_client"]) == ("lean", "websockets")
