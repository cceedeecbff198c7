"""Trajectories on the node: Cua Driver's recording folder zipped for the gateway, and a zip unpacked for a replay.

A recording is what ``start_recording`` writes: ``turn-00001/`` … with ``action.json`` (tool, arguments,
result), ``screenshot.png`` and the accessibility state before and after, ``session.json``, and
``recording.mp4`` when video was on. It travels to the gateway in one ``node.invoke`` answer, so it is capped
(``MAX_ZIP_BYTES``, under the gateway's 25 MiB frame once in base64); a video that does not fit is left out
and the answer says so. For a replay on a fresh instance of the app the recorded ``pid`` and ``window_id``
are rewritten to the new ones (Cua Driver replays the recorded arguments as they are).
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["MAX_ZIP_BYTES", "ZipTooLarge", "prune", "retarget", "unzip_safely", "zip_recording"]

MAX_ZIP_BYTES = 16 * 1024 * 1024
MAX_UNPACKED_BYTES = 512 * 1024 * 1024
KEEP_RECORDINGS = 20
VIDEO = "recording.mp4"


class ZipTooLarge(ValueError):
    """The recording does not fit one answer even without its video."""


def _zip(folder: Path, *, skip_video: bool) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not (skip_video and path.name == VIDEO):
                # PNG and MP4 are compressed already: storing them is as small and much faster.
                kind = zipfile.ZIP_STORED if path.suffix in (".png", ".mp4", ".jpg") else zipfile.ZIP_DEFLATED
                zf.write(path, path.relative_to(folder).as_posix(), compress_type=kind)
    return buf.getvalue()


def zip_recording(folder: Path) -> tuple[bytes, list[str]]:
    """The folder as a zip, and notes about what was left out."""
    data = _zip(folder, skip_video=False)
    if len(data) <= MAX_ZIP_BYTES:
        return data, []
    data = _zip(folder, skip_video=True)
    if len(data) > MAX_ZIP_BYTES:
        raise ZipTooLarge(f"the recording is {len(data)} bytes zipped, over the {MAX_ZIP_BYTES} a node may send "
                          f"at once; it stays on the node in {folder}")
    return data, [f"{VIDEO} was left out: with it the recording is over {MAX_ZIP_BYTES} bytes (it stays on the "
                  f"node in {folder})"]


def turns(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("turn-*") if p.is_dir())


def unzip_safely(data: bytes, into: Path) -> None:
    """Unpack a trajectory zip into ``into``, refusing paths that leave it and archives that unpack too large."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        total = 0
        for info in zf.infolist():
            total += info.file_size
            target = (into / info.filename).resolve()
            if not target.is_relative_to(into.resolve()) or info.filename.startswith("/"):
                raise ValueError(f"the trajectory zip holds a path outside its folder: {info.filename}")
        if total > MAX_UNPACKED_BYTES:
            raise ValueError(f"the trajectory unpacks to {total} bytes, over {MAX_UNPACKED_BYTES}")
        zf.extractall(into)


def retarget(folder: Path, pid: int | None, window_id: int | None) -> int:
    """Point every turn's recorded ``pid``/``window_id`` at a new instance of the app; returns turns changed."""
    if pid is None and window_id is None:
        return 0
    changed = 0
    for action in sorted(folder.glob("turn-*/action.json")):
        data: dict[str, Any] = json.loads(action.read_text())
        args = data.get("arguments")
        if not isinstance(args, dict):
            continue
        if pid is not None and "pid" in args:
            args["pid"] = pid
        if window_id is not None and "window_id" in args:
            args["window_id"] = window_id
        action.write_text(json.dumps(data, indent=2))
        changed += 1
    return changed


def prune(root: Path, keep: int = KEEP_RECORDINGS) -> None:
    """Keep the newest ``keep`` recordings on the node (the gateway holds its own copies)."""
    folders = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in folders[keep:]:
        shutil.rmtree(old, ignore_errors=True)
