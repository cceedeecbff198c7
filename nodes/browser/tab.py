"""One open page and what the control server keeps of it (console, errors, requests, dialogs, snapshots).

Its own module so the actions (``actions.py``) and the server that routes to them (``control.py``) can both
name a tab without importing each other."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.async_api import Page

__all__ = ["LOG_SIZE", "RouteError", "Tab"]

LOG_SIZE = 200


class RouteError(Exception):
    """An HTTP-style refusal: ``status`` and a message naming the field at fault."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code

    def body(self) -> dict[str, Any]:
        return {"error": self.message, **({"code": self.code} if self.code else {})}


@dataclass(slots=True)
class Tab:
    target_id: str
    page: Page
    console: collections.deque[dict[str, Any]] = field(default_factory=lambda: collections.deque(maxlen=LOG_SIZE))
    errors: collections.deque[dict[str, Any]] = field(default_factory=lambda: collections.deque(maxlen=LOG_SIZE))
    requests: collections.deque[dict[str, Any]] = field(default_factory=lambda: collections.deque(maxlen=LOG_SIZE))
    dialogs: collections.deque[dict[str, Any]] = field(default_factory=lambda: collections.deque(maxlen=LOG_SIZE))
    snapshots: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {"targetId": self.target_id, "url": self.page.url, "type": "page"}
