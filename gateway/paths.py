"""Where the gateway keeps its state, and the gateway token that guards it."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
from pathlib import Path

__all__ = ["NO_SESSION", "OUTBOUND", "clear_listen", "config_path", "ensure_token", "link_shown_path", "listen_path",
           "logs_dir", "outbound_dir", "outbound_session", "running_url", "state_dir", "token_path", "write_listen"]


def state_dir() -> Path:
    """``REMOTECLAW_STATE_DIR`` or ``~/.remoteclaw``; created on first use, private to the user."""
    path = Path(os.environ.get("REMOTECLAW_STATE_DIR") or Path.home() / ".remoteclaw").expanduser()
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def config_path() -> Path:
    override = os.environ.get("REMOTECLAW_CONFIG_PATH")
    return Path(override).expanduser() if override else state_dir() / "remoteclaw.json"


def logs_dir() -> Path:
    path = state_dir() / "logs"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


OUTBOUND = "outbound"
"""The one folder of the state dir whose files may be sent to chats: media the gateway made to be shared
(voice notes, browser screenshots and PDFs, desktop trajectories, turn diffs). Nothing secret is ever written
there. Each file is in a folder of the session it was made for (``outbound_dir``) under a name with random bits:
an agent run may send only its own session's (``gateway.sandbox.reach``)."""

NO_SESSION = "_gateway"
"""The folder of what the gateway made for nobody's session (the owner's own calls): no run may send it."""


def outbound_session(session_key: str | None) -> str:
    """The folder name of one session's outbound files (a hash: keys hold characters no folder name may)."""
    if not session_key:
        return NO_SESSION
    return hashlib.sha256(session_key.encode()).hexdigest()[:32]


def outbound_dir(state: Path, kind: str, session_key: str | None = None) -> Path:
    """``<state>/outbound/<kind>/<session>``, created private; a run may send the files of its own session's."""
    path = state / OUTBOUND / kind / outbound_session(session_key)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def token_path() -> Path:
    return state_dir() / "gateway.token"


def ensure_token() -> tuple[str, bool]:
    """Return the stored gateway token, creating it (mode 0600) on first start.

    Returns:
        The token and whether it was created just now.
    """
    path = token_path()
    if path.exists():
        token = path.read_text().strip()
        if token:
            return token, False
    token = secrets.token_urlsafe(32)
    # O_EXCL + 0600 from the start: the token is never world-readable, not even briefly.
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    os.replace(tmp, path)
    link_shown_path().unlink(missing_ok=True)  # a new token: its link has not been shown yet
    return token, True


def link_shown_path() -> Path:
    """Present once the start banner has printed the signed-in web chat link for the state dir's token."""
    return state_dir() / "gateway.token.link-shown"


_CLAIMED: dict[Path, tuple[int, str]] = {}
"""The replica-id file this process holds locked per state dir (for its whole life: a restart in place keeps it)."""


def replica_id(state: Path) -> str:
    """This replica's lasting name (``<state dir>/replica-id``, made on first start).

    Session leases carry it (``gateway.runs.lease``), so a gateway restarted after a crash recognises the
    leases its dead process held and takes them back at once instead of waiting for them to expire. The name is
    claimed with a lock held while the process lives: processes that share one state dir (``docker compose up
    --scale gateway=3`` on one volume) each take a free one (``replica-id``, ``replica-id.1``, ...), never the same.
    """
    held = _CLAIMED.get(state.resolve())
    if held is not None:
        return held[1]
    for slot in range(64):
        path = state / ("replica-id" if slot == 0 else f"replica-id.{slot}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # a live process of this state dir holds it
            continue
        found = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        if not found:
            found = secrets.token_hex(6)
            os.pwrite(fd, (found + "\n").encode(), 0)
            os.fsync(fd)
        _CLAIMED[state.resolve()] = (fd, found)
        return found
    raise RuntimeError(f"64 gateway processes already run with the state dir {state}")


def listen_path(state: Path | None = None) -> Path:
    """Where a running gateway says where it listens (``gateway.listen.json``), so client commands find it."""
    return (state or state_dir()) / "gateway.listen.json"


def write_listen(host: str, port: int) -> None:
    """Record this process's address in the state dir (replaced atomically; removed by ``clear_listen``)."""
    connect_host = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    shown = f"[{connect_host}]" if ":" in connect_host else connect_host
    path = listen_path()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"url": f"ws://{shown}:{port}/", "host": host, "port": port, "pid": os.getpid()}))
    os.replace(tmp, path)


def clear_listen() -> None:
    """Forget the address on exit, unless another gateway on this state dir has written its own since."""
    path = listen_path()
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def running_url(state: Path) -> str | None:
    """The URL of the gateway running on ``state``, when its address file names a live process."""
    try:
        found = json.loads(listen_path(state).read_text())
        pid, url = int(found["pid"]), str(found["url"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # a gateway that died without cleaning up (kill -9)
    except PermissionError:
        pass  # alive, owned by another user
    return url
