"""Downloaded chat media: kept in the state dir for the agent and the history, then pruned by age.

Telegram and Discord attachments are saved under ``<state dir>/media/<channel>/<account>/`` so a run
can copy them into its workspace. Left alone that folder only grows; the channels package (``channels.manager``) prunes
files older than ``channels.mediaMaxAgeDays`` at start and every few hours after.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from gateway.platforms import PlatformHost

__all__ = ["PRUNE_EVERY_S", "account_media_dir", "keep_pruned", "prune"]

log = structlog.get_logger("channels.media")

PRUNE_EVERY_S = 6 * 3600


def account_media_dir(state_dir: str | Path, channel: str, account_id: str) -> Path:
    return Path(state_dir) / "media" / channel / account_id


def prune(root: Path, max_age_s: float, *, now: float | None = None) -> int:
    """Delete files under ``root`` not modified for ``max_age_s``, then empty folders; returns files removed."""
    cutoff = (time.time() if now is None else now) - max_age_s
    removed = 0
    for dirpath, _dirs, files in os.walk(root, topdown=False):
        for name in files:
            path = Path(dirpath, name)
            with contextlib.suppress(FileNotFoundError):
                if path.lstat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
        if Path(dirpath) != root:
            with contextlib.suppress(OSError):  # not empty, or already gone
                Path(dirpath).rmdir()
    return removed


async def keep_pruned(gateway: PlatformHost) -> None:
    """Prune now and every ``PRUNE_EVERY_S``; the age limit is read live from the config."""
    root = Path(gateway.state_dir) / "media"
    while True:
        days = gateway.config.channels.mediaMaxAgeDays
        if days > 0 and root.is_dir():
            try:
                removed = await asyncio.to_thread(prune, root, days * 86400)
            except OSError as exc:
                log.warning("media pruning failed", error=str(exc))
            else:
                if removed:
                    log.info("old chat media removed", files=removed, max_age_days=days)
        await asyncio.sleep(PRUNE_EVERY_S)
