"""No confused deputy: a file an agent run names is read by the gateway only if the run could see it itself.

The gateway reads with its own rights (often root), so ``message_send_attachment {file: "/etc/shadow"}`` from a
stranger's run would send what the run's sandbox hides. A run's token names the folders it sees (its workspace,
and for the owner the projects shown to it); a path it gives is taken as the run sees it (relative to its
workspace) and must be inside one of them, or inside its own session's folders of media the gateway made to be
sent (``<state>/outbound/<kind>/<session>``: voice notes, browser screenshots, diffs; never another session's).

The file is then opened once, by descriptor, below that folder and through no symlink (``open_beneath``), and
its bytes go on: checking the path and reading it by name later would let the run swap a folder for a link to
the state dir in between. URLs are not files and pass.

A run whose turn is on a node (``Caller.run_node``) names the node's files: ``read_run_file`` has the node read
them, inside the turn's folder there (``gateway.agent_hosts.files``), and never resolves such a path on the
gateway's disk. The one exception is the media the gateway itself made for that run's session (its own
``outbound`` folder, above: a voice note its ``tts_convert`` made, a browser screenshot), which exist only here.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

from gateway.dispatch.callers import Caller
from gateway.paths import OUTBOUND, outbound_session
from gateway.protocol import InvalidRequest
from gateway.sandbox.open_beneath import FileBytes, LinkRefused, read_beneath

__all__ = ["NodeFileReader", "open_run_file", "read_run_file"]

NodeFileReader = Callable[[Caller, str, str, int], Awaitable[FileBytes]]
"""``(caller, file, field, max_bytes)``: a node run's file, read on its node (``AgentHosts.read_file``)."""


def _roots(caller: Caller, state_dir: Path, path: Path) -> list[tuple[Path, str]]:
    """``(folder, path below it)`` for each allowed folder ``path`` is lexically in, deepest first."""
    outbound = state_dir / OUTBOUND
    found: list[tuple[Path, str]] = []
    for root in {*(Path(r) for r in caller.reach or ()), *(Path(os.path.realpath(r)) for r in caller.reach or ())}:
        if path == root or root in path.parents:
            found.append((root, str(path.relative_to(root))))
    if caller.run_session:
        own = outbound_session(caller.run_session)
        for base in {outbound, Path(os.path.realpath(outbound))}:
            if base in path.parents:
                kind, *rest = path.relative_to(base).parts
                if rest and rest[0] == own:  # <kind>/<own session>/...: a folder of its own session's media
                    found.append((base / kind / own, "/".join(rest[1:])))
    return sorted(found, key=lambda f: -len(f[0].parts))


def open_run_file(caller: Caller, file: str, *, field: str, state_dir: Path, max_bytes: int) -> str | FileBytes:
    """``file`` for ``caller`` to have read: unchanged for a caller that is not an agent run and for URLs, else
    its bytes, read once from inside what the run sees (blocking: run in a thread); raises ``InvalidRequest``
    naming ``field``."""
    if caller.reach is None or file.startswith(("http://", "https://")):
        return file
    raw = file.removeprefix("file://")
    roots = [Path(r) for r in caller.reach]
    path = Path(raw).expanduser() if raw.startswith("~") else Path(raw)
    if not path.is_absolute():
        if not roots:
            raise InvalidRequest(f"{field}: give an absolute path", details={"field": field})
        path = roots[0] / path
    path = Path(os.path.normpath(path))
    where = _roots(caller, state_dir, path)
    if not where:
        folder = f"its working folder {roots[0]}" if roots else "its working folder"
        raise InvalidRequest(f"{field}: {file} is outside what this agent run can see; send a file from {folder} "
                             "(copy it there first)", details={"field": field})
    root, rel = where[0]
    try:
        return read_beneath(root, rel, max_bytes=max_bytes)
    except LinkRefused:
        raise InvalidRequest(f"{field}: {file} goes through a symbolic link; the gateway sends only a file itself "
                             "(copy it into the working folder)", details={"field": field}) from None
    except FileNotFoundError:
        raise InvalidRequest(f"{field}: file not found: {file}", details={"field": field}) from None
    except IsADirectoryError:
        raise InvalidRequest(f"{field}: {file} is not a file", details={"field": field}) from None
    except OSError as exc:
        why = exc.strerror if exc.errno != errno.EFBIG else f"it is {exc.strerror}"
        raise InvalidRequest(f"{field}: cannot read {file}: {why}", details={"field": field}) from None


def _gateway_media(caller: Caller, state_dir: Path, file: str) -> bool:
    """Whether ``file`` names, by an absolute path, media the gateway made for the caller's own session."""
    raw = file.removeprefix("file://")
    if not raw.startswith("/"):
        return False
    return bool(_roots(replace(caller, reach=()), state_dir, Path(os.path.normpath(raw))))


async def read_run_file(caller: Caller, file: str, *, field: str, state_dir: Path, max_bytes: int,
                        from_node: NodeFileReader | None) -> str | FileBytes:
    """``open_run_file`` for every caller, a run on a node too: a file that run names is read on its node
    (``from_node``), or, when it is media the gateway made for the run's session, here; raises ``InvalidRequest``
    naming ``field``."""
    if caller.run_node is None or file.startswith(("http://", "https://")) or _gateway_media(caller, state_dir,
                                                                                              file):
        return await asyncio.to_thread(open_run_file, caller, file, field=field, state_dir=state_dir,
                                       max_bytes=max_bytes)
    if from_node is None:
        raise InvalidRequest(f"{field}: this run's turn is on a node, and this gateway cannot reach nodes' files",
                             details={"field": field})
    return await from_node(caller, file, field, max_bytes)
