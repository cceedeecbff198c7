"""Files a browser node sends back (screenshots, PDFs, downloads), kept on the gateway's side.

The node's answer names each file by its path on the node and carries its bytes (``files: [{path,
base64, mimeType}]``, the envelope OpenClaw's node host uses). They are written under
``<state dir>/outbound/browser/`` and the answer's paths rewritten to those copies, so an agent on the
gateway's machine can open them and ``message_send_attachment`` can send them. Every path in the answer
must come with its file and every file must be named in the answer: anything else is a malformed
envelope, refused whole.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import re
import secrets
import time
from pathlib import Path, PurePath
from typing import Any

from gateway.paths import outbound_dir

__all__ = ["FileEnvelopeError", "persist", "persist_files"]

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024
MAX_FILES = 256
KEEP_FILES = 200


class FileEnvelopeError(ValueError):
    pass


def _named_paths(result: Any) -> list[tuple[dict[str, Any], str]]:
    """(owner, key) of every file path in a route's answer: path, imagePath, download.path, downloads[].path."""
    if not isinstance(result, dict):
        return []
    spots: list[tuple[dict[str, Any], str]] = [(result, k) for k in ("path", "imagePath")
                                               if isinstance(result.get(k), str) and result[k].strip()]
    download = result.get("download")
    if isinstance(download, dict) and isinstance(download.get("path"), str):
        spots.append((download, "path"))
    for entry in result.get("downloads") or [] if isinstance(result.get("downloads"), list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            spots.append((entry, "path"))
    return spots


def _folder(state: Path, session_key: str | None) -> Path:
    folder = outbound_dir(state, "browser", session_key)
    kept = sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime)
    for stale in kept[:-KEEP_FILES]:
        stale.unlink(missing_ok=True)
    return folder


def persist(result: Any, files: Any, state: Path, session_key: str | None = None) -> Any:
    """Write the files of a proxied answer and point the answer at them (blocking: run in a thread)."""
    return persist_files(result, files, state, session_key)[0]


def persist_files(result: Any, files: Any, state: Path, session_key: str | None = None) -> tuple[Any, list[str]]:
    """``persist``, also returning the paths of the files written (in the order the answer names them), in
    ``session_key``'s outbound folder (an agent run's: the one it may send from)."""
    spots = _named_paths(result)
    if files is None and not spots:
        return result, []
    if not isinstance(files, list) or len(files) > MAX_FILES:
        raise FileEnvelopeError("the browser node returned a malformed file list")
    by_path: dict[str, bytes] = {}
    total = 0
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str) \
                or not isinstance(entry.get("base64"), str):
            raise FileEnvelopeError("the browser node returned a file without path or base64")
        try:
            data = base64.b64decode(entry["base64"], validate=True)
        except (binascii.Error, ValueError):
            raise FileEnvelopeError(f"the browser node sent malformed base64 for {entry['path']}") from None
        total += len(data)
        if len(data) > MAX_FILE_BYTES or total > MAX_TOTAL_BYTES:
            raise FileEnvelopeError("the browser node sent more than the 10 MiB per file / 16 MiB in all")
        by_path[entry["path"]] = data
    if {path for owner, key in spots for path in [owner[key]]} != set(by_path):
        raise FileEnvelopeError("the browser node's files do not match the paths in its answer")
    folder = _folder(state, session_key)
    saved: dict[str, str] = {}
    for path, data in by_path.items():
        name = re.sub(r"[^\w.\-]", "_", PurePath(path.replace("\\", "/")).name)[-80:] or "file"
        if "." not in name:
            name += mimetypes.guess_extension("application/octet-stream") or ".bin"
        target = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(8)}-{name}"
        target.write_bytes(data)
        target.chmod(0o600)
        saved[path] = str(target)
    for owner, key in spots:
        owner[key] = saved[owner[key]]
    return result, list(saved.values())
