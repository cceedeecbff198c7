"""``browser.request``: proxy an HTTP-style request to a browser-capable node.

The node-side browser is later work; the method is declared now so callers get a validated
request and a clear ``UNAVAILABLE`` answer.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from gateway.protocol import Unavailable
from gateway.rpc import WRITE, CallContext, Params, method

MISSING = "the browser is not available on this gateway yet (no browser-capable node)"


class BrowserRequestParams(Params):
    method: Literal["GET", "POST", "DELETE"]
    path: str = Field(min_length=1, max_length=2000)
    query: dict[str, Any] | None = None
    body: Any = None
    timeoutMs: int | None = Field(None, ge=1, le=600_000)


@method("browser.request", params=BrowserRequestParams, scope=WRITE, aliases=("browser:request",))
async def browser_request(_p: BrowserRequestParams, _ctx: CallContext) -> dict[str, Any]:
    """Send one request to the browser control API of a node."""
    raise Unavailable(MISSING, details={"capability": "browser"})
