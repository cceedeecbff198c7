"""A turn's files on this node: the message's attachments written into its folder, and a file its agent sends back
read from there (``agent.file``).

The gateway sends the attachments with ``agent.run`` (``{name, base64}``); they are written where a local turn
has them (``attachments/`` in a private folder, ``.remoteclaw/attachments/`` in a lent one), each name passed
through ``safe_name``, by descriptor below the turn's folder and through no symlink (``open_beneath``): a lent
folder is the owner's code, and a run before may have planted a link there. A file the agent names for the
gateway to send is read once, the same way, only inside the turn's folder and at most the size the gateway asked
for: the gateway never reads a node run's path on its own disk, and this node serves nothing outside that folder.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import os
from pathlib import Path
from typing import Any

from gateway.agents.workspace import ATTACHMENTS_DIR, own_folder, safe_name
from gateway.projects.workdir import PRIVATE_DIR
from gateway.sandbox.open_beneath import MAX_READ_BYTES, LinkRefused, read_beneath, remove_tree_beneath, write_beneath
from nodes.errors import CommandError

__all__ = ["MAX_ATTACHMENTS_BYTES", "attachments_of", "drop_attachments", "place_attachments", "read_turn_file"]

MAX_ATTACHMENTS_BYTES = 200 * 1024 * 1024
"""What one turn's attachments may be in all on this node, whatever the gateway sends (its own limit,
``nodes.agentFilesMaxBytes``, is the one people meet)."""


def attachments_of(params: dict[str, Any]) -> list[tuple[str, bytes]]:
    """``agent.run``'s ``attachments``: ``(safe name, bytes)`` each, checked."""
    items = params.get("attachments") or []
    if not isinstance(items, list):
        raise CommandError("INVALID_REQUEST", "agent.run: attachments must be a list of {name, base64}")
    out: list[tuple[str, bytes]] = []
    total = 0
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(
                item.get("base64"), str):
            raise CommandError("INVALID_REQUEST", f"agent.run: attachments[{i}] must be {{name, base64}}")
        try:
            data = base64.b64decode(item["base64"], validate=True)
        except (binascii.Error, ValueError):
            raise CommandError("INVALID_REQUEST", f"agent.run: attachments[{i}].base64 is not base64") from None
        total += len(data)
        if total > MAX_ATTACHMENTS_BYTES:
            raise CommandError("INVALID_REQUEST", "agent.run: the attachments are more than this node takes for "
                                                  f"one turn ({MAX_ATTACHMENTS_BYTES // (1024 * 1024)} MB)")
        out.append((safe_name(item["name"]), data))
    return out


def _dest(private: bool) -> str:
    return ATTACHMENTS_DIR if private else f"{PRIVATE_DIR}/{ATTACHMENTS_DIR}"


def place_attachments(cwd: Path, private: bool, items: list[tuple[str, bytes]]) -> None:
    """Write the turn's attachments in its folder, as a local turn has them (0600, no link followed)."""
    if not items:
        return
    try:
        if not private:  # the lent folder's .remoteclaw/: a folder of ours, never a link a run left there
            own_folder(cwd, PRIVATE_DIR)
        dest = _dest(private)
        for name, data in items:
            write_beneath(cwd, f"{dest}/{name}", data, mode=0o600)
    except (RuntimeError, LinkRefused) as exc:
        raise CommandError("FORBIDDEN", f"agent.run: the attachments cannot be written in {cwd}: {exc}") from None
    except OSError as exc:
        raise CommandError("UNAVAILABLE", f"agent.run: the attachments could not be written in {cwd}: "
                                          f"{exc.strerror or exc}") from None


def drop_attachments(cwd: Path) -> None:
    """A lent folder's ``.remoteclaw/attachments`` gone after the turn, through no link (a private folder goes
    whole)."""
    with contextlib.suppress(OSError):
        remove_tree_beneath(cwd, _dest(False))


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.3g} MB" if n >= 1024 * 1024 else f"{n / 1024:.3g} KB"


def read_turn_file(cwd: Path, path: str, max_bytes: int) -> dict[str, Any]:
    """``path`` (relative to the turn's folder, or absolute inside it) read once below that folder, through no
    link, at most ``max_bytes``: ``{name, size, base64}``."""
    raw = path.removeprefix("file://")
    if not raw or "\0" in raw or raw.startswith("~"):
        raise CommandError("FORBIDDEN", f"agent.file: {path} is outside the turn's folder {cwd} on this node; send "
                                        "a file from that folder (copy it there first)")
    limit = min(max_bytes, MAX_READ_BYTES)
    wanted = Path(os.path.normpath(Path(raw) if Path(raw).is_absolute() else cwd / raw))
    found = next(((root, wanted.relative_to(root)) for root in dict.fromkeys((cwd, Path(os.path.realpath(cwd))))
                  if wanted == root or root in wanted.parents), None)
    if found is None:
        raise CommandError("FORBIDDEN", f"agent.file: {path} is outside the turn's folder {cwd} on this node; send "
                                        "a file from that folder (copy it there first)")
    root, rel = found
    try:
        got = read_beneath(root, str(rel), max_bytes=limit)
    except LinkRefused:
        raise CommandError("INVALID_REQUEST", f"agent.file: {path} goes through a symbolic link; only a file itself "
                                              "is sent (copy it into the turn's folder)") from None
    except FileNotFoundError:
        raise CommandError("INVALID_REQUEST", f"agent.file: file not found on this node: {path}") from None
    except IsADirectoryError:
        raise CommandError("INVALID_REQUEST", f"agent.file: {path} is not a file") from None
    except OSError as exc:
        why = f"it is larger than {_size(limit)}" if exc.errno == errno.EFBIG else exc.strerror or str(exc)
        raise CommandError("INVALID_REQUEST", f"agent.file: cannot read {path}: {why}") from None
    return {"name": got.name, "size": len(got.data), "base64": base64.b64encode(got.data).decode()}
