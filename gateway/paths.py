"""Where the gateway keeps its state, and the gateway token that guards it."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["OUTBOUND", "config_path", "ensure_token", "logs_dir", "outbound_dir", "state_dir", "token_path"]


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
(voice notes, browser screenshots and PDFs). Nothing secret is ever written there."""


def outbound_dir(state: Path, kind: str) -> Path:
    """``<state>/outbound/<kind>``, created private; ``message.sendAttachment`` accepts files from it."""
    path = state / OUTBOUND / kind
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
    return token, True


def replica_id(state: Path) -> str:
    """This replica's lasting name (``<state dir>/replica-id``, made on first start).

    Session leases carry it (``gateway.runs.lease``), so a gateway restarted after a crash recognises the
    leases its dead process held and takes them back at once instead of waiting for them to expire. Each
    replica has its own state dir, so the name is its own too.
    """
    path = state / "replica-id"
    try:
        found = path.read_text().strip()
    except FileNotFoundError:
        found = ""
    if found:
        return found
    made = secrets.token_hex(6)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(made + "\n")
    os.replace(tmp, path)
    return made
