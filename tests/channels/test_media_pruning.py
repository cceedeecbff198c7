"""Downloaded chat media is pruned by age, at gateway start and later, so the state dir cannot only grow."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from channels.media import prune
from tests.support.gateway_proc import GatewayProcess

DAY = 86400


def aged(path: Path, days: float, data: bytes = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    stamp = time.time() - days * DAY
    os.utime(path, (stamp, stamp))
    return path


def test_prune_removes_old_files_and_empty_folders(tmp_path: Path) -> None:
    root = tmp_path / "media"
    old = aged(root / "telegram" / "default" / "old.oga", 40)
    fresh = aged(root / "telegram" / "default" / "fresh.jpg", 1)
    lonely = aged(root / "discord" / "bot2" / "ancient.png", 400)
    assert prune(root, 30 * DAY) == 2
    assert not old.exists() and not lonely.exists() and fresh.exists()
    assert not (root / "discord").exists()  # emptied folders go too; the root stays
    assert root.is_dir() and prune(root, 30 * DAY) == 0


async def test_the_gateway_prunes_at_start(tmp_path: Path) -> None:
    state = tmp_path / "gw"
    old = aged(state / "media" / "telegram" / "default" / "old.oga", 10)
    kept = aged(state / "media" / "telegram" / "default" / "recent.oga", 0.5)
    with GatewayProcess(state, config={"channels": {"mediaMaxAgeDays": 7}}):
        for _ in range(100):
            if not old.exists():
                break
            await asyncio.sleep(0.05)
        assert not old.exists() and kept.exists()
    # 0 keeps everything.
    older = aged(state / "media" / "discord" / "default" / "older.png", 3000)
    with GatewayProcess(state, config={"channels": {"mediaMaxAgeDays": 0}}):
        await asyncio.sleep(0.5)
        assert older.exists()
