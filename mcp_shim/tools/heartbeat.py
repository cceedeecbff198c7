"""``heartbeat_report`` (1): a heartbeat run says whether it did anything worth telling."""

from __future__ import annotations

from mcp_shim.schema import boolean, obj, string
from mcp_shim.tools._base import Call, Tool, compact, group

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

TOOLS: list[Tool] = []
tool = group("heartbeat", TOOLS)


@tool("heartbeat_report", "Report heartbeat outcome",
      "At the end of a heartbeat run, report whether anything was done, with a short summary.",
      obj({"anything_done": boolean("True if this run did or found something worth telling the user"),
           "summary": string("One or two sentences on what was done", min_length=0)},
          ("anything_done",)))
async def heartbeat_report(call: Call, a: dict[str, Any]) -> Any:
    # The record comes first: the executor reads it from the file, the gateway call only tells operators.
    call.side_effects.heartbeat_report(a["anything_done"], a.get("summary"))
    return await call.gateway("heartbeat.report", compact(anythingDone=a["anything_done"], summary=a.get("summary"),
                                                           sessionKey=call.ctx.session_key))
