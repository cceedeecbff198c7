"""``CommandError``: how any node command (system, browser, canvas, desktop) refuses or fails.

Its own module so the command services (``browser/service.py``, ``desktop/service.py``, ``browser/canvas.py``)
raise it without importing ``commands.py``, which names them."""

from __future__ import annotations

__all__ = ["CommandError"]


class CommandError(Exception):
    """A refusal or failure to report as ``node.invoke.result {ok: false, error: {code, message}}``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
