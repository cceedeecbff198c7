"""Which local files may leave the machine as attachments.

Any write-scope caller, including an agent a stranger talks to, can ask ``message.sendAttachment``
to send a path. So the path must be absolute and an ordinary file, and never one of the gateway's
own secrets: the state directory (token, database; only its ``outbound/`` folder of media the gateway made
to be shared may be sent), the config file, or the kernel's views of
processes and devices (``/proc/self/environ`` reads as a file and holds the gateway's environment).
"""

from __future__ import annotations

from pathlib import Path

from channels.base import ChannelError
from gateway.platforms import OUTBOUND

__all__ = ["MAX_ATTACHMENT_BYTES", "check_outbound_file"]

MAX_ATTACHMENT_BYTES = 50 * 1024 * 1024
"""Adapters read the whole file into memory: a huge one must not take the gateway down."""


def check_outbound_file(file: str, *, state_dir: Path, config_path: Path) -> str:
    """The resolved path to send (URLs pass through unchanged); raises ``ChannelError`` naming ``file``."""
    if file.startswith(("http://", "https://")):
        return file
    path = Path(file).expanduser()
    if not path.is_absolute():
        raise ChannelError(f"file must be an http(s) URL or an absolute path, got {file!r}",
                           details={"field": "file"})
    path = path.resolve()
    state = state_dir.resolve()
    shareable = state / OUTBOUND  # media the gateway made to be sent (voice notes, screenshots)
    if (path == state or state in path.parents) and shareable not in path.parents:
        raise ChannelError("refusing to send a file from the gateway's state directory", details={"field": "file"})
    if path.parts[1:2] in (("proc",), ("sys",), ("dev",)) or path == config_path.resolve():
        raise ChannelError(f"refusing to send {path}: it is a system or gateway file", details={"field": "file"})
    if not path.is_file():
        raise ChannelError(f"file not found: {file}", details={"field": "file"})
    if path.stat().st_size > MAX_ATTACHMENT_BYTES:
        raise ChannelError(f"file is larger than {MAX_ATTACHMENT_BYTES // (1024 * 1024)} MB: {file}",
                           details={"field": "file"})
    return str(path)
