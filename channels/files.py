"""Which local files may leave the machine as attachments, read once by descriptor.

Any write-scope caller, including an agent a stranger talks to, can ask ``message.sendAttachment``
to send a path. So the path must be absolute and an ordinary file, and never one of the gateway's
own secrets: the state directory (token, database; only its ``outbound/`` folder of media the gateway made
to be shared may be sent), the config file, or the kernel's views of
processes and devices (``/proc/self/environ`` reads as a file and holds the gateway's environment).

The file is opened once and those checks are made on what was opened (the kernel's path of the descriptor), then
its bytes go to the channel: a check of the name followed by a read by name would let whoever can rename folders
on the way (an agent run in its workspace) swap the state dir in between. A file an agent run names arrives here
already read, from inside what the run sees (``gateway.sandbox.reach``), and is checked the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

from channels.base import ChannelError
from gateway.platforms import MAX_ATTACHMENT_BYTES, OUTBOUND, FileBytes, read_fd

__all__ = ["MAX_ATTACHMENT_BYTES", "check_outbound_file", "upload_of"]


def _refused(where: Path, *, state_dir: Path, config_path: Path) -> str | None:
    state = state_dir.resolve()
    shareable = state / OUTBOUND  # media the gateway made to be sent (voice notes, screenshots)
    if (where == state or state in where.parents) and shareable not in where.parents:
        return "refusing to send a file from the gateway's state directory"
    if where.parts[1:2] in (("proc",), ("sys",), ("dev",)) or where == config_path.resolve():
        return f"refusing to send {where}: it is a system or gateway file"
    return None


def _read(file: str) -> FileBytes:
    """``file`` opened once (no blocking on a FIFO, no controlling terminal) and read from its descriptor."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        return read_fd(fd, Path(file).name or "file", max_bytes=MAX_ATTACHMENT_BYTES)
    except FileNotFoundError:
        raise ChannelError(f"file not found: {file}", details={"field": "file"}) from None
    except IsADirectoryError:
        raise ChannelError(f"not a file: {file}", details={"field": "file"}) from None
    except OSError as exc:
        raise ChannelError(f"cannot read {file}: {exc.strerror}", details={"field": "file"}) from None


def check_outbound_file(file: str | FileBytes, *, state_dir: Path, config_path: Path) -> str | FileBytes:
    """What to send: a URL unchanged, else the file's bytes read once and checked on the descriptor that read
    them (blocking: run in a thread); raises ``ChannelError`` naming ``file``."""
    if isinstance(file, str):
        if file.startswith(("http://", "https://")):
            return file
        if not Path(file).expanduser().is_absolute():
            raise ChannelError(f"file must be an http(s) URL or an absolute path, got {file!r}",
                               details={"field": "file"})
        lexical = Path(os.path.abspath(Path(file).expanduser()))
        # Refused by name before anything is opened (a device may act on an open), and again below on what the
        # descriptor is, whatever was renamed in between.
        why = _refused(lexical, state_dir=state_dir, config_path=config_path) or \
            _refused(lexical.resolve(), state_dir=state_dir, config_path=config_path)
        if why:
            raise ChannelError(why, details={"field": "file"})
        file = _read(str(lexical))
    why = _refused(Path(file.where), state_dir=state_dir, config_path=config_path) if file.where else None
    if why:
        raise ChannelError(why, details={"field": "file"})
    return file


def upload_of(file: str | FileBytes) -> FileBytes:
    """The bytes a channel uploads: what the manager read, or (a channel used directly) the file at a local path,
    opened once (blocking: run in a thread)."""
    return file if isinstance(file, FileBytes) else _read(str(Path(file).expanduser()))
