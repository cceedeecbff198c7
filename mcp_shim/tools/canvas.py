"""Canvas tools (7, owner only): drive the canvas panel of a node through ``node.invoke``."""

from __future__ import annotations

import math

from mcp_shim.schema import integer, number, obj, string
from mcp_shim.tools._base import Call, Content, Tool, ToolError, compact, group
from mcp_shim.tools.nodes import NODE_ID, invoke

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

TOOLS: list[Tool] = []
tool = group("canvas", TOOLS)

_MIME = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg"}
_PLACE = {"x": (0, 10_000), "y": (0, 10_000), "width": (1, 4096), "height": (1, 4096)}
"""The node's ranges (``nodes/browser/canvas.py`` PLACEMENT_RANGES, checked equal by a test): a placement the
node would refuse is refused here, naming the field, before anything is sent."""


@tool("canvas_present", "Show the canvas", "Show the canvas on a node, optionally loading a URL at a placement.",
      obj({"nodeId": NODE_ID, "url": string("URL to load"),
           "x": number("Left edge of the canvas window, in pixels", minimum=_PLACE["x"][0], maximum=_PLACE["x"][1]),
           "y": number("Top edge of the canvas window, in pixels", minimum=_PLACE["y"][0], maximum=_PLACE["y"][1]),
           "width": number("Width of the canvas, in pixels", minimum=_PLACE["width"][0], maximum=_PLACE["width"][1]),
           "height": number("Height of the canvas, in pixels", minimum=_PLACE["height"][0],
                            maximum=_PLACE["height"][1])},
          ("nodeId",)),
      idempotent=True, open_world=True)
async def canvas_present(call: Call, a: dict[str, Any]) -> Any:
    # Placement only when the model gave at least one real number (as the reference does).
    placement = {k: a[k] for k in ("x", "y", "width", "height")
                 if isinstance(a.get(k), int | float) and math.isfinite(a[k])}
    params = compact(url=a.get("url"), placement=placement or None)
    return await invoke(call, a["nodeId"], "canvas.present", params)


@tool("canvas_hide", "Hide the canvas", "Hide the canvas on a node.", obj({"nodeId": NODE_ID}, ("nodeId",)),
      idempotent=True)
async def canvas_hide(call: Call, a: dict[str, Any]) -> Any:
    return await invoke(call, a["nodeId"], "canvas.hide")


@tool("canvas_navigate", "Navigate the canvas", "Load a URL in a node's canvas.",
      obj({"nodeId": NODE_ID, "url": string("URL to load")}, ("nodeId", "url")),
      idempotent=True, open_world=True)
async def canvas_navigate(call: Call, a: dict[str, Any]) -> Any:
    return await invoke(call, a["nodeId"], "canvas.navigate", {"url": a["url"]})


@tool("canvas_eval", "Run JavaScript in the canvas",
      "Evaluate JavaScript in a node's canvas page and return the value.",
      obj({"nodeId": NODE_ID, "javaScript": string("The code to evaluate")}, ("nodeId", "javaScript")),
      destructive=True, open_world=True)
async def canvas_eval(call: Call, a: dict[str, Any]) -> Any:
    return await invoke(call, a["nodeId"], "canvas.eval", {"javaScript": a["javaScript"]})


def _image(result: Any) -> tuple[str, str] | None:
    """Find ``{format, base64}`` in a node's answer (bare or under payload/result)."""
    for candidate in (result, *(result.get(k) for k in ("payload", "result") if isinstance(result, dict))):
        if isinstance(candidate, dict) and isinstance(candidate.get("base64"), str):
            return str(candidate.get("format") or "png").lower(), candidate["base64"]
    return None


@tool("canvas_snapshot", "Snapshot the canvas",
      "Take a picture of a node's canvas: the image, then whether the canvas is shown and where (its placement).",
      obj({"nodeId": NODE_ID, "format": string("Image format", enum=("png", "jpg", "jpeg")),
           "maxWidth": integer("Largest width in pixels", minimum=1, maximum=10_000),
           "quality": number("JPEG quality, 0 to 1 (or 1 to 100)", minimum=0, maximum=100)},
          ("nodeId",)),
      read_only=True)
async def canvas_snapshot(call: Call, a: dict[str, Any]) -> Any:
    result = await invoke(call, a["nodeId"], "canvas.snapshot",
                          compact(format=a.get("format"), maxWidth=a.get("maxWidth"), quality=a.get("quality")))
    found = _image(result)
    if found is None:
        raise ToolError("the node answered without an image (no base64 field)")
    fmt, data = found
    blocks: list[dict[str, Any]] = [{"type": "image", "data": data, "mimeType": _MIME.get(fmt, "image/png")}]
    state = result.get("payload") if isinstance(result, dict) and isinstance(result.get("payload"), dict) else result
    if isinstance(state, dict) and "visible" in state:
        import json

        where = {k: state[k] for k in ("visible", "placement", "width", "height") if k in state}
        blocks.append({"type": "text", "text": json.dumps(where)})
    return Content(blocks)


@tool("canvas_a2ui_push", "Push A2UI content", "Push A2UI JSONL to a node's canvas renderer.",
      obj({"nodeId": NODE_ID, "jsonl": string("A2UI messages, one JSON object per line")}, ("nodeId", "jsonl")))
async def canvas_a2ui_push(call: Call, a: dict[str, Any]) -> Any:
    # The session rides along so a button pressed on this UI comes back to the agent that drew it.
    params = compact(jsonl=a["jsonl"], sessionKey=call.ctx.session_key or None)
    return await invoke(call, a["nodeId"], "canvas.a2ui.pushJSONL", params)


@tool("canvas_a2ui_reset", "Reset A2UI", "Clear the A2UI renderer state on a node.",
      obj({"nodeId": NODE_ID}, ("nodeId",)), destructive=True, idempotent=True)
async def canvas_a2ui_reset(call: Call, a: dict[str, Any]) -> Any:
    return await invoke(call, a["nodeId"], "canvas.a2ui.reset")
