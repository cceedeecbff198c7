"""Browser tool (1, owner only): proxy a request to the browser control API of a node.

Screenshots, PDFs and downloads come back as MCP content a client anywhere can use (the shim on the gateway's
machine and a remote client of ``/mcp`` share this code): the answer as JSON text first, then per file an
image (``image/*``), an embedded resource (other files up to ``EMBED_BYTES``) or a resource link to the
gateway URL the client fetches with its own bearer token (larger files).
"""

from __future__ import annotations

from mcp_shim.schema import any_value, free_object, integer, obj, string
from mcp_shim.tools._base import Call, Content, Tool, compact, group

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

EMBED_BYTES = 1024 * 1024
"""Files up to this size travel inside the result; larger ones as a link (the client fetches them itself)."""
_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp")

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
    answer = await call.gateway("browser.request", params, timeout=wait)
    files = answer.get("files") if isinstance(answer, dict) else None
    if not isinstance(files, list) or not files:
        return answer
    import json  # only for answers with files

    blocks: list[dict[str, Any]] = [{"type": "text", "text": json.dumps(answer, indent=2, ensure_ascii=False)}]
    for entry in files:
        if isinstance(entry, dict):
            blocks.append(await _file_block(call, entry))
    return Content(blocks)


async def _file_block(call: Call, entry: dict[str, Any]) -> dict[str, Any]:
    """One saved file as MCP content: an image, an embedded resource, or a link to fetch it with a token."""
    mime, size, url = str(entry.get("mimeType") or ""), entry.get("size") or 0, str(entry.get("url") or "")
    if mime in _IMAGES or (isinstance(size, int) and size <= EMBED_BYTES):
        got = await call.gateway("browser.file", {"name": entry["name"]})
        if mime in _IMAGES:
            return {"type": "image", "data": got["base64"], "mimeType": mime}
        return {"type": "resource", "resource": {"uri": url, "mimeType": mime, "blob": got["base64"]}}
    return {"type": "resource_link", "uri": url, "name": str(entry.get("name")), "mimeType": mime, "size": size,
            "description": "fetch it with your bearer token (Authorization: Bearer ...)"}
