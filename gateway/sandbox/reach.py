"""No confused deputy: a file an agent run names is read by the gateway only if the run could see it itself.

The gateway reads with its own rights (often root), so ``message_send_attachment {file: "/etc/shadow"}`` from a
stranger's run would send what the run's sandbox hides. A run's token names the folders it sees (its workspace,
and for the owner the projects shown to it); a path it gives is resolved as the run sees it (relative to its
workspace, symlinks followed) and must land in one of them, or in the gateway's folder of media it made to be
sent (``<state>/outbound``: voice notes, browser screenshots, diffs). URLs are not files and pass.
"""

from __future__ import annotations

import os
from pathlib import Path

from gateway.dispatch.callers import Caller
from gateway.protocol import InvalidRequest

__all__ = ["run_file"]


def run_file(caller: Caller, file: str, *, field: str, shareable: Path) -> str:
    """``file`` as the gateway may read it for ``caller``: unchanged for a caller that is not an agent run and
    for URLs, else the resolved path inside what the run sees; raises ``InvalidRequest`` naming ``field``."""
    if caller.reach is None or file.startswith(("http://", "https://")):
        return file
    raw = file.removeprefix("file://")
    roots = [Path(r) for r in caller.reach]
    path = Path(raw).expanduser() if raw.startswith("~") else Path(raw)
    if not path.is_absolute():
        if not roots:
            raise InvalidRequest(f"{field}: give an absolute path", details={"field": field})
        path = roots[0] / path
    real = Path(os.path.realpath(path))
    allowed = [Path(os.path.realpath(r)) for r in (*roots, shareable)]
    if not any(real == r or r in real.parents for r in allowed):
        where = f"its working folder {roots[0]}" if roots else "its working folder"
        raise InvalidRequest(f"{field}: {file} is outside what this agent run can see; send a file from {where} "
                             "(copy it there first)", details={"field": field})
    return str(real)
