"""A CI-sized soak (issue #34): ``bench/soak.py`` for one minute with 100 clients on a real gateway.

Everything at once for ~60 s: 100 WebSocket clients reading every event, a probe broadcast every second,
20 stand-in agent runs in waves, a cron job every 3 s, a paired node host invoked every 2 s. Nothing may
be lost (every client gets every probe, every run ends ok, every firing is in ``cron.runs``), no error
answer may come back, and the gateway's memory may not keep growing. About 90 s on a 2-core machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak import parse_args, problems, soak_remoteclaw

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


async def test_one_minute_soak_loses_nothing(tmp_path: Path) -> None:
    args = parse_args(["--quick", "--minutes", "1", "--sample", "10"])
    result = await soak_remoteclaw(args, tmp_path)
    assert problems(result) == [], result

    assert result["connected"] == 100
    assert result["probes_sent"] >= 50
    assert result["probe_frames_missed"] == 0 and result["probes_delivered_short"] == 0
    assert result["runs_ok"] == 20
    assert result["node_invokes"] >= 20 and not result["node_errors"]
    assert result["error_frames"] == 0 and not result["log_errors"]
    assert result["cron_recorded"] >= 15 and result["cron_finished"] == result["cron_recorded"]
    assert result["cron_late_p99_ms"] < 5_000
    # Generous: a leak of the kind OpenClaw's users report (hundreds of MB an hour) shows within a minute.
    samples = [mb for _, mb in result["rss_samples_mb"]]
    assert max(samples[len(samples) // 3:]) < 1.5 * min(samples[len(samples) // 3:]), samples
