"""Browser tool (1, owner only): proxy a request to the browser control API of a node."""

from __future__ import annotations

from mcp_shim.schema import any_value, free_object, integer, obj, string
from mcp_shim.tools._base import Call, Tool, compact, group

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

TOOLS: list[Tool] = []
tool = group("browser", TOOLS)


@tool("browser_request", "Browser request",
      "Drive a node's browser: tabs, navigate, snapshot (element refs), act (click/type/...), find, screenshot.",
      obj({"method": string("HTTP method", enum=("GET", "POST", "DELETE")),
           "path": string("Route: /tabs, /tabs/open, /navigate, /snapshot, /act, /find, /text, /screenshot, /pdf..."),
           "query": free_object("Query parameters"),
           "body": any_value("Request body (JSON)"),
           "timeoutMs": integer("How long to wait, in milliseconds", minimum=1, maximum=600_000),
           "node": string("Which browser node (id, prefix or name); default: the only one connected")},
          ("method", "path")),
      destructive=True, open_world=True)
async def browser_request(call: Call, a: dict[str, Any]) -> Any:
    wait = max(30.0, a.get("timeoutMs", 0) / 1000 + 5)
    params = compact(method=a["method"], path=a["path"], query=a.get("query"), body=a.get("body"),
                     timeoutMs=a.get("timeoutMs"), node=a.get("node"))
    return await call.gateway("browser.request", params, timeout=wait)
